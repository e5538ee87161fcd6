"""Memory ⇄ Qdrant point (payload codec) and MemoryFilter → Qdrant filter, in the semantics of MemoryFilter.matches."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from qdrant_client import models

from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.commit_mark import COMMIT_KEY, mark_of, marked
from agent_memory.adapters.shared.memory_fields import is_timestamp, memory_fields
from agent_memory.adapters.shared.plain import memory_from_plain, plain_memory
from agent_memory.adapters.shared.prefixes import NAMESPACE_JOIN, namespace_prefixes, path_prefixes
from agent_memory.adapters.shared.record_time import NEVER_EXPIRES_US, micros
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DecayPolicy, Memory

DENSE = "dense"  # the named dense vector of a memory (cosine)
KEYWORD = "keyword"  # the named sparse vector (IDF) reserved for keyword search; left empty by this adapter

Payload = dict[str, Any]

# the payload keys filters match on, by the index a server keeps for them
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


# --- Memory <-> Qdrant point ------------------------------------------------------------------


# the keys derived from a field, written right after it, and those written after every field (the moments as numbers)
_DERIVED_AFTER = {"namespace": ("namespace_prefixes",), "path": ("path_prefixes",)}
_DERIVED_LAST = ("created_us", "anchor_us", "expires_us")
# the payload's keys in the order they are written: the plain memory's (all but the id, the point's own) in declaration
# order with the timestamps last, each followed by the keys derived from it, then the moments filters compare
PAYLOAD_KEYS = (
    *(
        written
        for key, _ in sorted((f for f in memory_fields() if f[0] != "id"), key=lambda f: is_timestamp(f[1]))
        for written in (key, *_DERIVED_AFTER.get(key, ()))
    ),
    *_DERIVED_LAST,
)


def memory_payload(memory: Memory) -> Payload:
    """The point payload: every field but the id (the point id), plus the keys filters match on."""
    fields = plain_memory(memory) | {
        "namespace_prefixes": namespace_prefixes(memory.namespace),
        "path_prefixes": [] if memory.path is None else path_prefixes(memory.path),
        "created_us": micros(memory.created_at),
        "anchor_us": micros(memory.decay_anchor),
        "expires_us": NEVER_EXPIRES_US if memory.expires_at is None else micros(memory.expires_at),
    }
    mark = mark_of(memory)  # a running batch's point (adapters/shared/commit_mark.py): its key, at the end
    return {key: fields[key] for key in PAYLOAD_KEYS} | ({COMMIT_KEY: mark} if mark else {})


def memory_from_point(point_id: object, payload: Mapping[str, Any] | None) -> Memory:
    """The Memory a point holds; ValueError/KeyError/TypeError when it was not written by this adapter.

    A missing key reads as its field's default, except the timestamps a memory needs (KeyError) and the
    content and store, read as "" so that a point without them is refused as it always was.
    """
    memory = memory_from_plain({"content": "", "store": "", **(payload or {}), "id": str(point_id)})
    return marked(memory, str((payload or {}).get(COMMIT_KEY) or ""))


def memories_of(points: Iterable[models.Record | models.ScoredPoint]) -> list[Memory]:
    """The memories these points hold; a point this adapter did not write aborts with STORAGE_ERROR."""
    try:
        return [memory_from_point(point.id, point.payload) for point in points]
    except (KeyError, ValueError, TypeError) as error:  # InvalidValue is a ValueError
        raise Abort(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                "A Qdrant point is not a memory this program can read (was the collection written by another tool?).",
                cause=f"{type(error).__name__}: {error}",
            )
        ) from error


def point(memory: Memory, vector: Sequence[float]) -> models.PointStruct:
    """The point of a memory: its id, its dense vector and its payload."""
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


def similarity_from_score(score: float) -> float:
    """A cosine collection scores by cosine similarity = 1 − cosine distance; clamp float32 overshoot."""
    return max(-1.0, min(1.0, float(score)))


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
