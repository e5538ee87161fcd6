"""What a command tells the doors about itself: its name, its sentence, its fields and each field's `FieldDoc`.

A command field's `metadata` holds its `FieldDoc` (`field(metadata=doc("…", least=, most=, choices=))`): the sentence
a door shows for it, its bounds and its choices. The doors build their tools, flags, parameters and schemas from
these (entrypoints/mcp/command_tools.py, rest/queries.py, cli/manifest.py); the commands themselves are in
domain/commands.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from attrs import NOTHING, Attribute, fields, frozen

FIELD_DOC = "agent_memory.field_doc"


@frozen(kw_only=True)
class FieldDoc:
    """What a door tells its caller about one command field: a sentence, numeric bounds, and the allowed values."""

    text: str
    least: float | None = None
    most: float | None = None
    choices: tuple[str, ...] = ()
    max_length: int | None = None


def doc(
    text: str,
    *,
    least: float | None = None,
    most: float | None = None,
    choices: tuple[str, ...] = (),
    max_length: int | None = None,
) -> Mapping[str, FieldDoc]:
    """A field's metadata: `field(metadata=doc("…"))`."""
    return {FIELD_DOC: FieldDoc(text=text, least=least, most=most, choices=choices, max_length=max_length)}


def field_doc(attribute: Attribute[Any]) -> FieldDoc:
    """The FieldDoc of a command field (every command field has one; a test checks it)."""
    found = attribute.metadata.get(FIELD_DOC)
    return found if isinstance(found, FieldDoc) else FieldDoc(text="")


def is_required(attribute: Attribute[Any]) -> bool:
    """Whether a command field must be given (it has no default)."""
    return attribute.default is NOTHING


def command_name(command: type[Any]) -> str:
    """The name a door gives a command it presents as it is: CountMemories → count_memories (MCP's tool; the CLI
    and REST say count-memories)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", command.__name__).lower()


def command_doc(command: type[Any]) -> str:
    """A command's docstring on one line: what a door says of a command it presents as it is."""
    return " ".join((command.__doc__ or command.__name__).split())


def command_fields(command: type[Any]) -> tuple[Attribute[Any], ...]:
    """A command's fields in declaration order (every command is an attrs class)."""
    return tuple(fields(command))
