"""The service: the public facade the entrypoints call, each use case handed to the unit that does it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial, update_wrapper
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from attrs import evolve, field, frozen
from returns.result import Result

from agent_memory.domain.batches import InProcessJournal
from agent_memory.domain.context import Context, SearchPolicy
from agent_memory.domain.errors import DomainError
from agent_memory.domain.locks import ThreadWriteLocks
from agent_memory.domain.maintenance import Maintenance
from agent_memory.domain.ports import BatchJournal, Clock, Embedder, KeywordIndex, StoreCatalog, WriteLocks
from agent_memory.domain.reading import Reading
from agent_memory.domain.results import validated
from agent_memory.domain.search.searching import Searching
from agent_memory.domain.stores import Stores
from agent_memory.domain.tenancy import Guard, check_pin
from agent_memory.domain.transfer import Transfer
from agent_memory.domain.writing import Writing

__all__ = ["MemoryService", "SearchPolicy"]

P = ParamSpec("P")
R = TypeVar("R")
U = TypeVar("U")


class _HandedTo(Generic[U, P, R]):
    """A MemoryService method that hands each call to a use-case unit's method, with that method's signature.

    `service.create(command)` runs `Writing(service's context).create(command)`; `MemoryService.create` is
    the same call with the service as first argument. The signature and docstring are the unit method's.
    """

    def __init__(self, unit: Callable[[Context], U], method: Callable[Concatenate[U, P], R]) -> None:
        self.unit, self.method = unit, method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, service: None, owner: type[MemoryService]) -> Callable[Concatenate[MemoryService, P], R]: ...

    @overload
    def __get__(self, service: MemoryService, owner: type[MemoryService]) -> Callable[P, R]: ...

    def __get__(self, service: MemoryService | None, owner: type[MemoryService]) -> Callable[..., R]:
        if service is None:
            return update_wrapper(partial(_call_on, self), self.method)
        return partial(self.method, self.unit(service.context))


def _call_on(handed: _HandedTo[Any, P, R], service: MemoryService, *args: P.args, **kwargs: P.kwargs) -> R:
    return handed.method(handed.unit(service.context), *args, **kwargs)


@frozen(kw_only=True)
class MemoryService:
    """The use cases over the ports. Every method returns a Result; none raises for bad input.

    Each method is a unit's — Writing, Reading, Searching, Stores, Maintenance or Transfer — and every unit
    runs on the one `Context` (the ports, the policy and the pin) built from these fields.
    """

    catalog: StoreCatalog
    embedder: Embedder
    clock: Clock
    policy: SearchPolicy = field(factory=SearchPolicy)
    keywords: KeywordIndex | None = None
    locks: WriteLocks = field(factory=ThreadWriteLocks)
    journal: BatchJournal = field(factory=InProcessJournal)
    tenant: Guard = None
    context: Context = field(init=False, repr=False, eq=False)

    @context.default
    def _build_context(self) -> Context:
        return Context(
            catalog=self.catalog,
            embedder=self.embedder,
            clock=self.clock,
            policy=self.policy,
            keywords=self.keywords,
            locks=self.locks,
            tenant=self.tenant,
            journal=self.journal,
        )

    def within(self, namespace: Sequence[str] | None) -> Result[MemoryService, DomainError]:
        """The same service pinned to a namespace: every use case then acts only on it and those below it,
        whatever namespace a caller gives (a caller may narrow it, never leave it). None keeps this service;
        an empty namespace is refused, and a pinned service can only be pinned further down."""
        if namespace is None:
            return Result.from_value(self)
        return validated(lambda: check_pin(namespace)).bind(
            lambda pin: self.context.guard(pin).map(lambda guard: evolve(self, tenant=guard))
        )

    create = _HandedTo(Writing, Writing.create)
    create_many = _HandedTo(Writing, Writing.create_many)
    add = _HandedTo(Writing, Writing.add)
    update = _HandedTo(Writing, Writing.update)
    move = _HandedTo(Writing, Writing.move)
    reinforce = _HandedTo(Writing, Writing.reinforce)
    delete = _HandedTo(Writing, Writing.delete)
    remove = _HandedTo(Writing, Writing.remove)

    get = _HandedTo(Reading, Reading.get)
    list = _HandedTo(Reading, Reading.list)
    recent = _HandedTo(Reading, Reading.recent)
    search = _HandedTo(Searching, Searching.search)

    list_stores = _HandedTo(Stores, Stores.list_stores)
    create_store = _HandedTo(Stores, Stores.create_store)
    create_category = _HandedTo(Stores, Stores.create_category)
    describe_category = _HandedTo(Stores, Stores.describe_category)
    delete_category = _HandedTo(Stores, Stores.delete_category)

    status = _HandedTo(Maintenance, Maintenance.status)
    prune = _HandedTo(Maintenance, Maintenance.prune)
    reindex = _HandedTo(Maintenance, Maintenance.reindex)

    export = _HandedTo(Transfer, Transfer.export)
    export_outlines = _HandedTo(Transfer, Transfer.export_outlines)
    import_outlines = _HandedTo(Transfer, Transfer.import_outlines)
    import_memories = _HandedTo(Transfer, Transfer.import_memories)
