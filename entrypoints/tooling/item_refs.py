"""What a manage_memory id names (decision 25): a memory's id or path, or the key `store.put` wrote an item under,
and the update that changes its content while keeping it the item it is."""

from __future__ import annotations

import json
from typing import Any

from returns.result import Failure, Result

from agent_memory.domain.commands import GetMemory, UpdateMemory
from agent_memory.domain.context import is_memory_id
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.tooling.items import (
    STRUCTURED_SOURCE,
    encoded,
    envelope_of,
    extras_of,
    item_path,
    key_and_value,
    put_key,
    readable_key,
)
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError, succeeded


def resolved(
    service: MemoryService, ref: str, namespace: tuple[str, ...], store: str | None, category: str
) -> Memory | None:
    """The memory `ref` names in the namespace: by id or path, or the item `store.put` wrote under that key."""
    refs = [item_path(namespace, ref, category=category), ref]
    if is_memory_id(ref):
        refs.reverse()
    for each in refs:
        found = dispatch(service, GetMemory(ref=each, store=store, namespace=namespace))
        if unknown(found) or (each != ref and isinstance(found, Failure)):  # no item of that key
            continue
        memory: Memory = guarded(found, ref, namespace).memory
        if each == ref or item_key(memory, category) == ref:
            return memory
    return None


def item_key(memory: Memory, category: str) -> str:
    """The memory's key as an item (its id, unless `store.put` wrote it under a key)."""
    return key_and_value(memory, category=category)[0]


def content_update(
    memory: Memory,
    content: str,
    category: str,
    *,
    store: str | None,
    type: str | None,
    tags: tuple[str, ...] | None,
    structured: bool,
) -> UpdateMemory:
    """The update that gives a memory new content; one kept as an item's JSON envelope stays one, its value then
    `{"content": …}` as LangMem's update writes it (its key, TTL and index kept)."""
    key = put_key(memory, category=category)
    found = envelope_of(memory.content)
    if key is None and (found is None or found["key"] != memory.id):
        source = STRUCTURED_SOURCE if structured else ""
        return UpdateMemory(
            ref=memory.id, content=content, namespace=memory.namespace, store=store, type=type, tags=tags, source=source
        )
    value = {"content": json.loads(content) if structured else content}
    kept = encoded(key or memory.id, value, extras_of(memory), plain=key is None or readable_key(key))
    return UpdateMemory(ref=memory.id, content=kept, namespace=memory.namespace, store=store, type=type, tags=tags)


def unknown(result: Result[Any, DomainError]) -> bool:
    """No such memory in the namespace (or the store was never written to): LangMem's unknown id."""
    return isinstance(result, Failure) and result.failure().code in (
        ErrorCode.MEMORY_NOT_FOUND,
        ErrorCode.STORE_NOT_FOUND,
    )


def guarded(result: Result[Any, DomainError], ref: str, namespace: tuple[str, ...]) -> Any:
    """A memory outside the caller's namespace reads as not found: tenants never learn of each other."""
    if isinstance(result, Failure) and result.failure().code is ErrorCode.MEMORY_NOT_FOUND:
        raise MemoryToolError(
            ErrorCode.MEMORY_NOT_FOUND,
            f"No memory {ref} in namespace {list(namespace)}: use an id returned by search_memory or create.",
        )
    return succeeded(result)


__all__ = ["content_update", "guarded", "item_key", "resolved", "unknown"]
