"""The MCP tools' output schemas, generated from the domain's types as the input schemas are from the commands.

A memory's schema comes from the `Memory` fields and their types (json_codec spells them: `global_` as `global`,
tuples as lists, timestamps as ISO text, the decay policy as its value); each answer's schema wraps it as the
render that answers with it does. Schemas are compact (types and required keys, no titles or descriptions):
they are sent with every `tools/list`, and the input schemas already describe the arguments.
"""

from __future__ import annotations

import enum
import typing
from datetime import datetime
from functools import cache
from typing import Any

import attrs

from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath

Schema = dict[str, Any]

_TEXT: Schema = {"type": "string"}
_COUNT: Schema = {"type": "integer"}
_NUMBER: Schema = {"type": "number"}
_FLAG: Schema = {"type": "boolean"}
_WIRE_NAMES = {"global_": "global"}  # a field's JSON name where it is not its Python name
# the keys a memory's schema requires: what names and dates it (every field is always written; requiring
# each of them again in every tool's schema would only lengthen tools/list)
_MEMORY_KEYS = ("id", "content", "path", "created_at", "updated_at")


NULL: Schema = {"type": "null"}


def _nullable(schema: Schema) -> Schema:
    """`schema` or null, said as `anyOf` (a list of types, `"type": [X, "null"]`, is valid JSON Schema, but not
    every MCP client reads it: the Inspector's strict mode warns on each)."""
    return {"anyOf": [schema, NULL]}


def _type_schema(hint: Any) -> Schema:
    """The JSON schema of one field type, as json_codec writes a value of it."""
    arguments = typing.get_args(hint)
    if type(None) in arguments:
        (core,) = [argument for argument in arguments if argument is not type(None)]
        return _nullable(_type_schema(core))
    if typing.get_origin(hint) is tuple:
        return {"type": "array", "items": _type_schema(arguments[0])}
    if hint is datetime or hint is MemoryPath or hint is str:
        return dict(_TEXT)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if hint is bool:
        return dict(_FLAG)
    if hint is int:
        return dict(_COUNT)
    if hint is float:
        return dict(_NUMBER)
    raise TypeError(f"No JSON schema for the field type {hint!r}: add it to mcp_outputs._type_schema.")


def _object(properties: dict[str, Schema], required: typing.Iterable[str] | None = None) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties if required is None else required),
    }


@cache
def memory_schema() -> Schema:
    """A memory as json_codec.memory_json writes it: every field of `Memory`, under its JSON name."""
    hints = typing.get_type_hints(Memory)
    fields = {_WIRE_NAMES.get(a.name, a.name): _type_schema(hints[a.name]) for a in attrs.fields(Memory)}
    return _object(fields, required=_MEMORY_KEYS)


def _memory_with(**extra: Schema) -> Schema:
    base = memory_schema()
    return _object({**base["properties"], **extra}, required=(*_MEMORY_KEYS, *extra))


def view_schema() -> Schema:
    """A memory as read now (json_codec.view_json): its fields and its confidence; a create's answer that found
    near-duplicates also names them and what it did (on_duplicate)."""
    view = _memory_with(confidence=_NUMBER)
    duplicate = _object({"id": _TEXT, "path": _nullable(_TEXT), "similarity": _NUMBER})
    view["properties"] |= {
        "duplicates": {"type": "array", "items": duplicate},
        "on_duplicate": {"type": "string", "enum": ["kept", "skipped", "updated"]},
    }
    return view


def _listed(key: str, item: Schema) -> Schema:
    return _object({key: {"type": "array", "items": item}, "count": _COUNT})


_PATH = _nullable(_TEXT)
# the part of a long memory that answered a search (json_codec.matched_part_json), null when the whole memory did
_MATCHED_PART = _nullable(_object({"text": _TEXT, "start": _COUNT, "end": _COUNT}))
_CATEGORY = _object({"path": _TEXT, "memory_count": _COUNT, "description": _nullable(_TEXT)})
_COMPACT = _object(
    {"path": _PATH, "id": _TEXT, "tokens": _COUNT, "updated_at": _TEXT, "deleted": _FLAG},
    required=("path", "id", "tokens", "updated_at"),  # deleted: only on a soft-deleted one (include_deleted)
)

