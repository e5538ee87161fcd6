"""Qdrant adapter: a StoreCatalog of aliased collections (local mode or server) and the VectorStore over one."""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import httpx
from attrs import define, evolve, field, frozen
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import QdrantException
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse
from returns.result import Failure, Result, Success

from agent_memory.adapters.disk import cannot_write, disk_hint, read_only_copy
from agent_memory.adapters.record_time import NEVER_EXPIRES_US, iso, micros, parse_iso, required_iso
from agent_memory.adapters.vector_math import cosines
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DEFAULT_STORE, DecayPolicy, Memory, check_store_name
from agent_memory.domain.paths import CategoryPath, MemoryPath
from agent_memory.domain.ports import Vector

T = TypeVar("T")
U = TypeVar("U")

# --- layout -----------------------------------------------------------------------------------
#
# Store s of catalog `memories` is the *alias* `memories` (s = default) or `memories--s`. The alias
# points at a physical collection `<alias>.gen-<token>` holding the memories; a rebuild fills a new
# generation and switches the alias in one atomic request, so readers see the old or the new contents,
# never neither (Qdrant has no rename, but aliases work alike in local mode and on a server).
# Internal collections all contain "." (never in store names), so they are never listed as stores:
#   <alias>.gen-<token>    a generation of a store's memories
#   <alias>.categories     the store's category registry (one point per category)
#   <collection>.models    one point per generation: the embedding model and dimension it was written with

STORE_SEPARATOR = "--"  # store names never contain "--" (domain.model.STORE_NAME), so this is reversible
GENERATION = ".gen-"
FIRST_GENERATION = "0"  # deterministic, so two processes creating one store on a server meet on one collection
CATEGORIES_SUFFIX = ".categories"
MODELS_SUFFIX = ".models"
DENSE = "dense"  # the named dense vector of a memory (cosine)
KEYWORD = "keyword"  # the named sparse vector (IDF) reserved for keyword search; left empty by this adapter
RECORD_VECTOR = "unit"  # registry points are looked up by id only; Qdrant still wants a vector for each
UNIT_1D = [1.0]
RECORD_IDS = uuid.UUID("5d0c7f2e-8a43-4b6e-9f51-3c2a1e7d9b04")  # uuid5 namespace of registry point ids

NAMESPACE_JOIN = "\x1f"  # labels cannot hold control characters (domain.model._label), so joins are unambiguous

SCAN_PAGE = 1000
MAX_BATCH_POINTS = 256
MAX_BATCH_BYTES = 16 * 1024 * 1024  # well under the server's default 32 MiB request limit
CONNECT_TIMEOUT_S = 3.0
REQUEST_TIMEOUT_S = 60  # qdrant-client takes whole seconds; bulk upserts on a busy server can be slow

Payload = dict[str, Any]

KEYWORD_FIELDS = (
    "namespace_prefixes",
    "agent",
    "personality",
    "project",
    "type",
    "tags",
    "path",
    "path_prefixes",
    "decay_policy",
)
BOOL_FIELDS = ("global", "deleted")
INTEGER_FIELDS = ("created_us", "anchor_us", "expires_us")


# --- timestamps -------------------------------------------------------------------------------


# --- Memory <-> Qdrant point ------------------------------------------------------------------


def namespace_prefixes(namespace: tuple[str, ...]) -> list[str]:
    """Every non-empty prefix of the namespace: ("user", "a") → ["user", "user␟a"]."""
    return [NAMESPACE_JOIN.join(namespace[:depth]) for depth in range(1, len(namespace) + 1)]


def path_prefixes(path: MemoryPath) -> list[str]:
    """Every category a path lies under, itself included (CategoryPath.contains accepts equal segments)."""
    return ["/".join(path.segments[:depth]) for depth in range(1, len(path.segments) + 1)]


def memory_payload(memory: Memory) -> Payload:
    """The point payload: every field but the id (the point id), plus the keys filters match on."""
    return {
        "content": memory.content,
        "store": memory.store,
        "namespace": list(memory.namespace),
        "namespace_prefixes": namespace_prefixes(memory.namespace),
        "path": "" if memory.path is None else str(memory.path),
        "path_prefixes": [] if memory.path is None else path_prefixes(memory.path),
        "agent": memory.agent,
        "personality": memory.personality,
        "project": memory.project,
        "type": memory.type,
        "global": memory.global_,
        "tags": list(memory.tags),
        "source": memory.source,
        "citations": list(memory.citations),
        "thread": memory.thread,
        "decay_policy": memory.decay_policy.value,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "last_reinforced_at": iso(memory.last_reinforced_at),
        "expires_at": iso(memory.expires_at),
        "deleted": memory.deleted,
        "deleted_at": iso(memory.deleted_at),
        "created_us": micros(memory.created_at),
        "anchor_us": micros(memory.decay_anchor),
        "expires_us": NEVER_EXPIRES_US if memory.expires_at is None else micros(memory.expires_at),
    }


