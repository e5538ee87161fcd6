"""The JSON edge: one cattrs converter that turns domain results into the documented JSON shapes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, cast

from cattrs import Converter

from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import MatchedPart, Memory, ScoredMemory
from agent_memory.domain.paths import MemoryPath, memory_path
from agent_memory.domain.views import (
    CategorySummary,
    Duplicate,
    Listing,
    MemoryView,
    Progress,
    PruneReport,
    ReindexReport,
    SearchResults,
    Status,
    StoreSummary,
)
from agent_memory.entrypoints.seams import register_memory_shape
from agent_memory.entrypoints.timestamps import iso_z as iso_z
from agent_memory.entrypoints.timestamps import parse_iso as parse_iso

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(value: Any) -> bool:
    """Whether a string, or any key or string inside JSON-like lists and dicts, holds a lone surrogate: bytes that
    were not UTF-8 (decoded with surrogateescape) or a JSON escape like \\ud800. No storage or model can take one."""
    if isinstance(value, str):
        return bool(_SURROGATE.search(value))
    if isinstance(value, dict):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_lone_surrogate(item) for item in value)
    return False


def _make_converter() -> Converter:
    converter = Converter()
    converter.register_unstructure_hook(datetime, iso_z)
    converter.register_structure_hook(datetime, lambda raw, _t: parse_iso(raw))
    converter.register_unstructure_hook(MemoryPath, str)
    converter.register_structure_hook(MemoryPath, lambda raw, _t: memory_path(str(raw)))
    converter.register_structure_hook_func(lambda kind: kind == Progress, _progress)  # no door offers it
    return register_memory_shape(converter)  # the shape the storage converter has too: lists, "global"


def _progress(raw: Any, _type: Any) -> Progress:
    """A command's progress callback as it was handed over (a door that offered it would hand over a function)."""
    if not callable(raw):
        raise TypeError("progress is a callback, not a value")
    return cast(Progress, raw)


JSON = _make_converter()


def memory_json(memory: Memory) -> dict[str, Any]:
    """Every stored field of a memory, `global_` spelled `global`."""
    data: dict[str, Any] = JSON.unstructure(memory)
    data["namespace"] = list(memory.namespace)
    return data


def view_json(view: MemoryView) -> dict[str, Any]:
    """A memory as read now: its fields plus the computed confidence; a create's answer that found near-duplicates
    also names them (id, path, similarity, most similar first) and says what it did (on_duplicate: kept, skipped
    or updated). An answer that found none has neither key, as before the check existed."""
    data = {**memory_json(view.memory), "confidence": view.confidence}
    if view.duplicates:
        data["duplicates"] = [duplicate_json(duplicate) for duplicate in view.duplicates]
        data["on_duplicate"] = view.on_duplicate
    return data


def duplicate_json(duplicate: Duplicate) -> dict[str, Any]:
    return {"id": duplicate.id, "path": duplicate.path, "similarity": duplicate.similarity}


def duplicates_json(duplicates: tuple[Duplicate, ...]) -> dict[str, Any]:
    """find_duplicates' answer: the near-duplicates, most similar first, and how many."""
    return {"duplicates": [duplicate_json(duplicate) for duplicate in duplicates], "count": len(duplicates)}


def scored_json(hit: ScoredMemory) -> dict[str, Any]:
    """A hit: its memory, confidence, relevance (the one figure to read, 0 to 1 on the model's calibrated scale),
    similarity (the raw cosine), score (the ranker's own, for its order only) and matched_part: the part of a long
    memory that answered (its text, at most 300 characters, and where it lies in the content: start, end), null when
    the memory as a whole did."""
    return {
        **memory_json(hit.memory),
        "confidence": hit.confidence,
        "relevance": hit.relevance,
        "similarity": hit.similarity,
        "score": hit.score,
        "matched_part": matched_part_json(hit.part),
    }


def matched_part_json(part: MatchedPart | None) -> dict[str, Any] | None:
    """The part of a long memory that answered a search: its text (bounded), start and end in the content."""
    return None if part is None else {"text": part.text, "start": part.start, "end": part.end}


