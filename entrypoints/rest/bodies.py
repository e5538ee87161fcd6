"""The REST door's request bodies and query parameters: the domain commands, read by a small attrs DTO."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

import attrs
from litestar.dto import AbstractDTO, DTOConfig, DTOField
from litestar.dto.data_structures import DTOFieldDefinition
from litestar.exceptions import ValidationException
from litestar.params import HeaderParameter, KwargDefinition, Parameter, PathParameter
from litestar.types.empty import Empty
from litestar.typing import FieldDefinition
from returns.result import Failure, Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import doc, field_doc
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.entrypoints.json_codec import parse_iso
from agent_memory.entrypoints.rest.contract import NAMESPACE_TEXT, REF, STORE, field_schema
from agent_memory.entrypoints.timestamps import not_a_timestamp

T = TypeVar("T")

DEFAULT_PAGE = 100
MAX_PAGE = 1000
MAX_RECENT = 100


# --- request bodies: attrs classes read by a small attrs DTO ---------------------------------------


class AttrsDTO(AbstractDTO[T], Generic[T]):
    """Litestar's DTO over attrs classes, so the domain commands are the request bodies (no pydantic twins).
    Fields named in `deprecated` are marked so in the OpenAPI document."""

    deprecated: frozenset[str] = frozenset()

    @classmethod
    def generate_field_definitions(cls, model_type: type[Any]) -> Generator[DTOFieldDefinition, None, None]:
        hints = cls.get_model_type_hints(model_type)
        for attribute in attrs.fields(model_type):
            factory = attribute.default.factory if isinstance(attribute.default, attrs.Factory) else None  # type: ignore[arg-type]
            plain = attribute.default is attrs.NOTHING or factory is not None
            yield replace(
                DTOFieldDefinition.from_field_definition(
                    field_definition=_documented(
                        hints[attribute.name], model_type, attribute, attribute.name in cls.deprecated
                    ),
                    model_name=model_type.__name__,
                    default_factory=factory,
                    dto_field=DTOField(),
                    # the description (and deprecation) only: the use case checks the values, with its own words
                    passthrough_constraints=False,
                ),
                name=attribute.name,
                default=Empty if plain else attribute.default,
            )

    @classmethod
    def detect_nested_field(cls, field_definition: FieldDefinition) -> bool:
        annotation = field_definition.annotation
        return isinstance(annotation, type) and attrs.has(annotation)


def _documented(
    definition: FieldDefinition, command: type[Any], attribute: attrs.Attribute[Any], deprecated: bool
) -> FieldDefinition:
    """A body field with its command's description (domain.commands) and constraints (rest/contract.py) for the
    OpenAPI. The constraints are the document's only: the use case checks the values, and its errors say what to
    do (the DTO's own would not)."""
    described = field_doc(attribute)
    if not described.text:
        return definition
    extra = field_schema(command, attribute, definition.annotation) | ({"deprecated": True} if deprecated else {})
    return replace(definition, kwarg_definition=KwargDefinition(description=described.text, schema_extra=extra))


def _config(*exclude: str, **renamed: str) -> DTOConfig:
    # `global` is a Python keyword: the commands spell it global_, the JSON (like the MCP tools) `global`
    return DTOConfig(exclude=set(exclude), rename_fields={"global_": "global", **renamed}, forbid_unknown_fields=True)


class CreateBody(AttrsDTO[CreateMemory]):
    config = _config("store", "idempotency_key")  # the key is the Idempotency-Key header


class UpdateBody(AttrsDTO[UpdateMemory]):
    config = _config("ref", "store", "namespace", "include_expired")  # include_expired is a query parameter


@attrs.frozen(kw_only=True)
class SearchRequest(SearchMemories):
    """POST /search: the search command (its limit and offset page through the hits). Its category filter is
    `category` on the wire, as on the CLI and the MCP tool; `path_prefix`, its old name, still works."""

    legacy_path_prefix: str | None = attrs.field(
        default=None, metadata=doc("Deprecated: the old name of `category`. Give `category` instead.")
    )


def search_command(request: SearchRequest) -> SearchMemories:
    """The search command, its category from `category` or the deprecated `path_prefix`; both is a 400."""
    if request.legacy_path_prefix is None:
        return request
    if request.path_prefix is not None:
        message = "give the category filter once: keep `category` and drop `path_prefix`, its deprecated old name"
        raise ValidationException(extra=[{"message": message, "key": "path_prefix", "source": "body"}])
    return attrs.evolve(request, path_prefix=request.legacy_path_prefix, legacy_path_prefix=None)


class SearchBody(AttrsDTO[SearchRequest]):
    config = _config("store", path_prefix="category", legacy_path_prefix="path_prefix")
    deprecated = frozenset({"legacy_path_prefix"})


class ReinforceBody(AttrsDTO[c.ReinforceMemory]):
    config = _config("store", "namespace")  # query parameters, as on every route that acts on one memory


class MoveBody(AttrsDTO[c.MoveMemory]):
    config = _config("store", "namespace")


class RestoreBody(AttrsDTO[c.RestoreMemory]):
    config = _config("store", "namespace")


@attrs.frozen(kw_only=True)
class MoveRequest:
    """POST /memories/{ref}/move (deprecated: POST /move): the new path."""

    destination: str


@attrs.frozen(kw_only=True)
class PruneRequest:
    """POST /prune: with dry_run, only list what would go."""

    dry_run: bool = False


class StoreBody(AttrsDTO[c.CreateStore]):
    config = _config()


class CategoryBody(AttrsDTO[c.CreateCategory]):
    # the body has said `path` since the first release: the command's `category` keeps that wire name
    config = _config("store", "namespace", category="path")


class DescriptionBody(AttrsDTO[c.DescribeCategory]):
    config = _config("category", "store", "namespace")  # the category is the URL's path


# --- query parameters ------------------------------------------------------------------------------

StoreQuery = Annotated[
    str | None, Parameter(description="The store to use; omit for the configured default.", schema_extra=STORE)
]
IdempotencyHeader = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        required=False,
        description="A key of your choosing (a UUID, say) that makes a retry safe: a create repeated with the same "
        "key answers the memory the first stored (201, the same id) and stores nothing twice; the same key with "
        "another body is 409 INVALID_OPERATION.",
    ),
]
NamespaceQuery = Annotated[
    str | None,
    Parameter(
        description="Tenant guard: only act on memories in this namespace or below it, e.g. 'user/u-123'.",
        schema_extra=NAMESPACE_TEXT,
    ),
]
ActOnExpired = Annotated[
    bool, Parameter(description="Act on the memory even if its expiry has passed (410 MEMORY_EXPIRED otherwise).")
]
# a memory named in the URL: by id or path (a path's '/' is part of the parameter)
RefPath = Annotated[
    str, PathParameter(description="The memory's path ('category/…/slug') or its id (a UUID).", schema_extra=REF)
]