def _labels(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise ValueError(f"expected a list of strings, got {raw!r}")
    return tuple(raw)


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"expected text in {key!r}, got {value!r}")
    return value


def _flag(payload: Mapping[str, Any], key: str) -> bool:
    value = payload.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"expected true/false in {key!r}, got {value!r}")
    return value


def memory_from_point(point_id: object, payload: Mapping[str, Any] | None) -> Memory:
    """The Memory a point holds; ValueError/KeyError/TypeError when it was not written by this adapter."""
    data = payload or {}
    path = _text(data, "path")
    return Memory(
        id=str(point_id),
        content=_text(data, "content"),
        created_at=required_iso(data["created_at"]),
        updated_at=required_iso(data["updated_at"]),
        store=_text(data, "store"),
        namespace=_labels(data.get("namespace", [])),
        path=MemoryPath(tuple(path.split("/"))) if path else None,
        agent=_text(data, "agent"),
        personality=_text(data, "personality"),
        project=_text(data, "project"),
        type=_text(data, "type"),
        global_=_flag(data, "global"),
        tags=_labels(data.get("tags", [])),
        source=_text(data, "source"),
        citations=_labels(data.get("citations", [])),
        thread=_text(data, "thread"),
        decay_policy=DecayPolicy(data.get("decay_policy", DecayPolicy.STABLE.value)),
        last_reinforced_at=parse_iso(data.get("last_reinforced_at", "")),
        expires_at=parse_iso(data.get("expires_at", "")),
        deleted=_flag(data, "deleted"),
        deleted_at=parse_iso(data.get("deleted_at", "")),
    )


def _point(memory: Memory, vector: Sequence[float]) -> models.PointStruct:
    return models.PointStruct(id=memory.id, vector={DENSE: [float(x) for x in vector]}, payload=memory_payload(memory))


def point_ids(ids: Sequence[str]) -> list[str]:
    """The ids that can name a point, once each: memory ids are canonical UUIDs, anything else is never stored."""
    kept: dict[str, None] = {}
    for raw in ids:
        try:
            if str(uuid.UUID(raw)) == raw:
                kept[raw] = None
        except (ValueError, TypeError, AttributeError):
            continue
    return list(kept)


# --- MemoryFilter -> qdrant Filter ------------------------------------------------------------


def _match(key: str, value: str | bool) -> models.FieldCondition:
    """Equality; on a list field Qdrant matches when any element is equal."""
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


def filter_conditions(where: MemoryFilter) -> list[models.Condition]:
    """One Qdrant condition per active field of the filter, in the semantics of MemoryFilter.matches."""
    must: list[models.Condition] = []
    if where.namespace:
        must.append(_match("namespace_prefixes", NAMESPACE_JOIN.join(where.namespace)))
    for name in ("agent", "personality", "project", "type"):
        wanted = getattr(where, name)
        if wanted is not None:
            must.append(_match(name, wanted))
    if where.global_ is not None:
        must.append(_match("global", where.global_))
    must.extend(_match("tags", tag) for tag in dict.fromkeys(where.tags))  # all of them: one condition each
    if where.path is not None:
        must.append(_match("path", str(where.path)))
    if where.path_prefix is not None:
        must.append(_match("path_prefixes", str(where.path_prefix)))
    if not where.include_deleted:
        must.append(_match("deleted", False))
    if where.alive_at is not None:
        must.append(models.FieldCondition(key="expires_us", range=models.Range(gt=micros(where.alive_at))))
    if where.oldest_anchor is not None:
        must.append(
            models.Filter(
                should=[
                    _match("decay_policy", DecayPolicy.STABLE.value),
                    models.FieldCondition(key="anchor_us", range=models.Range(gte=micros(where.oldest_anchor))),
                ]
            )
        )
    return must


def to_filter(where: MemoryFilter) -> models.Filter | None:
    """The Qdrant filter for a MemoryFilter; None when it keeps everything."""
    must = filter_conditions(where)
    return models.Filter(must=must) if must else None


def similarity_from_score(score: float) -> float:
    """A cosine collection scores by cosine similarity = 1 − cosine distance; clamp float32 overshoot."""
    return max(-1.0, min(1.0, float(score)))


# --- the error boundary -----------------------------------------------------------------------


def _is_transport_failure(error: BaseException) -> bool:
    if isinstance(error, ResponseHandlingException):
        return isinstance(error.source, httpx.TransportError | ConnectionError)
    return isinstance(error, httpx.TransportError | ConnectionError)


def storage_error(doing: str, error: BaseException) -> DomainError:
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"Qdrant failed to {doing}{disk_hint(error)}.",
        cause=f"{type(error).__name__}: {error}",
    )


