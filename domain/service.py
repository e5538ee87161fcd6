"""The service: every use case over one set of ports, as one object the entrypoints call."""

from __future__ import annotations

from collections.abc import Sequence

from attrs import evolve, field, frozen
from returns.result import Result

from agent_memory.domain.base import SearchPolicy, attempt
from agent_memory.domain.errors import DomainError
from agent_memory.domain.hierarchical import HierarchicalUseCases
from agent_memory.domain.locks import ThreadWriteLocks
from agent_memory.domain.ports import Clock, Embedder, KeywordIndex, StoreCatalog, WriteLocks
from agent_memory.domain.scoped import ScopedUseCases
from agent_memory.domain.tenancy import Guard, check_pin
from agent_memory.domain.transfer import TransferUseCases

__all__ = ["MemoryService", "SearchPolicy"]


@frozen(kw_only=True)
class MemoryService(ScopedUseCases, HierarchicalUseCases, TransferUseCases):
    """The use cases over the ports. Every method returns a Result; none raises for bad input."""

    catalog: StoreCatalog
    embedder: Embedder
    clock: Clock
    policy: SearchPolicy = field(factory=SearchPolicy)
    keywords: KeywordIndex | None = None
    locks: WriteLocks = field(factory=ThreadWriteLocks)
    tenant: Guard = None

    def within(self, namespace: Sequence[str] | None) -> Result[MemoryService, DomainError]:
        """The same service pinned to a namespace: every use case then acts only on it and those below it,
        whatever namespace a caller gives (a caller may narrow it, never leave it). None keeps this service;
        an empty namespace is refused, and a pinned service can only be pinned further down."""
        if namespace is None:
            return Result.from_value(self)
        return attempt(lambda: check_pin(namespace)).bind(
            lambda pin: self._guard(pin).map(lambda guard: evolve(self, tenant=guard))
        )
