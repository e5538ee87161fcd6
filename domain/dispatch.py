"""The one dispatcher: every command handed to its use case on a service, whichever door it came through."""

from __future__ import annotations

from typing import TypeVar, cast

from returns.result import Result

from agent_memory.domain.commands import (
    AddMemory,
    Asks,
    Command,
    CreateCategory,
    CreateMemory,
    CreateStore,
    DeleteCategory,
    DeleteMemory,
    DescribeCategory,
    GetMemory,
    ListMemories,
    ListStores,
    MoveMemory,
    PruneMemories,
    RecentMemories,
    ReindexStore,
    ReinforceMemory,
    RemoveMemory,
    SearchMemories,
    StoreStatus,
    UpdateMemory,
)
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import (
    CategorySummary,
    Listing,
    MemoryView,
    PruneReport,
    ReindexReport,
    SearchResults,
    Status,
    StoreSummary,
)

T = TypeVar("T")

Outcome = (
    MemoryView
    | Memory
    | Listing
    | SearchResults
    | tuple[MemoryView, ...]
    | tuple[StoreSummary, ...]
    | StoreSummary
    | CategorySummary
    | PruneReport
    | ReindexReport
    | Status
)


def dispatch(service: MemoryService, command: Asks[T]) -> Result[T, DomainError]:
    """Run `command`'s use case on `service`: a Result of what the command asks for (its `Asks[T]`).

    A door builds the command from its caller's input, calls this, and renders the outcome; it never calls a use
    case another way, so every door does the same thing."""
    # every Asks is one of the Command union (tests/unit/test_command_table.py), and each case returns what its
    # command's Asks names; mypy cannot link the two, hence the casts
    return cast("Result[T, DomainError]", _run(service, cast("Command", command)))


def _run(service: MemoryService, command: Command) -> Result[Outcome, DomainError]:
    match command:
        case AddMemory():  # before CreateMemory, which it extends
            return service.add(command)
        case CreateMemory():
            return service.create(command)
        case SearchMemories():
            return service.search(command)
        case UpdateMemory():
            return service.update(command)
        case GetMemory(ref=ref, store=store, include_expired=expired, namespace=namespace):
            return service.get(ref, store=store, include_expired=expired, namespace=namespace)
        case ListMemories():
            return service.list(
                command.category,
                store=command.store,
                include_expired=command.include_expired,
                namespace=command.namespace,
                limit=command.limit,
                offset=command.offset,
            )
        case RecentMemories():
            return service.recent(
                store=command.store,
                limit=command.limit,
                category=command.category,
                include_expired=command.include_expired,
                namespace=command.namespace,
            )
        case MoveMemory():
            return service.move(
                command.ref,
                command.destination,
                store=command.store,
                namespace=command.namespace,
                include_expired=command.include_expired,
            )
        case ReinforceMemory(ref=ref, store=store, namespace=namespace):
            return service.reinforce(ref, store=store, namespace=namespace)
        case DeleteMemory(ref=ref, store=store, namespace=namespace, include_expired=expired):
            return service.delete(ref, store=store, namespace=namespace, include_expired=expired)
        case RemoveMemory(ref=ref, store=store, namespace=namespace):
            return service.remove(ref, store=store, namespace=namespace)
        case PruneMemories(store=store, dry_run=dry_run, namespace=namespace):
            return service.prune(store=store, dry_run=dry_run, namespace=namespace)
        case ReindexStore(store=store):
            return service.reindex(store=store)
        case StoreStatus(store=store, namespace=namespace):
            return service.status(store=store, namespace=namespace)
        case ListStores(namespace=namespace):
            return service.list_stores(namespace=namespace)
        case CreateStore(name=name):
            return service.create_store(name)
        case CreateCategory(category=category, description=description, store=store, namespace=namespace):
            return service.create_category(category, description=description, store=store, namespace=namespace)
        case DescribeCategory(category=category, description=description, store=store, namespace=namespace):
            return service.describe_category(category, description, store=store, namespace=namespace)
        case DeleteCategory(category=category, store=store, namespace=namespace):
            return service.delete_category(category, store=store, namespace=namespace)
