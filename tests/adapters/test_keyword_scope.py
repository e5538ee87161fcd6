"""The keyword index's scope narrowing: the domain's reference (`thread_in_scope`) and SQLite's GLOB agree."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from agent_memory.adapters.sqlite_keywords import scope_glob
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.thread_keys import keyword_scope, thread_in_scope, thread_key

MOMENT = datetime(2026, 1, 1, tzinfo=UTC)
LABELS = st.sampled_from(["", "a", "b", "a*", "*", "?", "[", "]", "[a]", "a/b", "%", "_", "ü"])
OPEN = st.none() | LABELS


@st.composite
def memories(draw: st.DrawFn) -> Memory:
    return Memory(
        id=str(uuid.uuid4()),
        content="x",
        created_at=MOMENT,
        updated_at=MOMENT,
        namespace=tuple(draw(st.lists(st.sampled_from(["user", "a", "*", "[x", "ü"]), max_size=3))),
        agent=draw(LABELS),
        personality=draw(LABELS),
        project=draw(LABELS),
        type=draw(LABELS),
        global_=draw(st.booleans()),
        thread=draw(LABELS),
    )


@st.composite
def filters(draw: st.DrawFn) -> MemoryFilter:
    return MemoryFilter(
        agent=draw(OPEN),
        personality=draw(OPEN),
        project=draw(OPEN),
        type=draw(OPEN),
        global_=draw(st.none() | st.booleans()),
    )


def scope_matches(where: MemoryFilter, memory: Memory) -> bool:
    return all(
        wanted is None or wanted == getattr(memory, name)
        for name, wanted in (
            ("agent", where.agent),
            ("personality", where.personality),
            ("project", where.project),
            ("type", where.type),
            ("global_", where.global_),
        )
    )


@given(memories(), filters())
def test_a_thread_is_in_a_filters_scope_exactly_when_its_memory_matches(memory: Memory, where: MemoryFilter) -> None:
    assert thread_in_scope(thread_key(memory), keyword_scope(where)) == scope_matches(where, memory)


@given(memories(), filters())
def test_the_sqlite_glob_keeps_every_thread_in_the_scope(memory: Memory, where: MemoryFilter) -> None:
    scope = keyword_scope(where)
    if scope is None:
        return
    with sqlite3.connect(":memory:") as connection:
        (globbed,) = connection.execute("SELECT ? GLOB ?", (thread_key(memory), scope_glob(scope))).fetchone()
    if scope_matches(where, memory):
        assert globbed == 1


def test_the_sqlite_glob_leaves_out_another_project_and_takes_wildcards_literally() -> None:
    def globbed(project: str, wanted: str) -> int:
        memory = Memory(id=str(uuid.uuid4()), content="x", created_at=MOMENT, updated_at=MOMENT, project=project)
        with sqlite3.connect(":memory:") as connection:
            pattern = scope_glob((None, None, wanted, None, None))
            return int(connection.execute("SELECT ? GLOB ?", (thread_key(memory), pattern)).fetchone()[0])

    assert globbed("p3", "p3") == 1
    assert globbed("p1", "p3") == 0
    assert globbed("p1", "p?") == 0
    assert globbed("p?", "p?") == 1
    assert globbed("pxyz", "p*") == 0
    assert globbed("p[3]", "p[3]") == 1
    assert globbed("p3", "p[3]") == 0


def test_a_filter_without_scope_labels_asks_for_no_scope() -> None:
    assert keyword_scope(MemoryFilter(namespace=("user",), tags=("t",))) is None
    assert keyword_scope(MemoryFilter(global_=False)) == (None, None, None, None, "")
