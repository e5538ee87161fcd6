"""What a store may return: the filter every adapter translates into its own query language."""

from __future__ import annotations

from datetime import datetime

from attrs import frozen

from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import CategoryPath, MemoryPath


@frozen(kw_only=True)
class MemoryFilter:
    """Conditions a memory must meet; None means 'any'. Adapters must apply all of them.

    namespace is a prefix: ("user",) matches ("user", "a") but ("user", "a") never ("user", "b").
    tags must all be present. path is an exact match; path_prefix keeps memories whose path lies under that category.
    alive_at hides memories that expired at or before that moment; include_deleted shows
    soft-deleted ones. oldest_anchor drops decaying (non-stable) memories whose decay anchor is older.
    """

    namespace: tuple[str, ...] | None = None
    agent: str | None = None
    personality: str | None = None
    project: str | None = None
    type: str | None = None
    global_: bool | None = None
    tags: tuple[str, ...] = ()
    path: MemoryPath | None = None
    path_prefix: CategoryPath | None = None
    include_deleted: bool = False
    alive_at: datetime | None = None
    oldest_anchor: datetime | None = None

    def matches(self, memory: Memory) -> bool:
        """The reference semantics, used by the in-memory store and to check adapters' results."""
        if self.namespace is not None and memory.namespace[: len(self.namespace)] != self.namespace:
            return False
        for name in ("agent", "personality", "project", "type"):
            wanted = getattr(self, name)
            if wanted is not None and getattr(memory, name) != wanted:
                return False
        if self.global_ is not None and memory.global_ != self.global_:
            return False
        if any(tag not in memory.tags for tag in self.tags):
            return False
        if self.path is not None and memory.path != self.path:
            return False
        if self.path_prefix is not None and (memory.path is None or not self.path_prefix.contains(memory.path)):
            return False
        if not self.include_deleted and memory.deleted:
            return False
        if self.alive_at is not None and memory.is_expired(self.alive_at):
            return False
        return not (
            self.oldest_anchor is not None
            and memory.decay_policy is not DecayPolicy.STABLE
            and memory.decay_anchor < self.oldest_anchor
        )
