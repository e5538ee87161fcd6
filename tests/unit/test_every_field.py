"""Every Memory field a command names reaches the memory: create sets it, update changes it, its clearing flag clears it.

Derived from `attrs.fields` of Memory, CreateMemory and UpdateMemory, so a field added to the model and the commands
is checked here with no edit (tests/field_examples.py gives its example).
"""

from __future__ import annotations

from datetime import timedelta
from enum import Enum
from typing import Any

import attrs
import pytest
from attrs import evolve

from agent_memory.domain import commands as c
from agent_memory.domain.model import Memory, stored_rule
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.service import MemoryService
from tests.field_examples import every_field_set, fields_at_default, non_default_example
from tests.unit.conftest import T0

GUARDS = {"store", "namespace"}  # an update's store and namespace say where to look, not what to change
MEMORY_FIELDS = {a.name: a for a in attrs.fields(Memory)}
EXAMPLE = evolve(every_field_set(), expires_at=T0 + timedelta(days=400))  # an expiry ahead of the test's clock


def as_given(value: object) -> Any:
    """A memory's value as a command takes it: paths and enums as text, everything else as it is."""
    if isinstance(value, Enum):
        return value.value
    return str(value) if isinstance(value, MemoryPath) else value


def named(command: type, leave_out: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    return [a.name for a in attrs.fields(command) if a.name in MEMORY_FIELDS and a.name not in leave_out]


def test_the_example_sets_every_field() -> None:
    assert fields_at_default(EXAMPLE) == []


def test_create_sets_every_field_it_names(service: MemoryService) -> None:
    given = {name: as_given(getattr(EXAMPLE, name)) for name in named(c.CreateMemory)}
    made = service.create(c.CreateMemory(**given)).unwrap().memory
    assert {name: getattr(made, name) for name in given} == {name: getattr(EXAMPLE, name) for name in given}


@pytest.mark.parametrize("name", named(c.UpdateMemory, GUARDS))
def test_update_changes_each_field_it_names(service: MemoryService, name: str) -> None:
    made = service.create(c.CreateMemory(content="a memory to change")).unwrap().memory
    changed = service.update(c.UpdateMemory(ref=made.id, **{name: as_given(getattr(EXAMPLE, name))})).unwrap()
    assert getattr(changed.memory, name) == getattr(EXAMPLE, name)
    assert service.get(made.id).unwrap().memory == changed.memory


CLEARS = {flag: a.name for a in attrs.fields(Memory) if (flag := stored_rule(a).clear_with) is not None}


@pytest.mark.parametrize(("flag", "name"), CLEARS.items())
def test_a_clearing_flag_resets_its_field_and_refuses_a_value_beside_it(
    service: MemoryService, flag: str, name: str
) -> None:
    value = as_given(getattr(EXAMPLE, name))
    made = service.create(c.CreateMemory(content="a memory to clear", **{name: value})).unwrap().memory
    assert getattr(made, name) == getattr(EXAMPLE, name)
    both = service.update(c.UpdateMemory(ref=made.id, **{name: value, flag: True})).failure()
    assert both.message == f"Give either {name} or {flag}, not both."
    cleared = service.update(c.UpdateMemory(ref=made.id, **{flag: True})).unwrap().memory
    assert getattr(cleared, name) == MEMORY_FIELDS[name].default


def test_an_empty_update_names_what_it_could_change(service: MemoryService) -> None:
    made = service.create(c.CreateMemory(content="a memory")).unwrap().memory
    error = service.update(c.UpdateMemory(ref=made.id)).failure()
    assert error.message.startswith("Nothing to update: give content, tags, source, citations, expires_at")
    assert all(flag in error.message for flag in CLEARS)


@attrs.frozen
class _Odd:
    """A model with a field of a type the examples have no rule for."""

    ratio: complex = 0j


def test_a_field_without_an_example_says_what_to_do() -> None:
    with pytest.raises(AssertionError, match="give field ratio a non-default example"):
        non_default_example(attrs.fields(_Odd).ratio)
