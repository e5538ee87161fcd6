"""The mark a record of a batch not known to be committed carries: the batch's key, beside the memory's fields."""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
from attrs import frozen

from agent_memory.domain.model import Memory

COMMIT_KEY = "commit"  # the record's key (Chroma metadata, Qdrant payload) holding the mark


@frozen(kw_only=True)
class MarkedMemory(Memory):
    """A memory as a record written by a batch holds it, with that batch's key (`commit`): readers over a shared
    engine show it only once the batch's outcome is KEPT (adapters/commit_outcomes.py). Only the stores of a server
    engine write or read one (ClaimedStore marks what a running batch adds, and unmarks what it answers), so the
    domain never sees one."""

    commit: str = ""


@cache
def _aliases() -> tuple[tuple[str, str], ...]:
    return tuple((a.name, a.alias or a.name) for a in attrs.fields(Memory))


def _fields(memory: Memory) -> dict[str, Any]:
    return {alias: getattr(memory, name) for name, alias in _aliases()}


def marked(memory: Memory, key: str) -> Memory:
    """The memory carrying the mark `key` ("" : the memory unmarked)."""
    return MarkedMemory(**_fields(memory), commit=key) if key else unmarked(memory)


def unmarked(memory: Memory) -> Memory:
    return Memory(**_fields(memory)) if isinstance(memory, MarkedMemory) else memory


def mark_of(memory: Memory) -> str:
    """The batch key a record carries ("" for one written alone, or before marks existed)."""
    return memory.commit if isinstance(memory, MarkedMemory) else ""