SCHEMAS: dict[str, Schema] = {  # the answer kinds the tools render (mcp_tools.ToolSpec.output names one)
    "any": {"type": "object"},  # a command with no ToolSpec: its answer's fields (json_codec.outcome_json)
    "view": view_schema(),
    "deleted": _object({"id": _TEXT, "deleted": _FLAG}),
    "duplicates": _listed("duplicates", _object({"id": _TEXT, "path": _nullable(_TEXT), "similarity": _NUMBER})),
    "removed": _object({"id": _TEXT, "path": _PATH, "removed": _FLAG}),
    "listing": _object(
        {
            "category": _nullable(_TEXT),
            "description": _nullable(_TEXT),
            "memories": {"type": "array", "items": _COMPACT},
            "count": _COUNT,
            "subcategories": {"type": "array", "items": _CATEGORY},
            "total": _COUNT,
            "limit": _nullable(_COUNT),
            "offset": _COUNT,
        }
    ),
    "recent": _listed("memories", view_schema()),
    "search": _object(
        {
            "results": {
                "type": "array",
                "items": _memory_with(
                    confidence=_NUMBER, relevance=_NUMBER, similarity=_NUMBER, score=_NUMBER, matched_part=_MATCHED_PART
                ),
            },
            "count": _COUNT,
            "limit": _COUNT,
            "offset": _COUNT,
            "has_more": _FLAG,
            "broad": _FLAG,
        }
    ),
    "prune": _object(
        {
            "dry_run": _FLAG,
            "pruned": {
                "type": "array",
                "items": _object({"id": _TEXT, "path": _PATH, "expires_at": _nullable(_TEXT)}),
            },
            "count": _COUNT,
        }
    ),
    "reindex": _object(
        {
            "store": _TEXT,
            "memory_count": _COUNT,
            "embedding_model": _TEXT,
            "renamed": {"type": "array", "items": _TEXT},
            "rolled_back": {"type": "array", "items": _TEXT},
        },
        required=("store", "memory_count", "embedding_model"),
    ),
    "stores": _listed(
        "stores",
        _object({"name": _TEXT, "memory_count": _COUNT, "deleted_count": _COUNT, "expired_count": _COUNT}),
    ),
    "store_created": _object({"name": _TEXT, "memory_count": _COUNT, "created": _FLAG}),
    "category": _CATEGORY,
    "category_deleted": _object({**_CATEGORY["properties"], "deleted": _FLAG, "restorable": _FLAG}),
    # the namespaced agent tools (spec 003): the sentence and what it names; the hits as objects
    "manage": _object(
        {"action": {"type": "string", "enum": ["create", "update", "delete"]}, "id": _TEXT, "result": _TEXT}
    ),
    "facts": _listed(
        "results",
        _object(
            {
                "namespace": {"type": "array", "items": _TEXT},
                "id": _TEXT,
                "content": _TEXT,
                "metadata": {"type": "object"},
                "created_at": _TEXT,
                "updated_at": _TEXT,
                "score": _NUMBER,
            }
        ),
    ),
}


def compact_input_schema(schema: Schema) -> Schema:
    """An argument schema without what pydantic adds for Python's sake: titles (the names say them) and null
    defaults (an optional argument is one not required); a nullable type stays `anyOf [X, null]`, which every
    client reads, and the namespaced agent tools state which namespace arguments they need (`namespace_rule`)."""
    return _compacted(schema)  # type: ignore[no-any-return]


def _compacted(node: Any) -> Any:
    if isinstance(node, list):
        return [_compacted(item) for item in node]
    if not isinstance(node, dict):
        return node
    # a title is text; a property called "title" (a schema, not text) stays; a null default is said by absence
    return {
        key: _compacted(value)
        for key, value in node.items()
        if not (key == "title" and isinstance(value, str)) and not (key == "default" and value is None)
    }


def _given(name: str, kind: str) -> Schema:
    return {"required": [name], "properties": {name: {"type": kind}}}


# what resolve_namespace needs (domain/namespaces.py): a namespace, else user_id, else org_id and agent_id, each
# given and not null (a namespace's {placeholders} need their keys too, which only the call can tell)
NAMESPACE_RULE: Schema = {
    "anyOf": [
        _given("namespace", "array"),
        _given("user_id", "string"),
        {
            "required": ["org_id", "agent_id"],
            "properties": {"org_id": {"type": "string"}, "agent_id": {"type": "string"}},
        },
    ]
}


def namespace_rule(schema: Schema) -> Schema:
    """An agent tool's argument schema with the rule on its namespace arguments as a whole."""
    return {**schema, **NAMESPACE_RULE}


__all__ = ["SCHEMAS", "compact_input_schema", "memory_schema", "namespace_rule", "view_schema"]
