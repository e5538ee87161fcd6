"""The REST door's OpenAPI made exact: each field's constraints as the use cases enforce them, closed bodies, Allow."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs
from litestar import Litestar, Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi.spec import OpenAPIType
from litestar.openapi.spec import Schema as OpenAPISchema
from litestar.status_codes import HTTP_204_NO_CONTENT

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import field_doc
from agent_memory.domain.model import (
    MAX_LABEL_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAMESPACE_CHARS,
    MAX_NAMESPACE_DEPTH,
    MAX_STORE_NAME,
    STORE_NAME,
)
from agent_memory.domain.paths import MAX_PATH_LENGTH
from agent_memory.domain.search.searching import MAX_SEARCH_LIMIT

Schema = dict[str, Any]

# The patterns are the refusals of domain/model.py and domain/paths.py in JSON Schema's (ECMA-262) words, at times
# stricter than the server (a schema-valid value is always accepted; a few values the server would normalise and
# accept are left out, e.g. accented letters in a path), never looser.
_CONTROL = r"\x00-\x1f"
# a character str.strip() keeps: not whitespace in Python's sense (ECMA's \s lacks \x1c-\x1f and \x85)
_KEPT = r"[^\s\x1c-\x1f\x85" + _CONTROL + r"]"
_TEXT = rf"^[^{_CONTROL}]*$"  # a scope or label: any text without control characters
_NON_BLANK = r"[^\s\x1c-\x1f\x85]"  # found anywhere in the text: it is not blank
# a path segment: ASCII letters, digits, ' ', '.', '_' and '-', with a letter or digit, at most 60 characters, so it
# is never empty, '.' or '..' once normalised to a slug, nor longer than a slug may be; a path of at most 8 of them
# (the server takes 32 of up to 120), so that every string the pattern admits is within the path's length too
_SEGMENT = r"[ ._-]{0,9}[A-Za-z0-9][A-Za-z0-9 ._-]{0,50}"
_DEPTH = (MAX_PATH_LENGTH // 61) - 1
_LABEL = rf"[^/{_CONTROL}]*[^/\s\x1c-\x1f\x85{_CONTROL}][^/{_CONTROL}]*"  # a namespace label: no '/', not blank
# labels short enough that the most of them fit the namespace's length in all
_LABEL_CHARS = MAX_NAMESPACE_CHARS // MAX_NAMESPACE_DEPTH - 1

_PATH = rf"{_SEGMENT}(?:/{_SEGMENT}){{1,{_DEPTH}}}"  # 'category/…/slug'
_CATEGORY = rf"{_SEGMENT}(?:/{_SEGMENT}){{0,{_DEPTH}}}"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"

STORE: Schema = {"pattern": STORE_NAME.pattern, "maxLength": MAX_STORE_NAME, "examples": ["work-notes"]}
MEMORY_PATH: Schema = {"pattern": rf"^{_PATH}$", "maxLength": MAX_PATH_LENGTH, "examples": ["preferences/editor"]}
REF: Schema = {"pattern": rf"^(?:{_UUID}|{_PATH})$", "maxLength": MAX_PATH_LENGTH, "examples": ["preferences/editor"]}
CATEGORY: Schema = {"pattern": rf"^{_CATEGORY}$", "maxLength": MAX_PATH_LENGTH, "examples": ["projects"]}
DESCRIBED_CATEGORY: Schema = {
    "pattern": rf"^{_CATEGORY}/description$",
    "maxLength": MAX_PATH_LENGTH + len("/description"),
    "examples": ["projects/description"],
}
NAMESPACE_TEXT: Schema = {
    "pattern": rf"^/*{_LABEL}(/+{_LABEL}){{0,{MAX_NAMESPACE_DEPTH - 1}}}/*$",
    "maxLength": MAX_LABEL_CHARS,
}
_NAMESPACE_LABEL: Schema = {"type": "string", "pattern": rf"^{_LABEL}$", "maxLength": _LABEL_CHARS}
_LIST_ITEM: Schema = {
    "type": "string",
    "pattern": rf"^[^{_CONTROL}]*{_KEPT}[^{_CONTROL}]*$",
    "maxLength": MAX_LABEL_CHARS,
}

# a command field's constraints by its name (the same name means the same rule in every command)
_NOT_BLANK: Schema = {"minLength": 1, "pattern": _NON_BLANK}
BY_NAME: Mapping[str, Schema] = {
    "content": _NOT_BLANK,
    "ref": REF,
    "store": STORE,
    "path": MEMORY_PATH,
    "destination": MEMORY_PATH,
    "category": CATEGORY,
    "path_prefix": CATEGORY,
    "legacy_path_prefix": CATEGORY,
    **{name: {"pattern": _TEXT, "maxLength": MAX_LABEL_CHARS} for name in ("agent", "personality", "project", "type")},
    **{name: {"pattern": _TEXT, "maxLength": MAX_LABEL_CHARS} for name in ("source", "thread")},
    **{name: {"items": _LIST_ITEM, "maxItems": MAX_LIST_ITEMS} for name in ("tags", "citations")},
    "namespace": {"items": _NAMESPACE_LABEL, "maxItems": MAX_NAMESPACE_DEPTH},
}
# where a command reads a field its own way
BY_COMMAND: Mapping[tuple[type[Any], str], Schema] = {
    (c.CreateStore, "name"): STORE,
    (c.SearchMemories, "query"): _NOT_BLANK,
    (c.CreateCategory, "category"): CATEGORY,
    (c.DeleteCategory, "category"): CATEGORY,
}


def _optional(hint: Any) -> bool:
    return isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)


def field_schema(command: type[Any], attribute: attrs.Attribute[Any], hint: Any = None) -> Schema:
    """The JSON Schema keywords that say what the use case refuses in this command field: its FieldDoc's bounds and
    choices, then the rule its name stands for (a guard namespace, given, must name a tenant: at least one label)."""
    described = field_doc(attribute)
    schema: Schema = {}
    if described.least is not None:
        schema["minimum"] = described.least
    if described.most is not None:
        schema["maximum"] = described.most
    if described.max_length is not None:
        schema["maxLength"] = described.max_length
    if described.choices:
        schema["enum"] = [*described.choices, *([None] if _optional(hint) else [])]
    for base in command.__mro__:
        found = BY_COMMAND.get((base, attribute.name))
        if found is not None:
            return {**schema, **found}
    named = BY_NAME.get(attribute.name, {})
    if attribute.name == "namespace" and attribute.default is None:
        named = {**named, "minItems": 1}  # a filter or guard: [] would mean every tenant, and is refused
    return {**named, **schema}


# --- the document and the OPTIONS answers ----------------------------------------------------------


def _openapi_path(path: str) -> str:
    """A route's path as the OpenAPI document spells it: /memories/{ref:path} → /memories/{ref}."""
    return re.sub(r"\{(\w+):\w+\}", r"{\1}", path)


