"""The table of handlers: every command type mapped to the function that does it, and `dispatch`, the one way in.

A handler is a function of `(context, command)` returning a Result of what the command `Asks` for, its failures
typed DomainErrors. Every door builds a command from its caller's input and hands it to `dispatch`; the doors list
their tools, subcommands and routes from this table, so a command registered here reaches them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from returns.result import Result

from agent_memory.domain import commands as c
from agent_memory.domain.batch_writes import RemoveMemories, UpdateMemories, remove_memories, update_memories
from agent_memory.domain.context import Context
from agent_memory.domain.creating import create_memories, create_memory
from agent_memory.domain.deleting import delete_memory, remove_memory, restore_memory
from agent_memory.domain.errors import DomainError
from agent_memory.domain.maintenance import prune_memories, reindex_store, store_status
from agent_memory.domain.reading import find_duplicates, get_memory, list_memories, recent_memories
from agent_memory.domain.search.searching import search_memories
from agent_memory.domain.stores import create_category, create_store, delete_category, describe_category, list_stores
from agent_memory.domain.transfer import export_memories, import_memories
from agent_memory.domain.updating import move_memory, reinforce_memory, update_memory

T = TypeVar("T")
C = TypeVar("C", bound=c.Asks[Any])

Handler = Callable[[Context, Any], Result[Any, DomainError]]

HANDLERS: dict[type[c.Asks[Any]], Handler] = {
    c.CreateMemory: create_memory,
    c.CreateMemories: create_memories,
    c.SearchMemories: search_memories,
    c.UpdateMemory: update_memory,
    c.GetMemory: get_memory,
    c.ListMemories: list_memories,
    c.RecentMemories: recent_memories,
    c.MoveMemory: move_memory,
    c.ReinforceMemory: reinforce_memory,
    c.DeleteMemory: delete_memory,
    c.RestoreMemory: restore_memory,
    c.RemoveMemory: remove_memory,
    c.FindDuplicates: find_duplicates,
    c.PruneMemories: prune_memories,
    c.ReindexStore: reindex_store,
    c.StoreStatus: store_status,
    c.ListStores: list_stores,
    c.CreateStore: create_store,
    c.CreateCategory: create_category,
    c.DescribeCategory: describe_category,
    c.DeleteCategory: delete_category,
    c.ExportMemories: export_memories,
    c.ImportMemories: import_memories,
}


# commands only in-process callers run (many writes in one, their fields records): no door lists them, dispatch
# runs them (domain/batch_writes.py)
IN_PROCESS: dict[type[c.Asks[Any]], Handler] = {UpdateMemories: update_memories, RemoveMemories: remove_memories}


def commands() -> tuple[type[c.Asks[Any]], ...]:
    """Every command of the table, in its order (read at call time: a command registered later is in it)."""
    return tuple(HANDLERS)


def register(command: type[C], handler: Callable[[Context, C], Result[Any, DomainError]]) -> None:
    """Add a command and its handler to the table (an app's own command, or a test's)."""
    HANDLERS[command] = handler


class HasContext(Protocol):
    """What `dispatch` runs a command on besides a bare Context: anything holding one (the MemoryService)."""

    @property
    def context(self) -> Context: ...


def dispatch(on: Context | HasContext, command: c.Asks[T]) -> Result[T, DomainError]:
    """Run `command`'s handler on `on` (a service or its context): a Result of what the command asks for.

    A door builds the command from its caller's input, calls this, and renders the outcome; it never calls a
    handler another way, so every door does the same thing."""
    context = on if isinstance(on, Context) else on.context
    handler = next(  # a subclass: its base's
        table[kind] for kind in type(command).__mro__ for table in (HANDLERS, IN_PROCESS) if kind in table
    )
    # the table maps each command type to the handler of that type, which answers with what its `Asks[T]` names;
    # a dict cannot say so to mypy (its values share one type), hence this one cast
    return cast("Result[T, DomainError]", handler(context, command))
