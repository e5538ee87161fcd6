"""The door spec every door shares: the command a door runs, the door's names for its fields, and the command made
from a door's arguments.

A door (the CLI's subcommand, an MCP tool, REST's generic route) presents a command of the table: it names it, may
call some fields by its own names (`global` for global_), leave fields out (saying why), require a field the command
leaves optional, and word a field where the command's sentence would mislead its callers. `DoorSpec` holds that much;
`CliSpec` (cli/manifest.py) and `ToolSpec` (mcp/command_tools.py) add what only their door shows. `command_from` is the one
way any door turns its arguments into the command: by the door's names, converted by the command's field types
through the JSON edge, with the door's defaults, and an argument the command has no field for refused by name.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from attrs import field, frozen
from cattrs.errors import BaseValidationError
from returns.result import Failure, Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.entrypoints.json_codec import JSON
from agent_memory.entrypoints.timestamps import not_a_timestamp, parse_iso


@frozen(
    kw_only=True, eq=False
)  # one object per door entry, hashed by identity (mcp.tool_calls.argument_model caches on it)
class DoorSpec:
    """A command as one door presents it (never what it does): its name at the door and the door's names for its
    fields, the fields the door leaves out and why, the optional ones it requires, and its own wording."""

    name: str  # the door's name for the command: a subcommand, a tool, a route
    command: type[c.Asks[Any]] | None = None  # None: a door entry running no command of the table (CLI only)
    names: Mapping[str, str] = field(factory=dict)  # field → the door's name for it
    omit: Mapping[str, str] = field(factory=dict)  # field → why the door leaves it out
    required: frozenset[str] = frozenset()  # optional fields the door requires (add: path)
    wording: Mapping[str, str] = field(factory=dict)  # field → the door's sentence where the FieldDoc's would mislead

    def door_name(self, field_name: str) -> str:
        """The door's name for a field of its command."""
        return self.names.get(field_name, field_name)

    def shown(self) -> tuple[str, ...]:
        """The command's fields the door offers, in the command's order (none for an entry running no command)."""
        if self.command is None:
            return ()
        return tuple(a.name for a in command_fields(self.command) if a.name not in self.omit)


def command_from(
    spec: DoorSpec, arguments: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> Result[c.Asks[Any], DomainError]:
    """The command a door's arguments ask for, keyed by the door's names: lists become tuples and ISO 8601 strings
    timestamps by the command's field types (the JSON edge's converter); `defaults` (by field) fill a field given as
    None or not at all; an argument naming no field the door offers is refused with INVALID_INPUT saying which."""
    if spec.command is None:
        return Failure(invalid_input(f"{spec.name} runs no command."))
    kind = spec.command
    by_door_name = {spec.door_name(name): name for name in spec.shown()}
    hints = typing.get_type_hints(kind)
    values: dict[str, Any] = {}
    for key, value in arguments.items():
        name = by_door_name.get(key)
        if name is None:
            known = ", ".join(sorted(by_door_name))
            return Failure(invalid_input(f"'{key}' is not a field of {spec.name}; its fields: {known}."))
        if value is not None and _is_timestamp(hints[name]):
            try:
                value = parse_iso(value)
            except ValueError:
                return Failure(invalid_input(not_a_timestamp(value, key) + "."))
        values[name] = tuple(value) if isinstance(value, list) else value
    for name, default in (defaults or {}).items():
        if name in by_door_name.values() and values.get(name) is None:
            values[name] = default
    try:
        return Success(JSON.structure(values, kind))
    except (BaseValidationError, ValueError, TypeError) as error:
        return Failure(invalid_input(f"The body does not fit {spec.name}: {_reason(error)}"))


def _is_timestamp(hint: Any) -> bool:
    return hint is datetime or datetime in typing.get_args(hint)


def _reason(error: BaseException) -> str:
    inner = getattr(error, "exceptions", None)
    return _reason(inner[0]) if inner else str(error) or type(error).__name__


__all__ = ["DoorSpec", "command_from"]
