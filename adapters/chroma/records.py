"""Memory <-> ChromaDB record: filterable keys plus one JSON `record` key, and MemoryFilter as a Chroma `where`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.adapters.shared import prefixes
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.commit_mark import COMMIT_KEY, mark_of, marked
from agent_memory.adapters.shared.memory_fields import is_timestamp, memory_fields
from agent_memory.adapters.shared.plain import memory_from_plain, plain_memory
from agent_memory.adapters.shared.prefixes import NAMESPACE_JOIN, path_prefixes
from agent_memory.adapters.shared.record_time import NEVER_EXPIRES_US, micros
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DecayPolicy, Memory, stored_rule

RECORD_KEY = "record"  # the JSON string holding every field no `where` needs
RECORD_VERSION = 1
MetadataDict = dict[str, Any]


# --- Memory <-> Chroma record -----------------------------------------------------------------


def namespace_prefixes(namespace: tuple[str, ...]) -> list[str]:
    """Every prefix of the namespace, "" first: ("user", "a") → ["", "user", "user␟a"] (never an empty list)."""
    return prefixes.namespace_prefixes(namespace, with_empty=True)


# the top-level keys in the order they are written; the plain memory's fields among them are the ones `where` needs
METADATA_KEYS = (
    *("namespace_prefixes", "path", "path_prefixes", "agent", "personality", "project", "type", "global", "tags"),
    *("decay_policy", "deleted", "expires_us", "anchor_us", RECORD_KEY),
)
# the plain memory's fields the JSON `record` holds: every field of a Memory but the record's own (id, content) and
# the top-level keys `where` needs (tags is both), in declaration order with the timestamps last
_TOP_LEVEL_ONLY = frozenset({"id", "content", *METADATA_KEYS} - {"tags"})
_RECORD_ATTRIBUTES = sorted(
    ((key, a) for key, a in memory_fields() if key not in _TOP_LEVEL_ONLY), key=lambda f: is_timestamp(f[1])
)
RECORD_FIELDS = tuple(key for key, _ in _RECORD_ATTRIBUTES)
# the fields records written before them do not have (they read as the field's default)
_OPTIONAL_RECORD_FIELDS = frozenset(key for key, a in _RECORD_ATTRIBUTES if stored_rule(a).optional_in_old_records)


def memory_metadata(memory: Memory) -> MetadataDict:
    """The keys `where` filters on, plus every other field as one JSON string; None deletes a key on update/upsert.

    Chroma keeps one SQLite row per metadata key and list item, so fewer keys make reads and writes cheaper.
    The scope strings stay even when empty: a search may ask for agent == "" (MemoryFilter passes it through).
    """
    plain = plain_memory(memory)
    fields = plain | {
        "namespace_prefixes": namespace_prefixes(memory.namespace),
        "path_prefixes": None if memory.path is None else path_prefixes(memory.path),
        "tags": list(dict.fromkeys(memory.tags)) or None,
        "expires_us": NEVER_EXPIRES_US if memory.expires_at is None else micros(memory.expires_at),
        "anchor_us": micros(memory.decay_anchor),
        RECORD_KEY: _record_text(plain, mark_of(memory)),
    }
    return {key: fields[key] for key in METADATA_KEYS}


def _record_text(plain: Mapping[str, Any], mark: str) -> str:
    """The JSON record; a running batch's record (adapters/shared/commit_mark.py) carries its key in it, last (in
    the JSON rather than a key of its own: Chroma keeps a row per metadata key)."""
    fields = {"v": RECORD_VERSION, **{key: plain[key] for key in RECORD_FIELDS}} | ({COMMIT_KEY: mark} if mark else {})
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


def new_record_metadata(memory: Memory) -> MetadataDict:
    """The metadata for `add`, where Chroma refuses None values: absent list keys are left out."""
    return {key: value for key, value in memory_metadata(memory).items() if value is not None}


def memory_from_record(memory_id: str, document: str | None, meta: Mapping[str, Any]) -> Memory:
    """The Memory a record holds; ValueError/KeyError/TypeError when it was not written by this adapter.

    Records with a `record` key are in the current format; those without were written by earlier
    versions, which kept every field as its own key, and are read as they always were.
    """
    if RECORD_KEY not in meta:
        return memory_from_plain(_legacy_plain(memory_id, document, meta))
    fields = _record_fields(meta[RECORD_KEY])
    missing = [key for key in RECORD_FIELDS if key not in fields and key not in _OPTIONAL_RECORD_FIELDS]
    if missing:
        raise KeyError(f"the record has no {missing[0]!r}")
    memory = memory_from_plain(
        {
            **_filter_plain(meta),
            **{key: fields[key] for key in RECORD_FIELDS if key in fields},
            "id": memory_id,
            "content": document if document is not None else "",
        }
    )
    return marked(memory, str(fields.get(COMMIT_KEY) or ""))


def memories_of(ids: Sequence[str], documents: Sequence[Any], metadatas: Sequence[Any]) -> list[Memory]:
    """The memories these records hold; a record this adapter did not write aborts with STORAGE_ERROR."""
    try:
        return [
            memory_from_record(memory_id, document, meta or {})
            for memory_id, document, meta in zip(ids, documents, metadatas, strict=True)
        ]
    except (KeyError, ValueError, TypeError) as error:  # InvalidValue is a ValueError
        raise Abort(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                "A ChromaDB record is not a memory this program can read "
                "(was the collection written by another tool?).",
                cause=f"{type(error).__name__}: {error}",
            )
        ) from error


def _filter_plain(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The plain fields both formats keep as top-level keys (the ones `where` filters on), read as they always were:
    text and flags taken as text and truth values, a missing one as its default."""
    return {
        "path": str(meta.get("path", "")),
        "agent": str(meta.get("agent", "")),
        "personality": str(meta.get("personality", "")),
        "project": str(meta.get("project", "")),
        "type": str(meta.get("type", "")),
        "global": bool(meta.get("global", False)),
        "decay_policy": meta.get("decay_policy", DecayPolicy.STABLE.value),
        "deleted": bool(meta.get("deleted", False)),
    }