@frozen
class Boundary:
    """Where the library meets the domain: runs a Qdrant call and turns its exceptions into DomainErrors.

    Local mode is not thread-safe (one SQLite connection per collection, plain dicts), so its calls are
    serialised by `guard`; a server client needs no lock.
    """

    location: str
    server: bool
    guard: contextlib.AbstractContextManager[Any] = field(eq=False, repr=False)

    def unavailable(self, cause: BaseException | str) -> DomainError:
        if self.server:
            message = f"Cannot connect to Qdrant at {self.location}. Is the server running?"
        else:
            message = f"Cannot open the Qdrant data at {self.location}{disk_hint(cause)}."
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=f"{type(cause).__name__}: {cause}")

    def refused(self, error: UnexpectedResponse, *, probe: bool) -> DomainError | None:
        """BACKEND_UNAVAILABLE for an HTTP answer that means "no usable Qdrant here"; None for other answers."""
        status = error.status_code
        if status in (401, 403):
            message = f"Qdrant at {self.location} refused the request (HTTP {status}). Check QDRANT_API_KEY."
        elif probe:  # calls every Qdrant answers (list collections/aliases): anything else is not a Qdrant
            message = f"No Qdrant server answers at {self.location} (HTTP {status}). Check QDRANT_URL."
        else:
            return None
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=str(error))

    def run(self, doing: str, call: Callable[[], T], *, probe: bool = False) -> Result[T, DomainError]:
        """`call()` as a Result: network failures → BACKEND_UNAVAILABLE, library errors → STORAGE_ERROR.

        `probe` marks calls that every Qdrant answers, so an HTTP error there means a wrong URL.
        """
        try:
            with self.guard:
                return Success(call())
        except (ApiException, httpx.TransportError, ConnectionError) as error:
            if _is_transport_failure(error):
                return Failure(self.unavailable(error))
            refused = self.refused(error, probe=probe) if isinstance(error, UnexpectedResponse) else None
            return Failure(refused or storage_error(doing, error))
        except (QdrantException, ValueError, TypeError, KeyError, sqlite3.Error) as error:
            # ValueError: local mode's "Collection … not found" and pydantic's ValidationError; sqlite3.Error:
            # local mode's storage files (disk full, read-only).
            return Failure(storage_error(doing, error))
        except RuntimeError as error:
            # Local mode raises a plain RuntimeError once its client is closed (QdrantCatalog.close).
            if type(error) is not RuntimeError:
                raise
            return Failure(storage_error(doing, error))


def request_batches(
    points: Sequence[models.PointStruct], estimate: Callable[[models.PointStruct], int]
) -> Iterator[list[models.PointStruct]]:
    """Points in requests of at most MAX_BATCH_POINTS and about MAX_BATCH_BYTES of JSON, as `estimate` sizes them."""
    batch: list[models.PointStruct] = []
    size = 0
    for point in points:
        cost = estimate(point)
        if batch and (len(batch) >= MAX_BATCH_POINTS or size + cost > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(point)
        size += cost
    if batch:
        yield batch


def _dense_point_size(dimension: int, point: models.PointStruct) -> int:
    content = (point.payload or {}).get("content", "")
    return 6 * len(str(content)) + 24 * dimension + 4096  # \uXXXX escapes at worst, floats as text


def _chunks(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[start : start + size] for start in range(0, len(items), max(1, size))]


def _each(items: Iterable[T], step: Callable[[T], Result[U, DomainError]]) -> Result[list[U], DomainError]:
    """`step` on every item in turn, stopping at the first failure."""
    done: list[U] = []
    for item in items:
        match step(item):
            case Success(value):
                done.append(value)
            case Failure() as failed:
                return failed
    return Success(done)


# --- collections ------------------------------------------------------------------------------


def _memory_collection_config(dimension: int) -> dict[str, Any]:
    return {
        "vectors_config": {DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
        "sparse_vectors_config": {KEYWORD: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    }


def _index_payload(client: QdrantClient, name: str) -> None:
    """Payload indexes for every filtered key (a server uses them; local mode ignores them, so skip it there)."""
    schemas = (
        [(key, models.PayloadSchemaType.KEYWORD) for key in KEYWORD_FIELDS]
        + [(key, models.PayloadSchemaType.BOOL) for key in BOOL_FIELDS]
        + [(key, models.PayloadSchemaType.INTEGER) for key in INTEGER_FIELDS]
    )
    for key, schema in schemas:
        client.create_payload_index(name, field_name=key, field_schema=schema, wait=True)


def _create_generation(client: QdrantClient, name: str, dimension: int, *, server: bool) -> None:
    """A physical collection for memories; an existing one of that name is kept (another process made it)."""
    if not client.collection_exists(name):
        try:
            client.create_collection(name, **_memory_collection_config(dimension))
        except (ApiException, ValueError):
            if not client.collection_exists(name):
                raise
    if server:
        _index_payload(client, name)


def _ensure_registry(client: QdrantClient, name: str) -> None:
    """A registry collection (categories, models): points looked up by id, one dummy 1-d vector each."""
    if client.collection_exists(name):
        return
    try:
        client.create_collection(
            name, vectors_config={RECORD_VECTOR: models.VectorParams(size=1, distance=models.Distance.DOT)}
        )
    except (ApiException, ValueError):  # another process created it meanwhile
        if not client.collection_exists(name):
            raise


def _aliases(client: QdrantClient) -> dict[str, str]:
    return {alias.alias_name: alias.collection_name for alias in client.get_aliases().aliases}


def _switch_alias(client: QdrantClient, alias: str, target: str) -> None:
    """Point `alias` at `target` in one request (atomic on a server; one meta.json replace in local mode)."""
    client.update_collection_aliases(
        change_aliases_operations=[
            models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)),
            models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=target, alias_name=alias)),
        ]
    )


