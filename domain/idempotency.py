"""Creates a caller may retry: an idempotency key names one memory (its id derived from the key), so a retried
create answers the memory the first stored and stores nothing twice, whatever happened to the first's answer."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Sequence

import attrs
from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.context import Context
from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.domain.model import Memory, check_store_name
from agent_memory.domain.ports import IdempotencyKeys
from agent_memory.domain.results import validated
from agent_memory.domain.tenancy import new_memory_namespace
from agent_memory.domain.views import MemoryView

MAX_KEY_CHARS = 255
KEYS_ARE_SINGLE = (
    "An idempotency key makes one create safe to retry; a batch of creates takes none. Create them one at a time "
    "with a key each, or drop the keys."
)
_IDS = uuid.UUID("6f1d7c3e-2b8a-4f5e-9c0d-1a2b3c4d5e6f")  # the namespace of the ids keys derive

# What a create finds already stored under the store's write lock, before it writes (None: nothing, write): a keyed
# create's first attempt's memory, if it stored one.
Found = Callable[[], Result[MemoryView | None, DomainError]]
# A create, given what to look for under the lock before it writes.
KeyedCreate = Callable[[CreateMemory, Found], Result[MemoryView, DomainError]]


def nothing_found() -> Result[MemoryView | None, DomainError]:
    """What an unkeyed create finds before it writes: nothing (it always writes)."""
    return Success(None)


def keyed_memory_id(store: str, namespace: tuple[str, ...], key: str) -> str:
    """The id of the memory a keyed create stores: the same for every retry of it (per store and namespace)."""
    derived = uuid.uuid5(_IDS, repr((store, tuple(namespace), key)))
    return str(uuid.UUID(bytes=derived.bytes, version=4))  # shaped as every other id (random ones are version 4)


def fingerprint(command: CreateMemory) -> str:
    """What a retry must repeat: every field of the create but its key."""
    plain = attrs.asdict(evolve(command, idempotency_key=None), recurse=True)
    return hashlib.sha256(repr(sorted(plain.items())).encode()).hexdigest()


def check_key(raw: str) -> Result[str, DomainError]:
    key = raw.strip()
    if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
        return Failure(
            invalid_input(
                f"An idempotency key is 1 to {MAX_KEY_CHARS} printable characters (a UUID is a good one); "
                f"got {raw[:40]!r}."
            )
        )
    return Success(key)


def keyed_create(
    ctx: Context,
    keys: IdempotencyKeys,
    command: CreateMemory,
    create: KeyedCreate,
) -> Result[MemoryView, DomainError]:
    """`create(command, found)` unless a create with the same key already stored its memory: then that memory, as it
    is now (`found`, which the create runs under the store's write lock before it writes; its embedding comes
    before the lock). The key is remembered with the request's fingerprint first, so a key reused for another
    request is refused (INVALID_OPERATION, 409 over REST) rather than answered with a memory the caller did not ask
    for."""
    assert command.idempotency_key is not None
    return Result.do(
        (store, namespace, evolve(command, idempotency_key=key))
        for key in check_key(command.idempotency_key)
        for store in validated(lambda: check_store_name(command.store or ctx.policy.default_store))
        for namespace in new_memory_namespace(ctx.tenant, command.namespace)
    ).bind(lambda found: _keyed(ctx, keys, *found, create))


def _keyed(
    ctx: Context,
    keys: IdempotencyKeys,
    store: str,
    namespace: tuple[str, ...],
    keyed: CreateMemory,
    create: KeyedCreate,
) -> Result[MemoryView, DomainError]:
    key, mine = keyed.idempotency_key or "", fingerprint(keyed)
    return (
        keys.remember(store, keyed_memory_id(store, namespace, key), mine)
        .bind(lambda stored: _same_request(key, stored, mine))
        .bind(lambda _: create(keyed, lambda: _stored(ctx, store, keyed_memory_id(store, namespace, key))))
    )


def _same_request(key: str, stored: str, mine: str) -> Result[None, DomainError]:
    if stored == mine:
        return Success(None)
    return Failure(
        DomainError(
            ErrorCode.INVALID_OPERATION,
            f"The idempotency key {key!r} was already used for a different create (other content or fields). "
            "Repeat that request exactly to get its memory, or use a new key for a new memory.",
        )
    )


def _stored(ctx: Context, store: str, memory_id: str) -> Result[MemoryView | None, DomainError]:
    """Under the store's write lock: the memory the key names if a first create stored it, else None."""
    found = ctx.open(store, create=False).bind(lambda opened: opened.get([memory_id]))  # a dead batch rolled back first
    match found:
        case Success([memory, *_]):
            return Success(ctx.view(memory))
        case Failure(error) if error.code is not ErrorCode.STORE_NOT_FOUND:
            return Failure(error)
    return Success(None)


def how_to_check(memories: Sequence[Memory], error: DomainError) -> Result[list[None], DomainError]:
    """An OUTCOME_UNKNOWN create says which memories may have been stored, so the caller can look them up."""
    if error.code is not ErrorCode.OUTCOME_UNKNOWN:
        return Failure(error)
    named = [f"{memory.path} (id {memory.id})" if memory.path else memory.id for memory in memories]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    noun = "it" if len(named) == 1 else "them"
    return Failure(evolve(error, message=f"{error.message} Look {noun} up as: {shown}."))
