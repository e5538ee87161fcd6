"""Thread keys: how the keyword index names a memory's thread (namespace, scope labels, thread) and reads them back."""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory

THREAD_JOIN = "/"  # a thread is a namespace's labels joined by this (a "/" inside a label only widens a prefix)


def thread_of(namespace: Sequence[str]) -> str:
    """The keyword index's thread prefix of a namespace: ("user", "a") → "user/a"."""
    return THREAD_JOIN.join(namespace)


SCOPE_JOIN = "\x1f"  # labels never hold control characters, so no namespace label or scope can forge a key


SCOPE_LABEL_COUNT = 5  # how many scope labels a thread key holds: agent, personality, project, type, global


def _global_label(global_: bool) -> str:
    return "global" if global_ else ""


def thread_key(memory: Memory) -> str:
    """The keyword index's thread of a memory: who may lend it context (docs/design-search.md, who lends context).

    Only memories written in the same named thread, in the same namespace and the same scope (agent,
    personality, project, type, global) are neighbours; a memory without a thread is alone in its own.
    The key starts with `thread_of(namespace) + THREAD_JOIN`, so namespace prefix searches still match it.
    """
    scope = (memory.agent, memory.personality, memory.project, memory.type, _global_label(memory.global_))
    own = ("thread", memory.thread) if memory.thread else ("memory", memory.id)
    return thread_of(memory.namespace) + THREAD_JOIN + SCOPE_JOIN + SCOPE_JOIN.join((*scope, *own))


KeywordScope = tuple[str | None, str | None, str | None, str | None, str | None]
"""The scope labels a keyword hit's thread must hold, in `thread_key`'s order (agent, personality, project,
type, global as "global" or ""); None: any."""


def keyword_scope(where: MemoryFilter) -> KeywordScope | None:
    """The scope labels a filter asks for, as `thread_key` writes them (None when it asks for none)."""
    glob = None if where.global_ is None else _global_label(where.global_)
    scope = (where.agent, where.personality, where.project, where.type, glob)
    return None if all(label is None for label in scope) else scope


def scope_labels(thread: str) -> tuple[str, ...] | None:
    """The scope labels a thread key holds, in `KeywordScope`'s order; None for a thread written before
    scopes were part of the key (or not by `thread_key`)."""
    _, boundary, rest = thread.partition(THREAD_JOIN + SCOPE_JOIN)
    labels = tuple(rest.split(SCOPE_JOIN))
    return labels[:SCOPE_LABEL_COUNT] if boundary and len(labels) >= SCOPE_LABEL_COUNT else None


def thread_in_scope(thread: str, scope: KeywordScope | None) -> bool:
    """Whether a thread holds the scope's labels; a thread without scope labels is kept, since nothing in
    it says otherwise. The reference for every KeywordIndex."""
    labels = scope_labels(thread)
    if scope is None or labels is None:
        return True
    return all(wanted is None or wanted == held for wanted, held in zip(scope, labels, strict=True))