def _dense_size(info: models.CollectionInfo) -> int | None:
    vectors = info.config.params.vectors
    params = vectors.get(DENSE) if isinstance(vectors, Mapping) else None
    return params.size if params is not None else None


def _record_id(key: str) -> str:
    return str(uuid.uuid5(RECORD_IDS, key))


@frozen
class ModelRecords:
    """The `<collection>.models` registry: which embedding model (and dimension) each generation holds.

    A generation is recorded once it is completely written, before the alias switch that publishes it,
    so the alias switch changes contents and model together.
    """

    client: QdrantClient = field(repr=False)
    name: str

    def read(self, generation: str) -> str | None:
        if not self.client.collection_exists(self.name):
            return None
        found = self.client.retrieve(self.name, ids=[_record_id(generation)], with_payload=True)
        model = (found[0].payload or {}).get("embedding_model") if found else None
        return model if isinstance(model, str) else None

    def write(self, generation: str, model: str, dimension: int) -> None:
        _ensure_registry(self.client, self.name)
        self.client.upsert(
            self.name,
            points=[
                models.PointStruct(
                    id=_record_id(generation),
                    vector={RECORD_VECTOR: UNIT_1D},
                    payload={"collection": generation, "embedding_model": model, "dimension": dimension},
                )
            ],
            wait=True,
        )

    def forget(self, generation: str) -> None:
        if self.client.collection_exists(self.name):
            self.client.delete(self.name, points_selector=models.PointIdsList(points=[_record_id(generation)]))


def _drop_generation(client: QdrantClient, records: ModelRecords, generation: str) -> None:
    client.delete_collection(generation)
    records.forget(generation)


# --- the store --------------------------------------------------------------------------------


