"""Memories for tests, derived from `attrs.fields(Memory)`: one with every field set, and a strategy drawing them.

A field added to Memory is covered here with no edit: its example and its strategy come from its type (text, a
flag, a list of labels, a moment, a whole or real number, an enum). A type this module cannot read fails loudly,
saying which field wants an example. Fields with rules of their own (a UUID id, a slug store, a path, deleted_at
only when deleted) have them below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Any

import attrs
from hypothesis import strategies as st

from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.model import DEFAULT_STORE, Memory
from agent_memory.domain.paths import MemoryPath

MOMENT = datetime(2024, 6, 1, 0, 0, 0, 1, tzinfo=UTC)


def _fields() -> tuple[attrs.Attribute[Any], ...]:
    return attrs.fields(attrs.resolve_types(Memory))


# --- one memory with every field set ------------------------------------------------------------------------------

# examples a type cannot give (the required fields and those with rules of their own)
_BY_NAME: dict[str, object] = {
    "id": "6f1c1f0e-3b8e-4d7a-9d43-2b1e5c0a7f10",
    "content": "every field set",
    "created_at": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    "updated_at": datetime(2024, 5, 7, 7, 8, 9, 654321, tzinfo=UTC),
    "store": "work-notes",
    "path": MemoryPath(("projects", "agent-memory", "design")),
}


def _example_of_type(attribute: attrs.Attribute[Any]) -> object:
    """A value of the field's type that is not its default (NotImplemented when the type is not one of these)."""
    kind, default, name = attribute.type, attribute.default, attribute.name
    examples: dict[object, object] = {
        str: f"{name} ünï 日本",
        bool: not default,
        tuple[str, ...]: (f"{name}-1", "日本 two"),
        datetime | None: MOMENT,
        int | None: 7,
        int: (default if isinstance(default, int) else 0) + 7,
        float | None: 0.25,
        float: (default if isinstance(default, float) else 0.0) + 0.25,
    }
    if kind in examples:
        return examples[kind]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return next((member for member in kind if member != default), NotImplemented)
    return NotImplemented


def non_default_example(attribute: attrs.Attribute[Any]) -> object:
    """A value for the field that is not its default; AssertionError saying what to do when there is none."""
    example = _BY_NAME[attribute.name] if attribute.name in _BY_NAME else _example_of_type(attribute)
    assert example is not NotImplemented and example != attribute.default, (
        f"give field {attribute.name} a non-default example (tests/field_examples.py: _BY_NAME, or a rule for its "
        f"type {attribute.type})"
    )
    return example


def every_field_set(values: Mapping[str, object] | None = None) -> Memory:
    """A memory whose every field is not its default: the given values, and an example for each other field."""
    chosen = {a.name: (values or {}).get(a.name, non_default_example(a)) for a in _fields()}
    try:
        return Memory(**chosen)  # type: ignore[arg-type]
    except InvalidValue as error:
        raise AssertionError(f"give a field a non-default example its validator takes: {error.message}") from None


def fields_at_default(memory: Memory) -> list[str]:
    """The fields of a memory that hold their default (none, for a memory made by every_field_set)."""
    return [a.name for a in _fields() if a.default is not attrs.NOTHING and getattr(memory, a.name) == a.default]


# --- a strategy drawing every field -------------------------------------------------------------------------------

LABEL_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", min_codepoint=32, max_codepoint=0x2FFFF),  # utf-8: no surrogates
    min_size=1,
    max_size=12,
).filter(lambda s: bool(s.strip()))
_NAMESPACE_LABEL = LABEL_TEXT.filter(lambda s: "/" not in s)  # domain.model.check_namespace forbids "/"
_SLUG = st.from_regex(r"[a-z0-9]{1,6}(-[a-z0-9]{1,6}){0,2}", fullmatch=True)
MOMENTS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC))
_WHOLE = st.integers(min_value=-(2**53), max_value=2**53)  # exact in every JSON reader
_REAL = st.floats(allow_nan=False, allow_infinity=False, width=64)

_STRATEGY_BY_NAME: dict[str, st.SearchStrategy[Any]] = {
    "id": st.uuids(version=4).map(str),
    "content": st.text(min_size=1, max_size=80).filter(lambda s: bool(s.strip())),
    "store": st.just(DEFAULT_STORE),  # the store a memory is written to is its own
    "namespace": st.lists(_NAMESPACE_LABEL, max_size=3).map(tuple),
    "path": st.none() | st.lists(_SLUG, min_size=2, max_size=4).map(lambda segments: MemoryPath(tuple(segments))),
    "tags": st.lists(LABEL_TEXT, max_size=4).map(tuple),
    "revision": st.integers(min_value=0, max_value=2**31),  # a count of changes: never negative
}


def _strategy_of_type(attribute: attrs.Attribute[Any]) -> st.SearchStrategy[Any]:
    kind = attribute.type
    strategies: dict[object, st.SearchStrategy[Any]] = {
        str: st.just("") | LABEL_TEXT,
        bool: st.booleans(),
        tuple[str, ...]: st.lists(LABEL_TEXT, max_size=3).map(tuple),
        datetime: MOMENTS,
        datetime | None: st.none() | MOMENTS,
        int: _WHOLE,
        int | None: st.none() | _WHOLE,
        float: _REAL,
        float | None: st.none() | _REAL,
    }
    if kind in strategies:
        return strategies[kind]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return st.sampled_from(list(kind))
    raise AssertionError(f"give field {attribute.name} a strategy (tests/field_examples.py: _STRATEGY_BY_NAME)")


def _draw_memory(draw: st.DrawFn, **overrides: st.SearchStrategy[Any]) -> Memory:
    """A memory with every field drawn: from `overrides` by name, else by the field's rule or type."""
    chosen = {**_STRATEGY_BY_NAME, **overrides}
    values = {a.name: draw(chosen[a.name] if a.name in chosen else _strategy_of_type(a)) for a in _fields()}
    if not values["deleted"]:
        values["deleted_at"] = None  # only a deleted memory has a deletion time
    return Memory(**values)


memories: Callable[..., st.SearchStrategy[Memory]] = st.composite(_draw_memory)