def _record_fields(raw: object) -> dict[str, Any]:
    if not isinstance(raw, str):
        raise TypeError(f"expected the record as a JSON string, got {type(raw).__name__}")
    try:
        fields = json.loads(raw)
    except RecursionError:  # absurdly nested JSON: malformed like any other
        raise ValueError("the record JSON is nested too deeply") from None
    if not isinstance(fields, dict):
        raise ValueError(f"expected the record as a JSON object, got {type(fields).__name__}")
    if fields.get("v") != RECORD_VERSION:
        raise ValueError(f"unknown record format version {fields.get('v')!r}")
    return fields


# --- the format before the `record` key (read only) -------------------------------------------


def _labels(raw: object) -> list[str]:
    if not isinstance(raw, str):
        raise ValueError(f"expected a JSON list, got {raw!r}")
    items = json.loads(raw)
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError(f"expected a JSON list of strings, got {raw!r}")
    return items


def _legacy_plain(memory_id: str, document: str | None, meta: Mapping[str, Any]) -> dict[str, Any]:
    """A record of the earlier format as a plain memory: one metadata key per field, lists as JSON strings."""
    return {
        "id": memory_id,
        "content": document if document is not None else "",
        "created_at": meta["created_at"],
        "updated_at": meta["updated_at"],
        "store": str(meta["store"]),
        "namespace": _labels(meta.get("namespace", "[]")),
        **_filter_plain(meta),
        "tags": _labels(meta.get("tags_json", "[]")),
        "source": str(meta.get("source", "")),
        "citations": _labels(meta.get("citations", "[]")),
        "last_reinforced_at": meta.get("last_reinforced_at", ""),
        "expires_at": meta.get("expires_at", ""),
        "deleted_at": meta.get("deleted_at", ""),
    }


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


def ranked(result: Any, space: str, limit: int) -> list[tuple[Memory, float]]:
    """The memories of one Chroma query answer with their similarities, best first, at most `limit`."""
    ids = result["ids"][0] if result["ids"] else []
    documents = (result["documents"] or [[]])[0]
    metadatas = (result["metadatas"] or [[]])[0]
    distances = (result["distances"] or [[]])[0]
    pairs = [
        (memory, similarity_from_distance(float(distance), space))
        for memory, distance in zip(memories_of(ids, documents, metadatas), distances, strict=True)
    ]
    pairs.sort(key=lambda pair: pair[1], reverse=True)
    return pairs[:limit]