def path_ref(raw: str) -> str:
    """A `{name:path}` parameter arrives with its leading slash."""
    return raw.lstrip("/")


def _utc(name: str, moment: datetime | None) -> Result[datetime | None, DomainError]:
    """A JSON timestamp with any offset (naive means UTC) as an aware UTC datetime, as the CLI reads it."""
    try:
        return Success(None if moment is None else parse_iso(moment))
    except (ValueError, OverflowError):
        return Failure(invalid_input(not_a_timestamp(moment, name) + "."))


def create_in_utc(command: CreateMemory) -> Result[CreateMemory, DomainError]:
    return _utc("expires_at", command.expires_at).bind(
        lambda expires: _utc("created_at", command.created_at).map(
            lambda made: attrs.evolve(command, expires_at=expires, created_at=made)
        )
    )


def update_in_utc(command: UpdateMemory) -> Result[UpdateMemory, DomainError]:
    return _utc("expires_at", command.expires_at).map(lambda expires: attrs.evolve(command, expires_at=expires))


def check_page(name: str, value: int | None, least: int, most: int, source: str) -> None:
    """A limit or offset out of its range is a 400, as Litestar answers one in the query of GET /memories."""
    if value is not None and not least <= value <= most:
        message = f"must be between {least} and {most}, got {value}"
        raise ValidationException(extra=[{"message": message, "key": name, "source": source}])
