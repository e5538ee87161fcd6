"""The ancestor keys filters match on: every prefix of a namespace, every category above a path."""

from __future__ import annotations

from agent_memory.domain.paths import MemoryPath

NAMESPACE_JOIN = "\x1f"  # labels cannot hold control characters (domain.model._label), so joins are unambiguous


def namespace_prefixes(namespace: tuple[str, ...], *, with_empty: bool = False) -> list[str]:
    """Every non-empty prefix of the namespace: ("user", "a") → ["user", "user␟a"]; `with_empty` puts "" first.

    Chroma refuses an empty list as a metadata value, so its records keep "" (the root namespace's only prefix).
    """
    first = 0 if with_empty else 1
    return [NAMESPACE_JOIN.join(namespace[:depth]) for depth in range(first, len(namespace) + 1)]


def path_prefixes(path: MemoryPath) -> list[str]:
    """Every category a path lies under, itself included (CategoryPath.contains accepts equal segments)."""
    return ["/".join(path.segments[:depth]) for depth in range(1, len(path.segments) + 1)]
