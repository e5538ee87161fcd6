"""The ancestor keys filters match on: every prefix of a namespace, every category above a path."""

from __future__ import annotations

from agent_memory.domain.paths import MemoryPath

NAMESPACE_JOIN = "\x1f"  # labels cannot hold control characters (domain.model._label), so joins are unambiguous


def namespace_prefixes(namespace: tuple[str, ...]) -> list[str]:
    """Every non-empty prefix of the namespace: ("user", "a") → ["user", "user␟a"]."""
    return [NAMESPACE_JOIN.join(namespace[:depth]) for depth in range(1, len(namespace) + 1)]


def path_prefixes(path: MemoryPath) -> list[str]:
    """Every category a path lies under, itself included (CategoryPath.contains accepts equal segments)."""
    return ["/".join(path.segments[:depth]) for depth in range(1, len(path.segments) + 1)]
