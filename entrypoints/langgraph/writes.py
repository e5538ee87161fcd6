"""The LangGraph store's puts and deletes of a batch written together: one create, one update and one removal per
run of puts of different keys, instead of one store write per item.

A batch's puts of different keys commute, so each item is looked up once and its put sorted into what it does: a
new item is created, an item `put` made is updated over (re-embedded only when its text changed) and a delete of
one removes it for good, each kind as one command (CreateMemories, UpdateMemories, RemoveMemories: one store write
each, where one per item cost an embedded Chroma commit apiece). A put over a memory keyed by its id, and any kind
whose command is refused (another writer changed one of its items meanwhile), are left to the store's own put, one
by one, which settles such races (`upserted`: create, or update when another writer's create won).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any, Protocol

from langgraph.store.base import PutOp
from returns.result import Failure

from agent_memory.domain.batch_writes import RemoveMemories, UpdateMemories
from agent_memory.domain.commands import CreateMemories, CreateMemory, ListMemories, UpdateMemory
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.langgraph.ops import SOURCE, absent_code, id_key
from agent_memory.entrypoints.tooling.items import encoded, item_path, put_key, readable_key
from agent_memory.entrypoints.tooling.tool_errors import invalid, succeeded

UPSERT_ROUNDS = 64  # create/update turns a put takes while other writers create and delete its key
LISTED_FROM = 8  # puts of one namespace in a run from which its items are listed at once, not looked up singly


class ItemStore(Protocol):
    """What the writes (and the TTLs, ttl.py) read of the LangGraph store (store.py's MemoryStore)."""

    @property
    def service(self) -> MemoryService: ...

    @property
    def category(self) -> str: ...

    @property
    def store_name(self) -> str | None: ...

    @property
    def decay_policy(self) -> str: ...

    def _memory(self, namespace: tuple[str, ...], key: str) -> Memory | None: ...


def written_together(store: ItemStore, run: list[PutOp]) -> set[int]:
    """Of a run of puts of different keys, the ids of those done here together (their result is None); the others
    are for the store's own put."""
    if len(run) < 2:
        return set()
    creates: list[PutOp] = []
    updates: list[tuple[PutOp, Memory]] = []
    removes: list[tuple[PutOp, Memory]] = []
    done: set[int] = set()
    known = _listed(store, run)
    for op in run:
        namespace = tuple(op.namespace)
        held = known[namespace].get(op.key) if namespace in known else None
        if held is None and (namespace not in known or id_key(op.key)):
            held = store._memory(namespace, op.key)
        if held is not None and put_key(held, category=store.category) is None:
            continue  # a memory keyed by its id: the store's own put
        if op.value is None:
            if held is None:
                done.add(id(op))  # nothing to delete
            else:
                removes.append((op, held))
        elif held is None:
            creates.append(op)
        else:
            updates.append((op, held))
    done |= _created(store, creates) | _updated(store, updates) | _removed(store, removes)
    return done


def _listed(store: ItemStore, run: list[PutOp]) -> dict[tuple[str, ...], dict[str, Memory]]:
    """The items `put` made in each namespace at least LISTED_FROM of the run's puts name, by key: one listing of
    the namespace instead of a lookup per item (a lookup by path scans the store on the files backend and in
    Qdrant's local mode, so a batch's lookups cost its size times the store's)."""
    counts = Counter(tuple(op.namespace) for op in run)
    known: dict[tuple[str, ...], dict[str, Memory]] = {}
    for namespace, count in counts.items():
        if count < LISTED_FROM:
            continue
        listing = dispatch(
            store.service,
            ListMemories(category=store.category, store=store.store_name, namespace=namespace, include_expired=True),
        )
        if isinstance(listing, Failure):
            if not absent_code(listing.failure()):
                continue  # looked up one by one instead
            known[namespace] = {}
            continue
        keyed = known[namespace] = {}
        for view in listing.unwrap().memories:
            key = put_key(view.memory, category=store.category)
            if key is not None and view.memory.namespace == namespace:
                keyed[key] = view.memory
    return known


def _expiry(store: ItemStore, op: PutOp) -> object:
    return None if op.ttl is None else store.service.clock.now() + timedelta(minutes=op.ttl)


def _content(op: PutOp) -> str:
    return encoded(op.key, op.value, {"index": op.index, "ttl": op.ttl}, plain=readable_key(op.key))


def _created(store: ItemStore, ops: list[PutOp]) -> set[int]:
    if not ops:
        return set()
    creates = tuple(
        CreateMemory(
            content=_content(op),
            namespace=tuple(op.namespace),
            path=item_path(op.namespace, op.key, category=store.category),
            store=store.store_name,
            source=SOURCE,
            decay_policy=store.decay_policy,
            expires_at=_expiry(store, op),  # type: ignore[arg-type]
            on_duplicate="keep",  # an item's key is its identity: a put is stored under it, like or not
        )
        for op in ops
    )
    created = dispatch(store.service, CreateMemories(memories=creates))
    return set() if isinstance(created, Failure) else {id(op) for op in ops}


def _updated(store: ItemStore, pairs: list[tuple[PutOp, Memory]]) -> set[int]:
    if not pairs:
        return set()
    updates = []
    for op, held in pairs:
        expires_at = _expiry(store, op)
        updates.append(
            UpdateMemory(
                ref=held.id,
                store=store.store_name,
                namespace=held.namespace,
                content=_content(op),
                include_expired=True,
                expires_at=expires_at,  # type: ignore[arg-type]
                clear_expiry=expires_at is None,
            )
        )
    updated = dispatch(store.service, UpdateMemories(updates=tuple(updates)))
    return set() if isinstance(updated, Failure) else {id(op) for op, _ in pairs}


def _removed(store: ItemStore, pairs: list[tuple[PutOp, Memory]]) -> set[int]:
    if not pairs:
        return set()
    removed = dispatch(store.service, RemoveMemories(refs=tuple(held.id for _, held in pairs), store=store.store_name))
    return set() if isinstance(removed, Failure) else {id(op) for op, _ in pairs}


def upserted(store: ItemStore, namespace: tuple[str, ...], key: str, content: str, expires_at: Any) -> None:
    """One put of an item: create it at its path, or update the memory there (another writer's create won the
    race), for up to UPSERT_ROUNDS turns while other writers create and delete its key."""
    path = item_path(namespace, key, category=store.category)
    exists = store._memory(namespace, key) is not None
    for _ in range(UPSERT_ROUNDS):
        if not exists:
            created = dispatch(
                store.service,
                CreateMemory(
                    content=content,
                    namespace=namespace,
                    path=path,
                    store=store.store_name,
                    source=SOURCE,
                    decay_policy=store.decay_policy,
                    expires_at=expires_at,
                    on_duplicate="keep",  # an item's key is its identity: a put is stored under it, like or not
                ),
            )
            if not (isinstance(created, Failure) and created.failure().code is ErrorCode.DESTINATION_EXISTS):
                succeeded(created)
                return
            # another writer created it since we looked: theirs is updated over, as a put does
        command = UpdateMemory(
            ref=path,
            store=store.store_name,
            namespace=namespace,
            content=content,
            include_expired=True,
            expires_at=expires_at,
            clear_expiry=expires_at is None,
        )
        updated = dispatch(store.service, command)
        if not (isinstance(updated, Failure) and absent_code(updated.failure())):
            succeeded(updated)
            return
        exists = False  # a concurrent delete won since we looked: the put creates it again
    raise invalid(f"The item {key!r} kept being created and deleted by other writers; put it again.")
