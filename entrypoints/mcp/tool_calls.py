"""An MCP tool's call: the argument model the SDK validates it with, built from its command's fields, and the command
the validated arguments ask for, dispatched and rendered as the tool's JSON."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import datetime
from functools import cache
from typing import Any, Literal

from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import Field, create_model
from returns.result import Failure, Result

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields, field_doc, is_required
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.door_spec import command_from as door_command_from
from agent_memory.entrypoints.mcp.command_tools import Payload, ToolSpec

# required strings the schema refuses empty; not the paths a memory or category is made at (path, destination,
# category): the domain's path rules refuse an empty one with INVALID_PATH, as every other door answers it
_NON_EMPTY = frozenset({"ref", "name"})


def _wire_type(hint: Any, choices: tuple[str, ...]) -> Any:
    """The JSON-facing type of a command field: lists for tuples, ISO strings for timestamps, enums as Literals."""
    optional = type(None) in typing.get_args(hint)
    core = [arg for arg in typing.get_args(hint) if arg is not type(None)] if optional else [hint]
    base = core[0]
    if typing.get_origin(base) is tuple:
        shown: Any = list[str]
    elif base is datetime:
        shown = str
    elif choices:
        shown = Literal[choices]
    else:
        shown = base
    return shown | None if optional else shown


@cache
def argument_model(spec: ToolSpec) -> type[ArgModelBase]:
    """The pydantic model the MCP SDK validates a call's arguments with (its JSON schema is the tool's)."""
    hints = typing.get_type_hints(spec.command)
    definitions: dict[str, Any] = {}
    for attribute in command_fields(spec.command):
        if attribute.name in spec.omit:
            continue
        described = field_doc(attribute)
        required = is_required(attribute) or attribute.name in spec.required
        default = spec.defaults.get(attribute.name, ... if required else attribute.default)
        if isinstance(default, tuple):
            default = list(default)
        constraints: dict[str, Any] = {}
        if described.least is not None:
            constraints["ge"] = described.least
        if described.most is not None:
            constraints["le"] = described.most
        if described.max_length is not None:
            constraints["max_length"] = described.max_length
        elif required and hints[attribute.name] is str and attribute.name in _NON_EMPTY:
            constraints["min_length"] = 1
        hint = hints[attribute.name]
        if attribute.name in spec.required:
            hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        text = spec.wording.get(attribute.name, described.text)
        if attribute.name == "ref" and spec.alternates:  # one of path_or_id and its alternates, checked on call
            hint, default = hint | None, None
            text += f" Or give it as {' or '.join(spec.alternates)}."
        definitions[attribute.name] = (
            _wire_type(hint, described.choices),
            Field(default, description=text, alias=spec.names.get(attribute.name), **constraints),
        )
    for alternate in spec.alternates:
        definitions[f"ref_as_{alternate}"] = (
            str | None,
            Field(
                None, description=f"The memory's {alternate} (instead of path_or_id).", alias=alternate, min_length=1
            ),
        )
    return create_model(f"{spec.command.__name__}Arguments", __base__=ArgModelBase, **definitions)


def command_from(spec: ToolSpec, arguments: Mapping[str, Any], default_store: str) -> Result[c.Asks[Any], DomainError]:
    """The command a validated call asks for (arguments by the tool's names, as the SDK hands them over): the one
    `ref` of path_or_id and its alternates, the rest through the doors' `door_spec.command_from`."""
    given = {spec.door_name(name): arguments[spec.door_name(name)] for name in spec.shown()}
    if spec.alternates:
        ref_names = (spec.door_name("ref"), *spec.alternates)
        refs = {ref for ref in (arguments.get(name) for name in ref_names) if ref is not None}
        if len(refs) != 1:
            return Failure(invalid_input(f"{spec.name} takes the memory as exactly one of {' or '.join(ref_names)}."))
        given[spec.door_name("ref")] = refs.pop()
    return door_command_from(spec, given, defaults={"store": default_store})


def run_tool(
    service: MemoryService, spec: ToolSpec, arguments: Mapping[str, Any], default_store: str
) -> Result[Payload, DomainError]:
    """Build the command, dispatch it, render the outcome as the tool's JSON."""
    return command_from(spec, arguments, default_store).bind(
        lambda command: dispatch(service, command).map(lambda outcome: spec.render(outcome, command, service))
    )
