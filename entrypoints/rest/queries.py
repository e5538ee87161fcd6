"""The REST door's GET routes made from their commands: each command field is a query parameter, described and bounded."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import attrs
from litestar import Response, get
from litestar.di import NamedDependency
from litestar.handlers import HTTPRouteHandler
from litestar.params import Parameter, PathParameter
from returns.result import Result

from agent_memory.domain.command_docs import command_fields, field_doc
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest import contract
from agent_memory.entrypoints.rest.bodies import path_ref
from agent_memory.entrypoints.rest.contract import field_schema
from agent_memory.entrypoints.rest.replies import Door, Payload, failures, guarded

Given = Mapping[str, Any]
RunCommand = Callable[[MemoryService, Any], Result[Any, DomainError]]
# the guard is `?namespace=user/u-123` here, where the commands (and the JSON bodies) take a list of labels
NAMESPACE_TEXT = "Tenant guard: only act on memories in this namespace or below it, e.g. 'user/u-123'."


@attrs.frozen(kw_only=True)
class QueryRoute:
    """A GET route over one command: its path (`in_path` names the field read from it), the REST defaults that
    differ from the command's, and how to render the outcome (given the route's arguments)."""

    name: str
    path: str
    command: type[Any]
    render: Callable[[Any, Given], Payload]
    summary: str
    responses: tuple[int, ...]
    in_path: str | None = None
    defaults: Mapping[str, Any] = attrs.field(factory=dict)


def _without_none(hint: Any) -> Any:
    """`int | None` as `int`, for a parameter whose REST default is not None."""
    kept = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return kept[0] if isinstance(hint, types.UnionType) and len(kept) == 1 else hint


def _bound(value: float | None, hint: Any) -> float | None:
    """A FieldDoc bound, an integer for an integer parameter (the OpenAPI then says 1, not 1.0)."""
    return int(value) if value is not None and hint is int else value


def _parameters(route: QueryRoute) -> list[inspect.Parameter]:
    """The handler's parameters: the door, then each command field as a path or query parameter."""
    hints = typing.get_type_hints(route.command)
    made = [inspect.Parameter("door", inspect.Parameter.KEYWORD_ONLY, annotation=NamedDependency[Door])]
    for attribute in command_fields(route.command):
        name, described = attribute.name, field_doc(attribute)
        # what the use case refuses, in the document only (rest/contract.py); the bounds Litestar checks itself
        constraints = {
            key: value
            for key, value in field_schema(route.command, attribute, hints[name]).items()
            if key not in ("minimum", "maximum")
        }
        if name == route.in_path:
            annotation: Any = Annotated[str, PathParameter(description=described.text, schema_extra=constraints)]
            default: Any = inspect.Parameter.empty
        elif name == "namespace":
            guard = Parameter(description=NAMESPACE_TEXT, schema_extra=contract.NAMESPACE_TEXT)
            annotation, default = Annotated[str | None, guard], None
        else:
            default = route.defaults.get(name, attribute.default)
            hint = hints[name] if default is None else _without_none(hints[name])
            bounds = Parameter(
                description=described.text,
                ge=_bound(described.least, hint),
                le=_bound(described.most, hint),
                schema_extra=constraints,
            )
            annotation = Annotated[hint, bounds]
        made.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default))
    return made


def query_handler(route: QueryRoute, run: RunCommand = dispatch) -> HTTPRouteHandler:
    """The GET handler of `route`: its parameters are the command's fields (a field added to the command is a new
    query parameter), its body builds the command under the namespace guard and runs it with `run`."""
    guards = "namespace" in attrs.fields_dict(route.command)

    async def handler(door: Door, **given: Any) -> Response[Payload]:
        if route.in_path is not None:
            given[route.in_path] = path_ref(given[route.in_path])
        arguments = {name: value for name, value in given.items() if name != "namespace"}

        def command(guard: tuple[str, ...] | None) -> Any:
            return route.command(**arguments, **({"namespace": guard} if guards else {}))

        return await door.reply(
            guarded(given.get("namespace"), lambda service, guard: run(service, command(guard))),
            lambda value: route.render(value, given),
        )

    parameters = _parameters(route)
    handler.__signature__ = inspect.Signature(parameters, return_annotation=Response[Payload])  # type: ignore[attr-defined]
    handler.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": Response[Payload]}
    handler.__name__ = handler.__qualname__ = route.name
    handler.__doc__ = route.summary
    return get(route.path, tags=["memories"], responses=failures(*route.responses))(handler)
