"""The LangGraph store's TTLs: an item's TTL is its memory's expiry, renewed by a read, and swept for good.

A read that renews a TTL changes the expiry only: the item's `updated_at` stays (as SqliteStore leaves it), so the
renewal is an in-process UpdateMemories that does not touch the memory. `sweep_ttl` deletes for good every item
whose TTL ran out; `AsyncMemoryStore` (aio.py) awaits the same work.
"""

from __future__ import annotations

from datetime import timedelta

from returns.result import Failure

from agent_memory.domain.batch_writes import RemoveMemories, UpdateMemories
from agent_memory.domain.commands import ListMemories, UpdateMemory
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.model import Memory
from agent_memory.entrypoints.langgraph.ops import absent_code
from agent_memory.entrypoints.langgraph.writes import ItemStore
from agent_memory.entrypoints.tooling.items import extras_of, put_key
from agent_memory.entrypoints.tooling.tool_errors import succeeded


def renewed(store: ItemStore, memories: list[Memory]) -> list[Memory]:
    """The memories with their expiry renewed by their items' TTLs (a read counts as use), `updated_at` kept; one
    without a TTL as it was, and one deleted or expired meanwhile as it was read."""
    now = store.service.clock.now()
    renewing: list[tuple[int, UpdateMemory]] = []
    for at, memory in enumerate(memories):
        minutes = extras_of(memory).get("ttl")
        if isinstance(minutes, int | float):
            expires_at = now + timedelta(minutes=minutes)
            renewing.append(
                (
                    at,
                    UpdateMemory(
                        ref=memory.id, store=store.store_name, namespace=memory.namespace, expires_at=expires_at
                    ),
                )
            )
    if not renewing:
        return memories
    answer = list(memories)
    together = dispatch(store.service, UpdateMemories(updates=tuple(u for _, u in renewing), touch=False))
    if not isinstance(together, Failure):
        for (at, _), view in zip(renewing, together.unwrap(), strict=True):
            answer[at] = view.memory
        return answer
    for at, update in renewing:  # one of them is gone meanwhile: the others one by one
        alone = dispatch(store.service, UpdateMemories(updates=(update,), touch=False))
        if isinstance(alone, Failure) and absent_code(alone.failure()):
            continue
        answer[at] = succeeded(alone)[0].memory
    return answer


def sweep(store: ItemStore) -> int:
    """Delete every item whose TTL ran out (its memory expired) for good; how many were deleted."""
    listed = ListMemories(category=store.category, store=store.store_name, include_expired=True)
    listing = dispatch(store.service, listed)
    if isinstance(listing, Failure) and absent_code(listing.failure()):
        return 0
    now = store.service.clock.now()
    expired = [
        view.memory
        for view in succeeded(listing).memories
        if view.memory.is_expired(now) and put_key(view.memory, category=store.category) is not None
    ]
    if not expired:
        return 0
    removed = dispatch(store.service, RemoveMemories(refs=tuple(m.id for m in expired), store=store.store_name))
    return 0 if isinstance(removed, Failure) else len(removed.unwrap())
