"""A Memory's fields as every stored format names them: derived from `attrs.fields(Memory)`, never listed by hand."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

import attrs

from agent_memory.domain.model import Memory

RENAMED = {"global_": "global"}  # the one field whose stored key is not its name (a Python keyword)


@cache
def memory_fields() -> tuple[tuple[str, attrs.Attribute[Any]], ...]:
    """Every field of a Memory with its stored key, in declaration order, its type resolved (not a string)."""
    return tuple((RENAMED.get(a.name, a.name), a) for a in attrs.fields(attrs.resolve_types(Memory)))


def is_timestamp(attribute: attrs.Attribute[Any]) -> bool:
    """Whether a field holds a moment (required or optional)."""
    return attribute.type in (datetime, datetime | None)