def search_json(results: SearchResults) -> dict[str, Any]:
    """Spec 000's {"results", "count"}, and `"broad": true` when the hits answer a question that named no subject
    (the scope's memories by what matters; absent otherwise, so spec 000's answers keep their exact shape)."""
    found = {"results": [scored_json(hit) for hit in results.results], "count": results.count}
    return found | {"broad": True} if results.broad else found


def status_json(status: Status) -> dict[str, Any]:
    """healthy, or degraded with the problems verification found (each saying what to run); a store that works
    but wants something run is healthy, with its `warnings` (present only when there are some, as `problems`)."""
    body: dict[str, Any] = {
        "status": "degraded" if status.problems else "healthy",
        "backend": status.backend,
        **dict(status.location),
        "store": status.store,
        "memory_count": status.memory_count,  # live memories: neither soft-deleted nor expired
        "deleted_count": status.deleted_count,
        "expired_count": status.expired_count,
    }
    if status.problems:
        body["problems"] = list(status.problems)
    if status.warnings:
        body["warnings"] = list(status.warnings)
    return body


def outcome_json(outcome: Any) -> dict[str, Any]:
    """Any command's answer as JSON, for a command no door presents in its own shape: its attrs fields as an object
    (a memory's as `memory_json` gives them), anything else as {"result": …}, a list's items each by its own class."""
    data = (
        [JSON.unstructure(item) for item in outcome] if isinstance(outcome, tuple | list) else JSON.unstructure(outcome)
    )
    return data if isinstance(data, dict) else {"result": data}


def error_json(error: DomainError) -> dict[str, Any]:
    """The CLI's error body: {"error": message} as spec 000 shows it, and the code a script can branch on."""
    return {"error": error.message, "code": error.code.value}


def category_json(summary: CategorySummary) -> dict[str, Any]:
    return {"path": summary.path, "memory_count": summary.memory_count, "description": summary.description}


def category_deleted_json(summary: CategorySummary, *, purged: bool) -> dict[str, Any]:
    """A category delete's answer: how many memories it deleted, and whether they can be restored (not once purged)."""
    return {**category_json(summary), "deleted": True, "restorable": not purged}


def listing_json(listing: Listing) -> dict[str, Any]:
    return {
        "category": listing.category,
        "description": listing.description,
        "memories": [view_json(v) for v in listing.memories],
        "count": len(listing.memories),
        "subcategories": [category_json(s) for s in listing.subcategories],
    }


def recent_json(views: tuple[MemoryView, ...]) -> dict[str, Any]:
    return {"memories": [view_json(v) for v in views], "count": len(views)}


def prune_json(report: PruneReport) -> dict[str, Any]:
    pruned = [
        {
            "id": m.id,
            "path": None if m.path is None else str(m.path),
            "expires_at": m.expires_at and iso_z(m.expires_at),
        }
        for m in report.memories
    ]
    return {"dry_run": report.dry_run, "pruned": pruned, "count": len(pruned)}


def reindex_json(report: ReindexReport) -> dict[str, Any]:
    body = {"store": report.store, "memory_count": report.memory_count, "embedding_model": report.embedding_model}
    body |= {"renamed": list(report.renamed)} if report.renamed else {}
    return body | {"rolled_back": list(report.rolled_back)} if report.rolled_back else body


def stores_json(stores: tuple[StoreSummary, ...]) -> dict[str, Any]:
    listed = [
        {
            "name": s.name,
            "memory_count": s.memory_count,
            "deleted_count": s.deleted_count,
            "expired_count": s.expired_count,
        }
        for s in stores
    ]
    return {"stores": listed, "count": len(stores)}


def deleted_json(memory: Memory) -> dict[str, Any]:
    """A soft delete's answer: the memory stays stored, hidden (decision 13)."""
    return {"id": memory.id, "deleted": True}


def removed_json(memory: Memory) -> dict[str, Any]:
    return {"id": memory.id, "path": None if memory.path is None else str(memory.path), "removed": True}
