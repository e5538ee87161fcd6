"""The Qdrant collections agent-memory keeps: their names, request limits, and creating, aliasing and dropping them.

Store s of catalog `memories` is the *alias* `memories` (s = default) or `memories--s`. The alias points at a
physical collection `<alias>.gen-<token>` holding the memories; a rebuild fills a new generation and switches
the alias in one atomic request, so readers see the old or the new contents, never neither (Qdrant has no
rename, but aliases work alike in local mode and on a server). Internal collections all contain "." (never in
store names), so they are never listed as stores:
  <alias>.gen-<token>    a generation of a store's memories
  <alias>.categories     the store's category registry (one point per category)
  <alias>.keywords       the store's keyword index (an alias over generations of its own; see keywords.py)
  <collection>.models    one point per generation: the embedding model and dimension it was written with

The limits are read as `layout.NAME` when used, so a test can shrink them for every module at once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from attrs import field, frozen
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException

from agent_memory.adapters.qdrant.records import BOOL_FIELDS, DENSE, INTEGER_FIELDS, KEYWORD, KEYWORD_FIELDS

GENERATION = ".gen-"
FIRST_GENERATION = "0"  # deterministic, so two processes creating one store on a server meet on one collection
CATEGORIES_SUFFIX = ".categories"
MODELS_SUFFIX = ".models"
RECORD_VECTOR = "unit"  # registry points are looked up by id only; Qdrant still wants a vector for each
UNIT_1D = [1.0]
RECORD_IDS = uuid.UUID("5d0c7f2e-8a43-4b6e-9f51-3c2a1e7d9b04")  # uuid5 namespace of registry point ids

SCAN_PAGE = 1000
MAX_BATCH_POINTS = 256
MAX_BATCH_BYTES = 16 * 1024 * 1024  # well under the server's default 32 MiB request limit


# --- requests ---------------------------------------------------------------------------------


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


def dense_point_size(dimension: int, point: models.PointStruct) -> int:
    """About how many bytes of JSON a memory's point takes in a request."""
    content = (point.payload or {}).get("content", "")
    return 6 * len(str(content)) + 24 * dimension + 4096  # \uXXXX escapes at worst, floats as text


# --- collections ------------------------------------------------------------------------------


def create_collection(client: QdrantClient, name: str, **config: Any) -> None:
    """A collection of this configuration; one that already exists is kept (another process made it meanwhile)."""
    if client.collection_exists(name):
        return
    try:
        client.create_collection(name, **config)
    except (ApiException, ValueError):
        if not client.collection_exists(name):
            raise


def index_payload(client: QdrantClient, name: str) -> None:
    """Payload indexes for every filtered key (a server uses them; local mode ignores them, so skip it there)."""
    schemas = (
        [(key, models.PayloadSchemaType.KEYWORD) for key in KEYWORD_FIELDS]
        + [(key, models.PayloadSchemaType.BOOL) for key in BOOL_FIELDS]
        + [(key, models.PayloadSchemaType.INTEGER) for key in INTEGER_FIELDS]
    )
    for key, schema in schemas:
        client.create_payload_index(name, field_name=key, field_schema=schema, wait=True)


def create_generation(client: QdrantClient, name: str, dimension: int, *, server: bool) -> None:
    """A physical collection for memories; an existing one of that name is kept (another process made it)."""
    create_collection(
        client,
        name,
        vectors_config={DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
        sparse_vectors_config={KEYWORD: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    if server:
        index_payload(client, name)


def ensure_registry(client: QdrantClient, name: str) -> None:
    """A registry collection (categories, models): points looked up by id, one dummy 1-d vector each."""
    create_collection(
        client, name, vectors_config={RECORD_VECTOR: models.VectorParams(size=1, distance=models.Distance.DOT)}
    )


def dense_size(info: models.CollectionInfo) -> int | None:
    """The dimension of a memory collection's dense vectors; None when it has none."""
    vectors = info.config.params.vectors
    params = vectors.get(DENSE) if isinstance(vectors, Mapping) else None
    return params.size if params is not None else None


def record_id(key: str) -> str:
    """The point id of a registry entry."""
    return str(uuid.uuid5(RECORD_IDS, key))


# --- aliases ----------------------------------------------------------------------------------


def aliases(client: QdrantClient) -> dict[str, str]:
    """Every alias and the collection it points at."""
    return {alias.alias_name: alias.collection_name for alias in client.get_aliases().aliases}


def point_alias(client: QdrantClient, alias: str, target: str, *, replacing: bool) -> None:
    """Create `alias` → `target`, or move it there, in one request (atomic on a server; one meta.json in local mode)."""
    operations: list[models.AliasOperations] = []
    if replacing:
        operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
    operations.append(
        models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=target, alias_name=alias))
    )
    client.update_collection_aliases(change_aliases_operations=operations)


def switch_alias(client: QdrantClient, alias: str, target: str) -> None:
    """Move an existing alias to `target` in one request."""
    point_alias(client, alias, target, replacing=True)


def generations(client: QdrantClient, alias: str) -> list[str]:
    """Every generation collection of an alias, the live one included."""
    prefix = alias + GENERATION
    return [c.name for c in client.get_collections().collections if c.name.startswith(prefix)]


# --- which model wrote a generation -----------------------------------------------------------


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
        found = self.client.retrieve(self.name, ids=[record_id(generation)], with_payload=True)
        model = (found[0].payload or {}).get("embedding_model") if found else None
        return model if isinstance(model, str) else None

    def write(self, generation: str, model: str, dimension: int) -> None:
        ensure_registry(self.client, self.name)
        self.client.upsert(
            self.name,
            points=[
                models.PointStruct(
                    id=record_id(generation),
                    vector={RECORD_VECTOR: UNIT_1D},
                    payload={"collection": generation, "embedding_model": model, "dimension": dimension},
                )
            ],
            wait=True,
        )

    def forget(self, generation: str) -> None:
        if self.client.collection_exists(self.name):
            self.client.delete(self.name, points_selector=models.PointIdsList(points=[record_id(generation)]))


def drop_generation(client: QdrantClient, records: ModelRecords, generation: str) -> None:
    """Delete a generation collection and its model record."""
    client.delete_collection(generation)
    records.forget(generation)
