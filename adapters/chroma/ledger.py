"""The Ledger in Chroma: the `<collection>.ledger` collection, one record per key (embedded or a server)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar, cast

from attrs import define
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.errors import UniqueConstraintError
from returns.result import Result, Success

from agent_memory.adapters.chroma import layout
from agent_memory.adapters.chroma.boundary import Boundary
from agent_memory.adapters.chroma.clients import server_client
from agent_memory.adapters.chroma.session import Session
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.ledger import Field, LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode

T = TypeVar("T")
LEDGER_SUFFIX = ".ledger"  # "." never occurs in store names: the catalog never takes it for a store
UNIT_1D = [1.0]  # records are found by id or metadata only; Chroma still wants a vector for each
FIELD_PREFIX = "f:"  # a caller's fields, kept apart from the record's own store/kind/seq


@define(kw_only=True)
class ChromaLedger:
    """Ledger records as Chroma records: id = key, metadata = store, kind, seq and the fields, document = text.

    `claim` is Chroma's `add`, which keeps the first record of an id and silently ignores a later add of it
    (checked on chromadb 1.5.9, embedded and over HTTP, under concurrent writers), followed by a read of the
    id: the record that won. The collection is made on the first write; reads before it see no records.
    """

    session: Session
    name: str
    boundary: Boundary

    @classmethod
    def of(cls, catalog: Any) -> ChromaLedger:
        """The ledger beside a ChromaCatalog's stores: on a server its own client (so a lease's heartbeat never
        queues behind a long write of this process), embedded the data directory's one session."""
        boundary = catalog.boundary
        if catalog.host is not None:
            connect = partial(server_client, boundary, catalog.host, catalog.port)
            session = Session(boundary=boundary, directory=None, connect=connect)
        else:
            session = catalog.session
        return cls(session=session, name=catalog.collection + LEDGER_SUFFIX, boundary=boundary)

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        def write(client: ClientAPI) -> LedgerRecord:
            collection = self._collection(client)
            collection.add(ids=[record.key], embeddings=cast(Any, [UNIT_1D]), **_columns(record))
            stored = _records(collection.get(ids=[record.key], include=cast(Any, ["metadatas", "documents"])))
            return stored.get(record.key, record)

        return self._run("claim a ledger record", write, write=True)

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        wanted = list(dict.fromkeys(keys))

        def look(client: ClientAPI) -> dict[str, LedgerRecord]:
            collection = self.session.find(client, self.name)
            if collection is None or not wanted:
                return {}
            return _records(collection.get(ids=wanted, include=cast(Any, ["metadatas", "documents"])))

        return self._run("read ledger records", look)

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        def write(client: ClientAPI) -> None:
            self._collection(client).upsert(ids=[record.key], embeddings=cast(Any, [UNIT_1D]), **_columns(record))

        return self._run("write a ledger record", write, write=True)

    def remove(self, keys: Sequence[str]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(keys))
        if not ids:
            return Success(None)

        def delete(client: ClientAPI) -> None:
            collection = self.session.find(client, self.name)
            if collection is not None:
                for batch in chunks(ids, layout.FALLBACK_BATCH):
                    collection.delete(ids=list(batch))

        return self._run("remove ledger records", delete, write=True)

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]:
        def look(client: ClientAPI) -> list[LedgerRecord]:
            collection = self.session.find(client, self.name)
            if collection is None:
                return []
            where = {"$and": [{"store": store}, {"kind": kind}, {"seq": {"$gt": after}}]}
            found: dict[str, LedgerRecord] = {}
            offset = 0
            while True:
                page = collection.get(
                    where=cast(Any, where),
                    limit=layout.SCAN_PAGE,
                    offset=offset,
                    include=cast(Any, ["metadatas", "documents"]),
                )
                found.update(_records(page))
                if len(page["ids"]) < layout.SCAN_PAGE:
                    return sorted(found.values(), key=lambda record: (record.seq, record.key))
                offset += layout.SCAN_PAGE

        return self._run("list ledger records", look)

    # --- helpers

    def _collection(self, client: ClientAPI) -> Collection:
        found = self.session.find(client, self.name)
        if found is not None:
            return found
        try:
            return client.get_or_create_collection(self.name, embedding_function=None)
        except UniqueConstraintError:  # another machine made it at the same moment
            return client.get_collection(self.name, embedding_function=None)

    def _run(self, doing: str, op: Callable[[ClientAPI], T], *, write: bool = False) -> Result[T, DomainError]:
        """`op` as a Result; a ledger write cut off by the server going away is BACKEND_UNAVAILABLE, not the caller's
        OUTCOME_UNKNOWN: its callers (leases, journals, feeds) settle their own records, the memory was not sent."""
        return self.boundary.result(
            partial(self.session.run, doing, lambda client: self.boundary.call(doing, partial(op, client)), write=write)
        ).alt(lambda error: self.boundary.unavailable(error.cause or error.message) if _unknown(error) else error)


def _unknown(error: DomainError) -> bool:
    return error.code is ErrorCode.OUTCOME_UNKNOWN


def _columns(record: LedgerRecord) -> dict[str, Any]:
    metadata: dict[str, Field] = {"store": record.store, "kind": record.kind, "seq": record.seq}
    metadata.update({FIELD_PREFIX + name: value for name, value in record.fields.items()})
    return {"metadatas": [metadata], "documents": [record.text]}


def _records(got: Mapping[str, Any]) -> dict[str, LedgerRecord]:
    metadatas = got.get("metadatas") or []
    documents = got.get("documents") or []
    found: dict[str, LedgerRecord] = {}
    for key, metadata, document in zip(got["ids"], metadatas, documents, strict=False):
        meta = dict(metadata or {})
        found[key] = LedgerRecord(
            key=key,
            store=str(meta.pop("store", "")),
            kind=str(meta.pop("kind", "")),
            seq=int(meta.pop("seq", 0)),
            fields={
                name.removeprefix(FIELD_PREFIX): value for name, value in meta.items() if name.startswith(FIELD_PREFIX)
            },
            text=document or "",
        )
    return found
