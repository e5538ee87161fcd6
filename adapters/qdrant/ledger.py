"""The Ledger in Qdrant: the `<collection>.ledger` collection, one point per key (local mode or a server)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from attrs import define, field
from qdrant_client import QdrantClient, models
from returns.result import Result, Success

from agent_memory.adapters.qdrant import layout
from agent_memory.adapters.qdrant.boundary import Boundary
from agent_memory.adapters.qdrant.layout import RECORD_VECTOR, UNIT_1D
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.ledger import LedgerRecord
from agent_memory.domain.errors import DomainError

LEDGER_SUFFIX = ".ledger"  # "." never occurs in store names: the catalog never takes it for a store
INDEXED = (
    ("store", models.PayloadSchemaType.KEYWORD),
    ("kind", models.PayloadSchemaType.KEYWORD),
    ("seq", models.PayloadSchemaType.INTEGER),
)


@define(kw_only=True)
class QdrantLedger:
    """Ledger records as points: id derived from the key, payload = key, store, kind, seq, fields, text.

    `claim` is an upsert with `update_mode=INSERT_ONLY` (the server, and local mode, keep a point that exists),
    followed by a read of the point: the record that won. The collection is made on the first write (with payload
    indexes on store, kind and seq on a server); reads before it see no records.
    """

    connect: Callable[[], QdrantClient] = field(repr=False)  # the client, or an Abort saying why there is none
    name: str
    boundary: Boundary

    @classmethod
    def of(cls, catalog: Any) -> QdrantLedger:
        """The ledger beside a QdrantCatalog's stores, on its client (made on first use; local mode admits one)."""
        return cls(connect=catalog.client, name=catalog.collection + LEDGER_SUFFIX, boundary=catalog.boundary)

    @property
    def client(self) -> QdrantClient:
        return self.connect()

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        def write() -> LedgerRecord:
            self._ensure()
            self.client.upsert(self.name, points=[_point(record)], wait=True, update_mode=models.UpdateMode.INSERT_ONLY)
            return self._read([record.key]).get(record.key, record)

        return self.boundary.result("claim a ledger record", write)

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        wanted = list(dict.fromkeys(keys))
        return self.boundary.result("read ledger records", lambda: self._read(wanted) if wanted else {})

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        def write() -> None:
            self._ensure()
            self.client.upsert(self.name, points=[_point(record)], wait=True)

        return self.boundary.result("write a ledger record", write)

    def remove(self, keys: Sequence[str]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(layout.record_id(key) for key in keys))

        def delete() -> None:
            if self.client.collection_exists(self.name):
                for batch in chunks(ids, layout.MAX_BATCH_POINTS):
                    self.client.delete(self.name, points_selector=models.PointIdsList(points=list(batch)), wait=True)

        return self.boundary.result("remove ledger records", delete) if ids else Success(None)

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]:
        where = models.Filter(
            must=[
                models.FieldCondition(key="store", match=models.MatchValue(value=store)),
                models.FieldCondition(key="kind", match=models.MatchValue(value=kind)),
                models.FieldCondition(key="seq", range=models.Range(gt=after)),
            ]
        )

        def look() -> list[LedgerRecord]:
            if not self.client.collection_exists(self.name):
                return []
            found: list[LedgerRecord] = []
            offset: models.ExtendedPointId | None = None
            while True:
                points, offset = self.client.scroll(
                    self.name, scroll_filter=where, limit=layout.SCAN_PAGE, offset=offset, with_payload=True
                )
                found.extend(_record(point.payload or {}) for point in points)
                if offset is None:
                    return sorted(found, key=lambda record: (record.seq, record.key))

        return self.boundary.result("list ledger records", look)

    # --- helpers (plain: they raise, the port method's boundary converts)

    def _ensure(self) -> None:
        if self.client.collection_exists(self.name):
            return
        layout.ensure_registry(self.client, self.name)
        if self.boundary.server:  # local mode ignores payload indexes
            for key, schema in INDEXED:
                self.client.create_payload_index(self.name, field_name=key, field_schema=schema, wait=True)

    def _read(self, keys: list[str]) -> dict[str, LedgerRecord]:
        if not self.client.collection_exists(self.name):
            return {}
        points = self.client.retrieve(self.name, ids=[layout.record_id(key) for key in keys], with_payload=True)
        records = (_record(point.payload or {}) for point in points)
        return {record.key: record for record in records}


def _point(record: LedgerRecord) -> models.PointStruct:
    payload = {
        "key": record.key,
        "store": record.store,
        "kind": record.kind,
        "seq": record.seq,
        "fields": dict(record.fields),
        "text": record.text,
    }
    return models.PointStruct(id=layout.record_id(record.key), vector={RECORD_VECTOR: UNIT_1D}, payload=payload)


def _record(payload: dict[str, Any]) -> LedgerRecord:
    return LedgerRecord(
        key=str(payload["key"]),
        store=str(payload["store"]),
        kind=str(payload["kind"]),
        seq=int(payload["seq"]),
        fields=dict(payload.get("fields") or {}),
        text=str(payload.get("text", "")),
    )