@define(kw_only=True)
class QdrantVectorStore:
    """One store = one alias over a generation collection; a memory is a point (id, dense vector, payload)."""

    client: QdrantClient = field(repr=False)
    name: str  # the alias
    collection: str  # the generation it points at when opened; reads and writes go there
    boundary: Boundary
    records: ModelRecords
    model: str | None = None
    dimension: int | None = None

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        """Upsert (so a re-added id is overwritten, as in the reference store), in bounded batches."""
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        latest = {memory.id: (memory, vector) for memory, vector in zip(memories, embeddings, strict=True)}
        checked = self._check_dimension([vector for _, vector in latest.values()])
        if isinstance(checked, Failure):
            return checked
        return self._upsert([_point(memory, vector) for memory, vector in latest.values()])

    def replace(self, memory: Memory, embedding: Vector) -> Result[None, DomainError]:
        return self._check_dimension([embedding]).bind(lambda _: self._upsert([_point(memory, embedding)]))

    def update_metadata(self, memories: Sequence[Memory]) -> Result[None, DomainError]:
        """Overwrite the payload of existing memories, keeping their vectors; MEMORY_NOT_FOUND before any write."""
        latest = {memory.id: memory for memory in memories}
        if not latest:
            return Success(None)
        return self._existing(list(latest)).bind(lambda present: self._overwrite(list(latest.values()), present))

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        def delete(batch: Sequence[str]) -> Result[object, DomainError]:
            selector = models.PointIdsList(points=list(batch))
            return self.boundary.run(
                "delete memories", partial(self.client.delete, self.collection, points_selector=selector, wait=True)
            )

        return _each(_chunks(point_ids(ids), MAX_BATCH_POINTS), delete).map(lambda _: None)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Fill a fresh generation, record its model, then switch the alias to it in one request."""
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        dimensions = {len(vector) for vector in embeddings}
        if len(dimensions) > 1:
            return Failure(
                DomainError(
                    ErrorCode.EMBEDDING_MISMATCH,
                    f"A rebuild got embeddings of several dimensions: {sorted(dimensions)}.",
                )
            )
        dimension = dimensions.pop() if dimensions else self.dimension
        if dimension is None:
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "The store's embedding dimension is unknown."))
        staged = self._stage(memories, embeddings, embedding_model, dimension)
        return staged.bind(self._swap_in)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        """The memories with these ids, in the order asked, unknown ids left out."""

        def read(batch: Sequence[str]) -> Result[list[Memory], DomainError]:
            return self.boundary.run(
                "read memories", partial(self.client.retrieve, self.collection, ids=list(batch), with_payload=True)
            ).bind(self._memories)

        def in_order(pages: list[list[Memory]]) -> list[Memory]:
            found = {memory.id: memory for page in pages for memory in page}
            return [found[i] for i in ids if i in found]

        return _each(_chunks(point_ids(ids), SCAN_PAGE), read).map(in_order)

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """One Qdrant query: the filter applies before ranking; at most `limit` pairs, best first."""
        if limit < 1:
            return Success([])
        search = partial(
            self.client.query_points,
            self.collection,
            query=[float(x) for x in embedding],
            using=DENSE,
            query_filter=to_filter(where),
            limit=limit,
            with_payload=True,
        )
        return (
            self._check_dimension([embedding])
            .bind(lambda _: self.boundary.run("search memories", search))
            .bind(lambda answer: self._scored(answer.points))
            .map(lambda pairs: pairs[:limit])
        )

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        """Every memory the filter keeps, scrolled in pages of SCAN_PAGE."""
        condition = to_filter(where)
        memories: list[Memory] = []
        offset: models.ExtendedPointId | None = None
        while True:
            page = self.boundary.run(
                "scan memories",
                partial(
                    self.client.scroll,
                    self.collection,
                    scroll_filter=condition,
                    limit=SCAN_PAGE,
                    offset=offset,
                    with_payload=True,
                    with_vectors=False,
                ),
            )
            match page.bind(lambda answer: self._memories(answer[0]).map(lambda built: (built, answer[1]))):
                case Success((built, offset)):
                    memories.extend(built)
                case Failure() as failed:
                    return failed
            if offset is None:
                return Success(memories)

    def count(self) -> Result[int, DomainError]:
        return self.boundary.run("count memories", lambda: self.client.count(self.collection, exact=True).count)

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def embedding_model(self) -> Result[str | None, DomainError]:
        return Success(self.model)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        """Cosine of `embedding` against the stored dense vectors of these ids, unknown ids left out."""
        if not ids:
            return Success({})
        retrieve = partial(self.client.retrieve, self.collection, ids=point_ids(ids), with_vectors=[DENSE])

        def scored(points: Any) -> dict[str, float]:
            found: dict[str, Vector] = {}
            for point in points:
                vector = point.vector.get(DENSE) if isinstance(point.vector, dict) else point.vector
                if vector is not None:
                    found[str(point.id)] = list(vector)
            return cosines(embedding, found)

        return self.boundary.run("read vectors", retrieve).map(scored)

    # --- helpers

    def _check_dimension(self, vectors: Sequence[Vector]) -> Result[None, DomainError]:
        for vector in vectors:
            if self.dimension is not None and len(vector) != self.dimension:
                return Failure(
                    DomainError(
                        ErrorCode.EMBEDDING_MISMATCH,
                        f"This store holds {self.dimension}-dimensional embeddings but got {len(vector)} "
                        "dimensions. Run `memory reindex` after changing the embedding model.",
                    )
                )
        return Success(None)

    def _upsert(self, points: Sequence[models.PointStruct]) -> Result[None, DomainError]:
        def write(batch: list[models.PointStruct]) -> Result[object, DomainError]:
            return self.boundary.run(
                "write memories", partial(self.client.upsert, self.collection, points=batch, wait=True)
            )

        return _each(request_batches(points, partial(_dense_point_size, self.dimension or 0)), write).map(
            lambda _: None
        )

    def _existing(self, ids: Sequence[str]) -> Result[set[str], DomainError]:
        def read(batch: Sequence[str]) -> Result[list[models.Record], DomainError]:
            return self.boundary.run(
                "read memories", partial(self.client.retrieve, self.collection, ids=list(batch), with_payload=False)
            )

        return _each(_chunks(point_ids(ids), SCAN_PAGE), read).map(
            lambda pages: {str(point.id) for page in pages for point in page}
        )

    def _overwrite(self, memories: Sequence[Memory], present: set[str]) -> Result[None, DomainError]:
        """New payloads for memories that all exist (MEMORY_NOT_FOUND names the first that does not)."""
        missing = [memory.id for memory in memories if memory.id not in present]
        if missing:
            return Failure(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
        operations = [
            models.OverwritePayloadOperation(
                overwrite_payload=models.SetPayload(payload=memory_payload(memory), points=[memory.id])
            )
            for memory in memories
        ]

        def write(batch: Sequence[models.OverwritePayloadOperation]) -> Result[object, DomainError]:
            return self.boundary.run(
                "update memories",
                partial(self.client.batch_update_points, self.collection, update_operations=list(batch), wait=True),
            )

        return _each(_chunks(operations, MAX_BATCH_POINTS), write).map(lambda _: None)

    def _scored(self, hits: Sequence[models.ScoredPoint]) -> Result[list[tuple[Memory, float]], DomainError]:
        """(memory, similarity) pairs, best first."""

        def pair(built: list[Memory]) -> list[tuple[Memory, float]]:
            pairs = [(memory, similarity_from_score(hit.score)) for memory, hit in zip(built, hits, strict=True)]
            return sorted(pairs, key=lambda item: item[1], reverse=True)

        return self._memories(hits).map(pair)

    def _stage(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], model: str, dimension: int
    ) -> Result[QdrantVectorStore, DomainError]:
        """A new, filled and recorded generation (stale ones of failed rebuilds are dropped first)."""
        generation = f"{self.name}{GENERATION}{uuid.uuid4().hex[:12]}"

        def create() -> None:
            # never the live one: on a server, another process may have switched the alias since we opened
            live = {self.collection, _aliases(self.client).get(self.name)}
            for stale in self._generations():
                if stale not in live:
                    _drop_generation(self.client, self.records, stale)
            _create_generation(self.client, generation, dimension, server=self.boundary.server)

        created = self.boundary.run(f"create collection '{generation}'", create)
        if isinstance(created, Failure):
            return created
        staging = evolve(self, collection=generation, model=model, dimension=dimension)
        record = partial(self.records.write, generation, model, dimension)
        return (
            staging.add(memories, embeddings)
            .bind(lambda _: self.boundary.run("record the embedding model", record))
            .map(lambda _: staging)
        )

    def _swap_in(self, staged: QdrantVectorStore) -> Result[None, DomainError]:
        """Alias → the new generation (the commit point); then this store uses it and the old one is dropped."""
        old = self.collection
        swapped = self.boundary.run(
            f"switch store '{self.name}' to the rebuilt collection",
            partial(_switch_alias, self.client, self.name, staged.collection),
        )
        if isinstance(swapped, Failure):
            return swapped
        self.collection, self.model, self.dimension = staged.collection, staged.model, staged.dimension
        # The rebuild is done; an old generation left behind by a failure here is harmless and is
        # dropped by the next rebuild, so this outcome is deliberately not reported.
        self.boundary.run(f"drop collection '{old}'", partial(_drop_generation, self.client, self.records, old))
        return Success(None)

    def _generations(self) -> list[str]:
        prefix = self.name + GENERATION
        return [c.name for c in self.client.get_collections().collections if c.name.startswith(prefix)]

    def _memories(self, points: Sequence[models.Record | models.ScoredPoint]) -> Result[list[Memory], DomainError]:
        try:
            return Success([memory_from_point(point.id, point.payload) for point in points])
        except (KeyError, ValueError, TypeError) as error:  # InvalidValue is a ValueError
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    "A Qdrant point is not a memory this program can read (was the collection written by another tool?).",
                    cause=f"{type(error).__name__}: {error}",
                )
            )


# --- categories -------------------------------------------------------------------------------


@define(kw_only=True)
class QdrantCategories:
    """A store's CategoryRegistry: the `<alias>.categories` collection, one point per category.

    The point id is a UUID derived from the category path; the payload holds the path and description.
    The collection is created on the first `put`; reading or removing before that sees an empty registry.
    It is keyed by the store's alias, not its generation, so a rebuild leaves it alone.
    """

    client: QdrantClient = field(repr=False)
    name: str
    boundary: Boundary

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        return self.boundary.run("read categories", self._read_all)

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        def write() -> None:
            _ensure_registry(self.client, self.name)
            self.client.upsert(
                self.name,
                points=[
                    models.PointStruct(
                        id=_record_id(str(category)),
                        vector={RECORD_VECTOR: UNIT_1D},
                        payload={"path": str(category), "description": description},
                    )
                ],
                wait=True,
            )

        return self.boundary.run("write a category", write)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        ids = list(dict.fromkeys(_record_id(str(category)) for category in categories))
        if not ids:
            return Success(None)

        def delete() -> None:
            if self.client.collection_exists(self.name):
                for batch in _chunks(ids, MAX_BATCH_POINTS):
                    self.client.delete(self.name, points_selector=models.PointIdsList(points=list(batch)), wait=True)

        return self.boundary.run("remove categories", delete)

    def _read_all(self) -> dict[str, str]:
        described: dict[str, str] = {}
        if not self.client.collection_exists(self.name):
            return described
        offset: models.ExtendedPointId | None = None
        while True:
            points, offset = self.client.scroll(self.name, limit=SCAN_PAGE, offset=offset, with_payload=True)
            for point in points:
                payload = point.payload or {}
                described[str(payload["path"])] = str(payload.get("description", ""))
            if offset is None:
                return described


# --- the catalog ------------------------------------------------------------------------------


def _bound_connect_timeout(client: QdrantClient) -> None:
    """qdrant-client has one timeout for every phase; keep long reads but give up connecting quickly."""
    remote = getattr(client, "_client", None)
    session = getattr(getattr(getattr(remote, "openapi_client", None), "client", None), "_client", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(REQUEST_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)


def _is_lock_conflict(error: RuntimeError) -> bool:
    """Local mode re-raises portalocker's LockException as a plain RuntimeError (qdrant_local.py `_load`)."""
    import portalocker  # imported by qdrant-client's local mode already; not at module level (see there)

    return isinstance(error.__context__, portalocker.exceptions.LockException)


