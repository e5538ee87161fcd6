"""Memory <-> ChromaDB record: the metadata a memory is stored as, and MemoryFilter as a Chroma `where`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from adapters.record_time import iso, micros, parse_iso, required_iso
from domain.filters import MemoryFilter
from domain.model import DecayPolicy, Memory
from domain.paths import MemoryPath

NAMESPACE_JOIN = "\x1f"  # labels cannot hold control characters (domain.model._label), so joins are unambiguous
NEVER_EXPIRES_US = 2**62  # beyond datetime.max (≈2.5e17 µs): "no expiry" compares later than any moment
MetadataDict = dict[str, Any]


# --- Memory <-> Chroma record -----------------------------------------------------------------


def namespace_prefixes(namespace: tuple[str, ...]) -> list[str]:
    """Every prefix of the namespace, "" first: ("user", "a") → ["", "user", "user␟a"]."""
    return [NAMESPACE_JOIN.join(namespace[:depth]) for depth in range(len(namespace) + 1)]


def path_prefixes(path: MemoryPath) -> list[str]:
    """Every category a path lies under, itself included (CategoryPath.contains accepts equal segments)."""
    return ["/".join(path.segments[:depth]) for depth in range(1, len(path.segments) + 1)]


def memory_metadata(memory: Memory) -> MetadataDict:
    """Chroma metadata holding every field but id and content; None deletes a list key on upsert/update."""
    return {
        "store": memory.store,
        "namespace": json.dumps(list(memory.namespace), ensure_ascii=False),
        "namespace_prefixes": namespace_prefixes(memory.namespace),
        "path": "" if memory.path is None else str(memory.path),
        "path_prefixes": None if memory.path is None else path_prefixes(memory.path),
        "agent": memory.agent,
        "personality": memory.personality,
        "project": memory.project,
        "type": memory.type,
        "global": memory.global_,
        "tags": list(dict.fromkeys(memory.tags)) or None,
        "tags_json": json.dumps(list(memory.tags), ensure_ascii=False),
        "source": memory.source,
        "citations": json.dumps(list(memory.citations), ensure_ascii=False),
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


def new_record_metadata(memory: Memory) -> MetadataDict:
    """The metadata for `add`, where Chroma refuses None values: absent list keys are left out."""
    return {key: value for key, value in memory_metadata(memory).items() if value is not None}


def _labels(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, str):
        raise ValueError(f"expected a JSON list, got {raw!r}")
    items = json.loads(raw)
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"expected a JSON list of strings, got {raw!r}")
    return tuple(items)


def memory_from_record(memory_id: str, document: str | None, meta: Mapping[str, Any]) -> Memory:
    """The Memory a record holds; ValueError/KeyError/TypeError when it was not written by this adapter."""
    path = str(meta.get("path", ""))
    return Memory(
        id=memory_id,
        content=document if document is not None else "",
        created_at=required_iso(meta["created_at"]),
        updated_at=required_iso(meta["updated_at"]),
        store=str(meta["store"]),
        namespace=_labels(meta.get("namespace", "[]")),
        path=MemoryPath(tuple(path.split("/"))) if path else None,
        agent=str(meta.get("agent", "")),
        personality=str(meta.get("personality", "")),
        project=str(meta.get("project", "")),
        type=str(meta.get("type", "")),
        global_=bool(meta.get("global", False)),
        tags=_labels(meta.get("tags_json", "[]")),
        source=str(meta.get("source", "")),
        citations=_labels(meta.get("citations", "[]")),
        decay_policy=DecayPolicy(meta.get("decay_policy", DecayPolicy.STABLE.value)),
        last_reinforced_at=parse_iso(meta.get("last_reinforced_at", "")),
        expires_at=parse_iso(meta.get("expires_at", "")),
        deleted=bool(meta.get("deleted", False)),
        deleted_at=parse_iso(meta.get("deleted_at", "")),
    )


# --- MemoryFilter -> where --------------------------------------------------------------------


def where_clauses(where: MemoryFilter) -> list[MetadataDict]:
    """One Chroma condition per active field of the filter, in the semantics of MemoryFilter.matches."""
    clauses: list[MetadataDict] = []
    if where.namespace:
        clauses.append({"namespace_prefixes": {"$contains": NAMESPACE_JOIN.join(where.namespace)}})
    for name in ("agent", "personality", "project", "type"):
        wanted = getattr(where, name)
        if wanted is not None:
            clauses.append({name: {"$eq": wanted}})
    if where.global_ is not None:
        clauses.append({"global": {"$eq": where.global_}})
    clauses.extend({"tags": {"$contains": tag}} for tag in dict.fromkeys(where.tags))
    if where.path is not None:
        clauses.append({"path": {"$eq": str(where.path)}})
    if where.path_prefix is not None:
        clauses.append({"path_prefixes": {"$contains": str(where.path_prefix)}})
    if not where.include_deleted:
        clauses.append({"deleted": {"$eq": False}})
    if where.alive_at is not None:
        clauses.append({"expires_us": {"$gt": micros(where.alive_at)}})
    if where.oldest_anchor is not None:
        clauses.append(
            {
                "$or": [
                    {"decay_policy": {"$eq": DecayPolicy.STABLE.value}},
                    {"anchor_us": {"$gte": micros(where.oldest_anchor)}},
                ]
            }
        )
    return clauses


def to_where(where: MemoryFilter) -> MetadataDict | None:
    """The Chroma `where` for a filter: None, the single clause, or an `$and` of two or more."""
    clauses = where_clauses(where)
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def similarity_from_distance(distance: float, space: str) -> float:
    """1 − cosine distance; for unit vectors (the Embedder's promise) l2 and ip convert exactly."""
    if space == "l2":  # squared euclidean: |a−b|² = 2 − 2·cos
        return 1.0 - distance / 2.0
    return 1.0 - distance  # cosine: 1 − cos; ip: 1 − a·b
