"""The service: every use case over one set of ports, as one object the entrypoints call."""

from __future__ import annotations

from attrs import field, frozen

from agent_memory.domain.base import SearchPolicy
from agent_memory.domain.hierarchical import HierarchicalUseCases
from agent_memory.domain.locks import ThreadWriteLocks
from agent_memory.domain.ports import Clock, Embedder, KeywordIndex, StoreCatalog, WriteLocks
from agent_memory.domain.scoped import ScopedUseCases
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