def _is_store_name(text: str) -> bool:
    try:
        check_store_name(text)
    except InvalidValue:
        return False
    return True


def _store_not_found(name: str) -> DomainError:
    return DomainError(
        ErrorCode.STORE_NOT_FOUND,
        f"Store '{name}' does not exist. Create it with `memory store create {name}` or add a memory to it.",
    )


@define(kw_only=True)
class QdrantCatalog:
    """The stores of one Qdrant database: store "default" is the alias `collection`, store s is `collection--s`.

    Talks to a Qdrant server when `url` is set, else opens local mode (embedded, pure Python, one process
    at a time) at `path`. The client is created on first use; every failure comes back as a DomainError.
    """

    path: pathlib.Path | None = None
    url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    collection: str = "memories"
    embedder_name: str
    dimension: int
    _client: QdrantClient | None = field(default=None, init=False, repr=False)
    _stores: dict[str, QdrantVectorStore] = field(factory=dict, init=False, repr=False)
    _boundary: Boundary = field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.url is None and self.path is None:
            raise ValueError("QdrantCatalog needs a data `path` (local mode) or a server `url`.")
        guard: contextlib.AbstractContextManager[Any] = (
            contextlib.nullcontext() if self.url is not None else threading.RLock()
        )
        self._boundary = Boundary(self.location, server=self.url is not None, guard=guard)

    @property
    def backend(self) -> str:
        return "qdrant"

    @property
    def location(self) -> str:
        return self.url if self.url is not None else str(self.path)

    @property
    def boundary(self) -> Boundary:
        return self._boundary

    def connect(self) -> Result[QdrantClient, DomainError]:
        """The catalog's one client (made on first use), for adapters that share it (local mode admits one)."""
        return self._connect()

    # --- StoreCatalog

    def health(self) -> Result[Mapping[str, str], DomainError]:
        return (
            self._connect()
            .bind(lambda client: self.boundary.run("list collections", client.get_collections, probe=True))
            .map(lambda _: {"qdrant_location": self.location, "collection": self.collection})
        )

    def names(self) -> Result[list[str], DomainError]:
        listed = self._connect().bind(
            lambda client: self.boundary.run("list aliases", partial(_aliases, client), probe=True)
        )
        return listed.map(lambda aliases: sorted(n for alias in aliases if (n := self.store_of(alias)) is not None))

    def open(self, name: str, *, create: bool) -> Result[QdrantVectorStore, DomainError]:
        if name in self._stores:
            return Success(self._stores[name])
        try:
            check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        return (
            self._connect()
            .bind(lambda client: self._open_store(client, name, create=create))
            .map(partial(self._remember, name))
        )

    def categories(self, name: str) -> Result[QdrantCategories, DomainError]:
        return self.open(name, create=False).map(
            lambda store: QdrantCategories(
                client=store.client, name=store.name + CATEGORIES_SUFFIX, boundary=self.boundary
            )
        )

    def close(self) -> None:
        """Release the client (in local mode: the storage folder's lock). Stores opened before stop working."""
        client, self._client = self._client, None
        self._stores.clear()
        if client is not None:
            with self.boundary.guard:
                client.close()

    # --- naming

    def collection_of(self, store: str) -> str:
        return self.collection if store == DEFAULT_STORE else f"{self.collection}{STORE_SEPARATOR}{store}"

    def store_of(self, alias: str) -> str | None:
        """The store an alias belongs to; None for other catalogs' aliases."""
        if alias == self.collection:
            return DEFAULT_STORE
        prefix = f"{self.collection}{STORE_SEPARATOR}"
        if not alias.startswith(prefix):
            return None
        store = alias[len(prefix) :]
        return store if _is_store_name(store) else None

    @property
    def models_collection(self) -> str:
        return self.collection + MODELS_SUFFIX

    # --- helpers

    def _open_store(self, client: QdrantClient, name: str, *, create: bool) -> Result[QdrantVectorStore, DomainError]:
        """The store behind the alias, or a first generation and its alias when asked to create it."""
        alias = self.collection_of(name)
        records = ModelRecords(client=client, name=self.models_collection)

        def existing_or_created(generation: str | None) -> Result[str, DomainError]:
            if generation is not None:
                return Success(generation)
            return self._create_store(client, alias, records) if create else Failure(_store_not_found(name))

        return (
            self.boundary.run(f"open store '{name}'", lambda: _aliases(client).get(alias), probe=True)
            .bind(existing_or_created)
            .bind(
                lambda generation: self.boundary.run(
                    f"read collection '{generation}'", partial(self._store_over, client, alias, generation, records)
                )
            )
        )

    def _remember(self, name: str, store: QdrantVectorStore) -> QdrantVectorStore:
        self._stores[name] = store
        return store

    def _store_over(
        self, client: QdrantClient, alias: str, generation: str, records: ModelRecords
    ) -> QdrantVectorStore:
        return QdrantVectorStore(
            client=client,
            name=alias,
            collection=generation,
            boundary=self.boundary,
            records=records,
            model=records.read(generation),
            dimension=_dense_size(client.get_collection(generation)),
        )

    def _create_store(self, client: QdrantClient, alias: str, records: ModelRecords) -> Result[str, DomainError]:
        """The first generation (empty, so reusing one left by a crash is safe), its model record, its alias.

        A plain collection already named like the alias was made by someone else: refuse to touch it.
        """

        def unless_taken(taken: bool) -> Result[str, DomainError]:
            if taken:
                return Failure(
                    DomainError(
                        ErrorCode.STORAGE_ERROR,
                        f"The Qdrant collection '{alias}' was not created by agent-memory (its stores are aliases). "
                        "Use another collection name (MEMORY_COLLECTION), or remove that collection.",
                    )
                )
            return self.boundary.run(f"create store '{alias}'", partial(self._first_generation, client, alias, records))

        return self.boundary.run("look for collections", partial(client.collection_exists, alias)).bind(unless_taken)

    def _first_generation(self, client: QdrantClient, alias: str, records: ModelRecords) -> str:
        """Create-or-reuse `<alias>.gen-0`, record it, alias it.

        A gen-0 without an alias is left by a crash during creation (so it is empty) or is being created by
        another process right now (on a server); both are reused, unless an empty one has another dimension.
        """
        generation = alias + GENERATION + FIRST_GENERATION
        if client.collection_exists(generation):
            size = _dense_size(client.get_collection(generation))
            if size != self.dimension and client.count(generation, exact=True).count == 0:
                _drop_generation(client, records, generation)
        _create_generation(client, generation, self.dimension, server=self.boundary.server)
        if records.read(generation) is None:
            records.write(generation, self.embedder_name, self.dimension)
        client.update_collection_aliases(
            change_aliases_operations=[
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(collection_name=generation, alias_name=alias)
                )
            ]
        )
        return _aliases(client).get(alias, generation)

    def _connect(self) -> Result[QdrantClient, DomainError]:
        """The client, created on first success (a failed attempt is retried on the next call).

        Under the guard: two threads opening one local folder at once would otherwise lock each other out.
        """
        with self.boundary.guard:
            if self._client is not None:
                return Success(self._client)
            made = self._server_client() if self.url is not None else self._local_client()
            return made.map(self._keep)

    def _keep(self, client: QdrantClient) -> QdrantClient:
        self._client = client
        return client

    def _server_client(self) -> Result[QdrantClient, DomainError]:
        try:
            client = QdrantClient(
                url=self.url, api_key=self.api_key, timeout=REQUEST_TIMEOUT_S, check_compatibility=False
            )
        except ValueError as error:  # a malformed URL (unknown scheme, host and prefix clash)
            return Failure(self.boundary.unavailable(error))
        _bound_connect_timeout(client)
        return Success(client)

    def _local_client(self) -> Result[QdrantClient, DomainError]:
        data = pathlib.Path(str(self.path))
        try:
            return Success(QdrantClient(path=str(data), force_disable_check_same_thread=True))
        except RuntimeError as error:
            # local mode's only start-up RuntimeError is the lock one; anything else still cannot open the data
            if _is_lock_conflict(error):
                return Failure(self._in_use(data, error))
            return Failure(self.boundary.unavailable(error))
        except (OSError, ValueError) as error:  # unwritable folder; unreadable meta.json
            if isinstance(error, OSError) and cannot_write(error) and (data / "meta.json").is_file():
                return self._read_only_client(data)
            return Failure(self.boundary.unavailable(error))

    def _read_only_client(self, data: pathlib.Path) -> Result[QdrantClient, DomainError]:
        """Local mode must write to open its data (a lock file): on a disk that refuses writes, a client over a
        private copy, so reads still work. Writes never reach it: the store's write lock, on the same disk, fails."""
        try:
            return Success(QdrantClient(path=str(read_only_copy(data)), force_disable_check_same_thread=True))
        except (OSError, ValueError, RuntimeError) as error:
            return Failure(self.boundary.unavailable(error))

    @staticmethod
    def _in_use(data: pathlib.Path, error: RuntimeError) -> DomainError:
        return DomainError(
            ErrorCode.BACKEND_UNAVAILABLE,
            f"The Qdrant data at {data} is in use by another process: Qdrant's local mode admits one process "
            "at a time. Stop the other process, or run a Qdrant server and set QDRANT_URL.",
            cause=str(error),
        )