_VALUES = [OpenAPIType.STRING, OpenAPIType.NUMBER, OpenAPIType.BOOLEAN, OpenAPIType.ARRAY, OpenAPIType.OBJECT]


def _given(name: str) -> OpenAPISchema:
    """An object whose `name` is given and not null (said without `not`, which makes generators slow)."""
    return OpenAPISchema(required=[name], properties={name: OpenAPISchema(type=_VALUES)})


def _true(name: str) -> OpenAPISchema:
    return OpenAPISchema(required=[name], properties={name: OpenAPISchema(const=True)})


def _absent(name: str, value: Any = None) -> OpenAPISchema:
    """An object whose `name` is absent or `value` (null by default: said as the type null, since the document
    leaves a `const` of None out, which made the rule say nothing)."""
    said = OpenAPISchema(type=OpenAPIType.NULL) if value is None else OpenAPISchema(const=value)
    return OpenAPISchema(properties={name: said})


def _search_pages() -> list[OpenAPISchema]:
    """limit + offset ≤ MAX_SEARCH_LIMIT, which one field's schema cannot say, as steps: any limit from offset 0,
    then a given limit at most what the offset leaves (the default limit is a setting, so it is not counted on)."""
    steps = [OpenAPISchema(properties={"offset": OpenAPISchema(maximum=0)})]
    for offset in (MAX_SEARCH_LIMIT // 2, MAX_SEARCH_LIMIT - 100, MAX_SEARCH_LIMIT - 10):
        room = OpenAPISchema(properties={"limit": OpenAPISchema(maximum=MAX_SEARCH_LIMIT - offset)})
        offsets = OpenAPISchema(properties={"offset": OpenAPISchema(maximum=offset)})
        steps.append(OpenAPISchema(all_of=[_given("limit"), room, offsets]))
    return steps


def _whole_body_rules(command: type[Any], body: OpenAPISchema) -> None:
    """The rules on a body as a whole: an update changes something and does not both set and clear the expiry;
    a filter is given under one of its names (`category`, or `path_prefix`, its deprecated old name)."""
    names = sorted(body.properties or {})
    rules: list[OpenAPISchema] = []
    if issubclass(command, c.UpdateMemory):
        rules.append(OpenAPISchema(any_of=[_true(name) if name == "clear_expiry" else _given(name) for name in names]))
        rules.append(OpenAPISchema(any_of=[_absent("expires_at"), _absent("clear_expiry", False)]))
    if issubclass(command, c.SearchMemories):
        rules.append(OpenAPISchema(any_of=_search_pages()))
    if {"category", "path_prefix"} <= set(names):
        rules.append(OpenAPISchema(any_of=[_absent("category"), _absent("path_prefix")]))
    if rules:
        body.all_of = rules


def exact_bodies(app: Litestar) -> None:
    """Each request body a DTO reads, as the server reads it: `additionalProperties: false` (the DTO refuses unknown
    fields; the plain bodies of POST /prune and the deprecated POST /memories/{ref}/move ignore them, and stay
    open), and the rules on the body as a whole."""
    document = app.openapi_schema
    components = document.components.schemas or {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            dto = handler.resolve_data_dto() if isinstance(handler, HTTPRouteHandler) else None
            if dto is None or not dto.config.forbid_unknown_fields:
                continue
            for method in handler.http_methods:
                operation = getattr((document.paths or {}).get(_openapi_path(route.path)), method.lower(), None)
                body = getattr(operation, "request_body", None)
                media = body.content.get("application/json") if body is not None else None
                ref = getattr(getattr(media, "schema", None), "ref", None)
                if ref is not None:
                    schema = components[ref.rsplit("/", 1)[-1]]
                    schema.additional_properties = False
                    _whole_body_rules(dto.model_type, schema)


def exact_parameters(app: Litestar) -> None:
    """The query parameters as the server reads them: a string, never null (a query cannot say null; an empty
    value is refused, app._query_problem, and leaving the parameter out is how to say none); and the routes that
    answer without a token (opt `public`, e.g. /health) declare `security: []`, overriding the document's bearer."""
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            path = (app.openapi_schema.paths or {}).get(_openapi_path(route.path))
            for method in getattr(handler, "http_methods", ()):
                operation = getattr(path, method.lower(), None)
                if operation is None:
                    continue
                if handler.opt.get("public") and app.openapi_schema.security:
                    operation.security = []
                for parameter in operation.parameters or ():
                    schema = getattr(parameter, "schema", None)
                    if getattr(parameter, "param_in", None) == "query" and isinstance(schema, OpenAPISchema):
                        _not_null(schema)


def _not_null(schema: OpenAPISchema) -> None:
    """`oneOf: [X, null]` (Litestar's optional parameter) as X alone, its constraints kept."""
    options = [o for o in schema.one_of or () if isinstance(o, OpenAPISchema) and o.type != OpenAPIType.NULL]
    if schema.one_of and len(options) == 1 and len(schema.one_of) == 2:
        schema.type, schema.one_of = options[0].type, None


# the Allow header of each route's OPTIONS answer, by the handler that answers it
AllowedMethods = dict[BaseRouteHandler, str]


def allowed_methods(app: Litestar) -> AllowedMethods:
    """Every method of each path. Litestar's own OPTIONS answer keeps the methods of the first handler registered
    at a path, so it left out GET /memories, PATCH/DELETE/POST /memories/{ref}, POST /stores and DELETE
    /categories/{path}."""
    return {
        handler: ", ".join(sorted(route.methods))
        for route in app.routes
        for handler in getattr(route, "route_handlers", ())
        if "OPTIONS" in getattr(handler, "http_methods", ())
    }


def options_answer(request: Request[Any, Any, Any], allowed: AllowedMethods) -> Response[None] | None:
    """The OPTIONS answer (204, every method of the path in Allow), or None for a route with its own OPTIONS."""
    allow = allowed.get(request.route_handler)
    return None if allow is None else Response(None, status_code=HTTP_204_NO_CONTENT, headers={"Allow": allow})
