"""What the agent tools, the MCP server's manage_memory and search_memory, and the LangGraph store share: LangMem's
manage and search calls over the use cases, namespaced, their failures raised as MemoryToolError."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.domain.commands import CreateMemory, DeleteMemory, SearchMemories
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.model import Memory, ScoredMemory
from agent_memory.domain.service import MemoryService
from agent_memory.domain.tenancy import EMPTY_GUARD
from agent_memory.entrypoints.json_codec import matched_part_json, memory_json
from agent_memory.entrypoints.tooling.duplicate_notes import created_sentence
from agent_memory.entrypoints.tooling.item_refs import content_update, guarded, item_key, resolved, unknown
from agent_memory.entrypoints.tooling.items import CATEGORY, STRUCTURED_SOURCE, key_and_value, shown_content
from agent_memory.entrypoints.tooling.langmem_filters import plan_filter
from agent_memory.entrypoints.tooling.tool_errors import invalid, succeeded

__all__ = [
    "ACTIONS",
    "MAX_WINDOW",
    "STRUCTURED_SOURCE",
    "check_action",
    "check_window",
    "fact_json",
    "run_manage",
    "run_search",
]

ACTIONS = ("create", "update", "delete")
MAX_WINDOW = 1000  # limit + offset, the most a search can reach (the service's MAX_SEARCH_LIMIT)


# --- manage ------------------------------------------------------------------------------------


def run_manage(
    service: MemoryService,
    namespace: tuple[str, ...],
    *,
    content: str | None = None,
    action: str = "create",
    id: str | None = None,
    store: str | None = None,
    permitted: Sequence[str] = ACTIONS,
    type: str | None = None,
    tags: Sequence[str] | None = None,
    structured: bool = False,
    category: str = CATEGORY,
    on_duplicate: str | None = None,
    idempotency_key: str | None = None,
) -> str:
    """Create, update or delete one memory inside `namespace`; returns the spec 003 sentence. `type` (what
    search_memory's filter calls category, e.g. 'preference') and `tags` are set on create and, given, on update.
    As in LangMem, an update of an id the namespace does not hold creates the memory (under a new id, which the
    sentence names) and a delete of one does nothing. `structured`: content is a schema's JSON (searches show
    it as the object). `id` is a memory's id or path, or the key `store.put` (LangMem's tools over a
    MemoryStore whose items sit in `category`) wrote an item under (decision 25). `on_duplicate` (keep, skip,
    update; None: the setting's) says what a create does when a memory of the namespace already says the same
    thing; the sentence then names that memory. `idempotency_key` (create): a retry with the same key answers the
    memory the first stored."""
    source = STRUCTURED_SOURCE if structured else ""
    check_action(action, permitted)
    if not namespace:  # refused as search_memory refuses it: a memory of no tenant would be every tenant's
        raise invalid(EMPTY_GUARD)
    if action == "create":
        if id is not None:
            raise invalid(
                f"create makes a new memory and takes no id (got {id}): omit id, "
                "or use action='update' to change an existing memory."
            )
        if content is None:
            raise invalid("create needs content: the text of the memory to store.")
        labels = _tags(tags)
        new = CreateMemory(
            content=content,
            namespace=namespace,
            store=store,
            type=type or "",
            tags=labels or (),
            source=source,
            on_duplicate=on_duplicate,
            idempotency_key=idempotency_key,
        )
        return created_sentence(succeeded(dispatch(service, new)))
    if id is None or not str(id).strip():
        raise invalid(f"{action} needs the id of the memory (as returned by create or search_memory).")
    ref = str(id).strip()
    memory = resolved(service, ref, namespace, store, category)
    if action == "update":
        if content is None:
            raise invalid("update needs content: the full new text of the memory.")
        if memory is None:  # LangMem's update is an upsert
            return run_manage(
                service,
                namespace,
                content=content,
                store=store,
                permitted=ACTIONS,
                type=type,
                tags=tags,
                structured=structured,
            )
        command = content_update(
            memory, content, category, store=store, type=type, tags=_tags(tags), structured=structured
        )
        updated = guarded(dispatch(service, command), ref, namespace).memory
        return f"updated memory {item_key(updated, category)}"
    soft = DeleteMemory(ref=ref if memory is None else memory.id, store=store, namespace=namespace)  # decision 13
    deleted = dispatch(service, soft)
    if unknown(deleted):  # LangMem's delete of an unknown id does nothing
        return f"Deleted memory {ref}"
    return f"Deleted memory {item_key(guarded(deleted, ref, namespace), category)}"


def _tags(raw: object) -> tuple[str, ...] | None:
    if raw is None:
        return None
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not all(isinstance(t, str) for t in raw):
        raise invalid(f"tags must be a list of strings, got {raw!r}.")
    return tuple(raw)


def check_action(action: str, permitted: Sequence[str]) -> None:
    if action not in ACTIONS:
        raise invalid(f"Unknown action {action!r}: use one of {', '.join(permitted)}.")
    if action not in permitted:
        raise invalid(f"The {action!r} action is not permitted for this tool; permitted: {', '.join(permitted)}.")


# --- search ------------------------------------------------------------------------------------


def run_search(
    service: MemoryService,
    namespace: tuple[str, ...],
    *,
    query: str,
    limit: int = 10,
    offset: int = 0,
    filter: Mapping[str, Any] | None = None,
    store: str | None = None,
    category: str = CATEGORY,
) -> tuple[str, list[Memory]]:
    """Hybrid search within `namespace` and its sub-namespaces; (JSON list of facts, the memories). Each fact's
    key and value are its memory's as a LangGraph item (items of a MemoryStore sit in `category`)."""
    check_window(limit, offset)
    plan = plan_filter(filter)
    window = offset + limit
    want = window if not plan.residual else min(max(window * 4, 40), MAX_WINDOW)
    while True:
        results = succeeded(dispatch(service, _search_command(query, namespace, store, want, plan.pushdown)))
        hits = [hit for hit in results.results if plan.matches(hit)]
        if len(hits) >= window or results.count < want or want >= MAX_WINDOW:
            break
        want = min(want * 4, MAX_WINDOW)
    page = hits[offset:window]
    facts = [fact_json(hit, category) for hit in page]
    return json.dumps(facts, ensure_ascii=False), [hit.memory for hit in page]


def check_window(limit: object, offset: object) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise invalid(f"limit must be a whole number of at least 1, got {limit!r}.")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise invalid(f"offset must be a whole number of at least 0, got {offset!r}.")
    if limit + offset > MAX_WINDOW:
        raise invalid(f"limit + offset must be at most {MAX_WINDOW}, got {limit + offset}.")


def _search_command(
    query: str, namespace: tuple[str, ...], store: str | None, limit: int, pushdown: Mapping[str, Any]
) -> SearchMemories:
    """Hybrid (vector + keyword) search, as spec 003 asks, with the pushed-down equalities."""
    return SearchMemories(query=query, namespace=namespace, store=store, limit=limit, mode="hybrid", **pushdown)


def fact_json(hit: ScoredMemory, category: str = CATEGORY) -> dict[str, Any]:
    """One search_memory result: namespace, id, content, metadata, created_at, updated_at, score, and LangMem's key
    and value: the memory as a LangGraph item reads (decision 25), its content the value's."""
    data = memory_json(hit.memory)
    top = {key: data.pop(key) for key in ("namespace", "id", "content", "created_at", "updated_at")}
    for hidden in ("deleted", "deleted_at"):
        data.pop(hidden, None)
    metadata = {**data, "confidence": hit.confidence, "relevance": hit.relevance, "similarity": hit.similarity}
    metadata["matched_part"] = matched_part_json(hit.part)  # which part of a long memory answered, or None
    key, value = key_and_value(hit.memory, category=category)
    return {
        **top,
        "content": shown_content(value),
        "key": key,
        "value": value,
        "metadata": metadata,
        "score": hit.score,
    }
