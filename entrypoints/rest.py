"""The REST door (`memory serve`): every use case over HTTP and JSON on Litestar, failures as {"error", "code"}."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import replace
from datetime import datetime
from http import HTTPStatus
from typing import Annotated, Any, Generic, TypeVar
from urllib.parse import parse_qsl, urlencode

import anyio
import attrs
from litestar import Litestar, Request, Response, Router, delete, get, patch, post, put
from litestar.config.cors import CORSConfig
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.dto import AbstractDTO, DTOConfig, DTOData, DTOField
from litestar.dto.data_structures import DTOFieldDefinition
from litestar.enums import OpenAPIMediaType
from litestar.exceptions import (
    ClientException,
    HTTPException,
    NotAuthorizedException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.spec import Components, SecurityScheme, Tag
from litestar.params import FromPath, JSONBody, KwargDefinition, Parameter, PathParameter
from litestar.types import Guard
from litestar.types.empty import Empty
from litestar.typing import FieldDefinition
from returns.methods import unwrap_or_failure
from returns.result import Failure, Result, Success

from agent_memory._version import __version__
from agent_memory.domain import commands as c
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory, doc, field_doc
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.model import check_namespace
from agent_memory.domain.results import validated
from agent_memory.domain.searching import MAX_SEARCH_LIMIT
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import Listing, MemoryView, Status
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.door_words import worded
from agent_memory.entrypoints.error_table import row
from agent_memory.entrypoints.http_safety import HttpPolicy, json_body_problem, media_type_problem, refuse_open_bind
from agent_memory.entrypoints.json_codec import parse_iso
from agent_memory.entrypoints.paging import listing_page_json, search_page, search_page_json
from agent_memory.entrypoints.rest_docs import OfflineDocsPlugin
from agent_memory.entrypoints.settings import Settings
from agent_memory.entrypoints.tenancy import UNAUTHORIZED, Tenancy

T = TypeVar("T")
Payload = dict[str, Any]

MAX_BODY_BYTES = 1_048_576
DEFAULT_PAGE = 100
MAX_PAGE = 1000
MAX_RECENT = 100
DOCS_PATH = "/docs"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
LOG = logging.getLogger("agent_memory.rest")

# codes of the failures Litestar raises before a use case runs (routing, auth, parsing)
HTTP_CODES: Mapping[int, str] = {
    400: "INVALID_INPUT",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN_ORIGIN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "REQUEST_TOO_LARGE",
    415: "INVALID_INPUT",  # a body that is not JSON: the caller's request to fix, like a malformed one
    421: "MISDIRECTED_REQUEST",
}


@attrs.frozen(kw_only=True)
class ErrorBody:
    """Every failure's JSON: a message, a stable code, and the path or the fields concerned when known."""

    error: str
    code: str
    path: str | None = None
    cause: str | None = None
    details: list[dict[str, Any]] | None = None


_MEANING: Mapping[int, str] = {
    400: "Malformed request: not JSON, not UTF-8, nested past 64 levels, a wrong type, an unknown enum value, "
    "a missing or unknown field, an unknown or repeated query parameter (INVALID_INPUT)",
    401: "No or a wrong API token (UNAUTHORIZED); only when the server has one",
    403: "A browser Origin that is not allowed (FORBIDDEN_ORIGIN): see MEMORY_ALLOWED_ORIGINS",
    404: "MEMORY_NOT_FOUND, CATEGORY_NOT_FOUND or STORE_NOT_FOUND",
    409: "DESTINATION_EXISTS, INVALID_OPERATION (already deleted, cannot reinforce, store-wide under a namespace) or EMBEDDING_MISMATCH",
    410: "MEMORY_EXPIRED: pass include_expired=true to read or change it anyway",
    413: "The body is larger than 1 MiB (REQUEST_TOO_LARGE)",
    415: "A body that is not 'Content-Type: application/json' (INVALID_INPUT)",
    421: "A Host header that names another server (MISDIRECTED_REQUEST): see MEMORY_ALLOWED_HOSTS",
    422: "INVALID_INPUT or INVALID_PATH: a value the use case refuses; the message says how to fix it",
    503: "BACKEND_UNAVAILABLE, STORAGE_ERROR or EMBEDDING_ERROR: retry later",
}


def _errors(*statuses: int) -> dict[int, ResponseSpec]:
    """The documented failures of one route (401, 403, 421 and 400 on every route: token, Origin, Host, query)."""
    return {
        status: ResponseSpec(data_container=ErrorBody, description=_MEANING[status], generate_examples=False)
        for status in sorted({400, 401, 403, 421, *statuses})
    }


def error_body(error: DomainError) -> Payload:
    """{"error", "code"} plus the path and, for the caller's own mistakes, the cause."""
    body: Payload = {"error": worded(error.message, "rest"), "code": error.code.value}
    if error.path is not None:
        body["path"] = error.path
    if error.cause is not None and row(error).http_status < 500:
        body["cause"] = error.cause
    return body


def _failure(error: DomainError) -> Response[Payload]:
    return Response(error_body(error), status_code=row(error).http_status)


def _no_route(message: str) -> Response[Payload]:
    return Response({"error": message, "code": "NOT_FOUND"}, status_code=404)


Locate = Callable[[T], str]


def _reply(
    outcome: Result[T, DomainError], render: Callable[[T], Payload], status: int = 200, locate: Locate[T] | None = None
) -> Response[Payload]:
    """The thin door's last step: a success rendered with the CLI's JSON shapes (with `locate`, a Location header
    naming where to read what was created), a failure as its error body."""

    def success(value: T) -> Response[Payload]:
        headers = None if locate is None else {"Location": locate(value)}
        return Response(render(value), status_code=status, headers=headers)

    return unwrap_or_failure(outcome.map(success).alt(_failure))


def _with_store(url: str, store: str | None, **query: str) -> str:
    """A URL of this API, with the store and other query parameters when given."""
    given = {**query, **({} if store is None else {"store": store})}
    return url + ("?" + urlencode(given) if given else "")


# --- the service, one call at a time ---------------------------------------------------------------

Use = Callable[[MemoryService], Result[T, DomainError]]


class Door:
    """The service behind a lock, called in a worker thread: the event loop stays free (/health answers during a
    reindex) and read-check-write steps of concurrent requests never interleave. One door per caller namespace
    (tenancy.py), all sharing the lock."""

    def __init__(self, service: MemoryService, lock: threading.Lock | None = None) -> None:
        self.service = service
        self._lock = lock or threading.Lock()

    def _locked(self, use: Use[T]) -> Result[T, DomainError]:
        with self._lock:
            return use(self.service)

    async def run(self, use: Use[T]) -> Result[T, DomainError]:
        return await anyio.to_thread.run_sync(self._locked, use)

    async def reply(
        self, use: Use[T], render: Callable[[T], Payload], status: int = 200, locate: Locate[T] | None = None
    ) -> Response[Payload]:
        """Run one use case and answer with its JSON (the CLI's shapes) or its error body."""
        return _reply(await self.run(use), render, status, locate)


def _guarded(
    namespace: str | None, call: Callable[[MemoryService, tuple[str, ...] | None], Result[T, DomainError]]
) -> Use[T]:
    """A use case behind the `?namespace=a/b` tenant guard (INVALID_INPUT if the labels are not valid)."""
    return lambda service: _namespace(namespace).bind(lambda guard: call(service, guard))


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
                    field_definition=_documented(hints[attribute.name], attribute, attribute.name in cls.deprecated),
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


def _documented(definition: FieldDefinition, attribute: attrs.Attribute[Any], deprecated: bool) -> FieldDefinition:
    """A body field with its command's description (domain.commands) for the OpenAPI. Bounds and choices are in
    the sentence and checked by the use case, whose errors say what to do (the DTO's own would not)."""
    described = field_doc(attribute)
    if not described.text:
        return definition
    extra = {"deprecated": True} if deprecated else None
    return replace(definition, kwarg_definition=KwargDefinition(description=described.text, schema_extra=extra))


def _config(*exclude: str, **renamed: str) -> DTOConfig:
    # `global` is a Python keyword: the commands spell it global_, the JSON (like the MCP tools) `global`
    return DTOConfig(exclude=set(exclude), rename_fields={"global_": "global", **renamed}, forbid_unknown_fields=True)


class CreateBody(AttrsDTO[CreateMemory]):
    config = _config("store")


class UpdateBody(AttrsDTO[UpdateMemory]):
    config = _config("ref", "store", "namespace", "include_expired")  # include_expired is a query parameter


@attrs.frozen(kw_only=True)
class SearchRequest(SearchMemories):
    """POST /search: the search command (its limit and offset page through the hits). Its category filter is
    `category` on the wire, as on the CLI and the MCP tool; `path_prefix`, its old name, still works."""

    legacy_path_prefix: str | None = attrs.field(
        default=None, metadata=doc("Deprecated: the old name of `category`. Give `category` instead.")
    )


def _search_command(request: SearchRequest) -> SearchMemories:
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


@attrs.frozen(kw_only=True)
class MoveRequest:
    """POST /memories/{ref}/move (deprecated: POST /move): the new path."""

    destination: str


@attrs.frozen(kw_only=True)
class PruneRequest:
    """POST /prune: with dry_run, only list what would go."""

    dry_run: bool = False


@attrs.frozen(kw_only=True)
class StoreRequest:
    """POST /stores: the new store's name."""

    name: str


@attrs.frozen(kw_only=True)
class CategoryRequest:
    """POST /categories: the category path and an optional description (at most 500 characters)."""

    path: str
    description: str = ""


@attrs.frozen(kw_only=True)
class DescriptionRequest:
    """PUT /categories/{path}/description: the new description (at most 500 characters)."""

    description: str


# --- query parameters ------------------------------------------------------------------------------

StoreQuery = Annotated[str | None, Parameter(description="The store to use; omit for the configured default.")]
NamespaceQuery = Annotated[
    str | None,
    Parameter(description="Tenant guard: only act on memories in this namespace or below it, e.g. 'user/u-123'."),
]
IncludeExpired = Annotated[bool, Parameter(description="Also return memories whose expiry has passed.")]
ActOnExpired = Annotated[
    bool, Parameter(description="Act on the memory even if its expiry has passed (410 MEMORY_EXPIRED otherwise).")
]
CategoryQuery = Annotated[str | None, Parameter(description="Only memories under this category path.")]


def _ref(raw: str) -> str:
    """A `{name:path}` parameter arrives with its leading slash."""
    return raw.lstrip("/")


def _namespace(raw: str | None) -> Result[tuple[str, ...] | None, DomainError]:
    return Success(None) if raw is None else validated(lambda: check_namespace(raw))


def _utc(name: str, moment: datetime | None) -> Result[datetime | None, DomainError]:
    """A JSON timestamp with any offset (naive means UTC) as an aware UTC datetime, as the CLI reads it."""
    try:
        return Success(None if moment is None else parse_iso(moment))
    except (ValueError, OverflowError):
        return Failure(
            invalid_input(f"{name} {moment} cannot be expressed in UTC: give a timestamp between 0001 and 9999.")
        )


def _create_in_utc(command: CreateMemory) -> Result[CreateMemory, DomainError]:
    return _utc("expires_at", command.expires_at).bind(
        lambda expires: _utc("created_at", command.created_at).map(
            lambda made: attrs.evolve(command, expires_at=expires, created_at=made)
        )
    )


def _update_in_utc(command: UpdateMemory) -> Result[UpdateMemory, DomainError]:
    return _utc("expires_at", command.expires_at).map(lambda expires: attrs.evolve(command, expires_at=expires))


def _placed(command: CreateMemory) -> CreateMemory | c.AddMemory:
    """A body with a path asks for add (its path must be free; store and categories are made as needed)."""
    if command.path is None:
        return command
    return c.AddMemory(**{**attrs.asdict(command, recurse=False), "path": command.path})


def _check_page(name: str, value: int | None, least: int, most: int, source: str) -> None:
    """A limit or offset out of its range is a 400, as Litestar answers one in the query of GET /memories."""
    if value is not None and not least <= value <= most:
        message = f"must be between {least} and {most}, got {value}"
        raise ValidationException(extra=[{"message": message, "key": name, "source": source}])


# --- memories --------------------------------------------------------------------------------------


@post(
    "/memories",
    dto=CreateBody,
    return_dto=None,
    status_code=201,
    tags=["memories"],
    responses=_errors(400, 409, 413, 415, 422, 503),
)
async def create_memory(
    data: JSONBody[DTOData[CreateMemory]], door: NamedDependency[Door], store: StoreQuery = None
) -> Response[Payload]:
    """Store a new memory. With `path` it is created at that path (409 DESTINATION_EXISTS if taken)."""
    command = data.create_instance(store=store)
    return await door.reply(
        lambda service: _create_in_utc(command).bind(lambda ready: dispatch(service, _placed(ready))),
        out.view_json,
        201,
        lambda view: _with_store(f"/memories/{view.memory.id}", store),
    )


@get("/memories/{ref:path}", tags=["memories"], responses=_errors(404, 410, 422, 503))
async def get_memory(
    ref: FromPath[str],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    include_expired: IncludeExpired = False,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """One memory by id or path; an expired one is 410 MEMORY_EXPIRED unless include_expired."""
    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(
                service, c.GetMemory(ref=_ref(ref), store=store, include_expired=include_expired, namespace=guard)
            ),
        ),
        out.view_json,
    )


@patch(
    "/memories/{ref:path}",
    dto=UpdateBody,
    return_dto=None,
    tags=["memories"],
    responses=_errors(400, 404, 409, 410, 413, 415, 422, 503),
)
async def update_memory(
    ref: FromPath[str],
    data: JSONBody[DTOData[UpdateMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
    include_expired: ActOnExpired = False,
) -> Response[Payload]:
    """Change content or metadata. Omitted or null fields are kept; tags/citations replace, [] clears them."""

    def update(service: MemoryService, guard: tuple[str, ...] | None) -> Result[MemoryView, DomainError]:
        command = data.create_instance(ref=_ref(ref), store=store, namespace=guard, include_expired=include_expired)
        return _update_in_utc(command).bind(lambda ready: dispatch(service, ready))

    return await door.reply(_guarded(namespace, update), out.view_json)


@delete("/memories/{ref:path}", status_code=200, tags=["memories"], responses=_errors(400, 404, 409, 410, 422, 503))
async def delete_memory(
    ref: FromPath[str],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
    hard: Annotated[bool, Parameter(description="Remove it for good instead of soft-deleting it.")] = False,
    include_expired: ActOnExpired = False,
) -> Response[Payload]:
    """Soft-delete a memory (409 if already deleted, 410 if expired unless include_expired); with ?hard=true
    remove it for good, deleted or expired or not."""
    if hard:
        return await door.reply(
            _guarded(
                namespace,
                lambda service, guard: dispatch(service, c.RemoveMemory(ref=_ref(ref), store=store, namespace=guard)),
            ),
            out.removed_json,
        )
    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(
                service,
                c.DeleteMemory(ref=_ref(ref), store=store, namespace=guard, include_expired=include_expired),
            ),
        ),
        out.deleted_json,
    )


NamespaceGuard = tuple[str, ...] | None


def _guarded_command(namespace: str | None, command: Callable[[NamespaceGuard], c.Asks[T]]) -> Use[T]:
    """A command made under the `?namespace=` guard, dispatched."""
    return _guarded(namespace, lambda service, guard: dispatch(service, command(guard)))


@post(
    "/reinforce",
    dto=ReinforceBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=_errors(400, 404, 409, 410, 413, 415, 422, 503),
)
async def reinforce_memory(
    data: JSONBody[DTOData[c.ReinforceMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """Reset the decay of the memory named by `ref` (decay policy 'reinforceable'; 409 INVALID_OPERATION for
    stable or contextual ones, 410 MEMORY_EXPIRED for an expired one)."""
    return await door.reply(
        _guarded_command(namespace, lambda guard: data.create_instance(store=store, namespace=guard)), out.view_json
    )


@post(
    "/move",
    dto=MoveBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=_errors(400, 404, 409, 410, 413, 415, 422, 503),
)
async def move_memory(
    data: JSONBody[DTOData[c.MoveMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """Give the memory named by `ref` the path `destination` (409 DESTINATION_EXISTS if taken; an expired memory
    is 410 MEMORY_EXPIRED unless `include_expired`)."""
    return await door.reply(
        _guarded_command(namespace, lambda guard: data.create_instance(store=store, namespace=guard)), out.view_json
    )


@post(
    "/memories/{ref:path}",
    status_code=200,
    tags=["memories"],
    summary="Reinforce or move a memory (deprecated: POST /reinforce, POST /move)",
    deprecated=True,
    responses=_errors(400, 404, 409, 410, 413, 415, 422, 503),
)
async def memory_action(
    ref: Annotated[str, PathParameter(description="The memory's id or path, then '/reinforce' or '/move'.")],
    door: NamedDependency[Door],
    data: JSONBody[MoveRequest | None] = None,
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
    include_expired: ActOnExpired = False,
) -> Response[Payload]:
    """Deprecated, kept for older clients: POST /memories/{ref}/reinforce is POST /reinforce with {"ref": ref};
    POST /memories/{ref}/move with {"destination": "category/slug"} is POST /move with the ref in the body.
    """
    # a ref may be a path of several segments, and Litestar's path parameter must come last, so the action is
    # the last segment (POST on a memory itself means nothing else)
    memory, _, action = _ref(ref).rpartition("/")
    if action == "reinforce" and memory:
        return await door.reply(
            _guarded_command(namespace, lambda guard: c.ReinforceMemory(ref=memory, store=store, namespace=guard)),
            out.view_json,
        )
    if action == "move" and memory:
        if data is None:
            return _failure(invalid_input('move needs a JSON body like {"destination": "category/slug"}.'))
        destination = data.destination
        return await door.reply(
            _guarded_command(
                namespace,
                lambda guard: c.MoveMemory(
                    ref=memory, destination=destination, store=store, namespace=guard, include_expired=include_expired
                ),
            ),
            out.view_json,
        )
    return _no_route(f"POST /memories/{_ref(ref)} names no action: use POST /reinforce or POST /move.")


@get("/memories", tags=["memories"], responses=_errors(400, 404, 422, 503))
async def list_memories(
    door: NamedDependency[Door],
    category: CategoryQuery = None,
    store: StoreQuery = None,
    include_expired: IncludeExpired = False,
    namespace: NamespaceQuery = None,
    limit: Annotated[int, Parameter(ge=1, le=MAX_PAGE, description="Page size.")] = DEFAULT_PAGE,
    offset: Annotated[int, Parameter(ge=0, description="How many memories to skip.")] = 0,
) -> Response[Payload]:
    """A category's memories (recursively, newest update first), one page of them, and its subcategories."""

    def page(listing: Listing) -> Payload:
        return listing_page_json(listing, limit, offset, compact=False)

    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(
                service,
                c.ListMemories(
                    category=category,
                    store=store,
                    include_expired=include_expired,
                    namespace=guard,
                    limit=limit,
                    offset=offset,
                ),
            ),
        ),
        page,
    )


@get("/recent", tags=["memories"], responses=_errors(400, 404, 422, 503))
async def recent_memories(
    door: NamedDependency[Door],
    limit: Annotated[int, Parameter(ge=1, le=MAX_RECENT, description="How many, 1 to 100.")] = 5,
    category: CategoryQuery = None,
    store: StoreQuery = None,
    include_expired: IncludeExpired = False,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """The most recently updated memories, newest first."""
    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(
                service,
                c.RecentMemories(
                    store=store, limit=limit, category=category, include_expired=include_expired, namespace=guard
                ),
            ),
        ),
        out.recent_json,
    )


@post(
    "/search",
    dto=SearchBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=_errors(400, 404, 409, 413, 415, 422, 503),
)
async def search_memories(
    data: JSONBody[DTOData[SearchRequest]], door: NamedDependency[Door], store: StoreQuery = None
) -> Response[Payload]:
    """Find memories by meaning, best first, under the filters; each hit has similarity, confidence and score.
    `limit` (1–1000, default 10) and `offset` page through the hits; `has_more` says whether more follow."""
    request = data.create_instance(store=store)
    _check_page("limit", request.limit, 1, MAX_SEARCH_LIMIT, "body")
    _check_page("offset", request.offset, 0, MAX_SEARCH_LIMIT - 1, "body")
    command = _search_command(request)
    return await door.reply(lambda service: search_page(service, command), search_page_json)


# --- maintenance, stores, categories, health ------------------------------------------------------


@post("/prune", status_code=200, tags=["maintenance"], responses=_errors(400, 404, 422, 503))
async def prune(
    door: NamedDependency[Door],
    data: JSONBody[PruneRequest | None] = None,
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """Remove every expired memory (of the namespace, if given) for good; {"dry_run": true} only lists them."""
    dry_run = data is not None and data.dry_run
    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(service, c.PruneMemories(store=store, dry_run=dry_run, namespace=guard)),
        ),
        out.prune_json,
    )


@post("/reindex", status_code=200, tags=["maintenance"], responses=_errors(404, 409, 422, 503))
async def reindex(door: NamedDependency[Door], store: StoreQuery = None) -> Response[Payload]:
    """Re-embed every memory of the store with the configured embedder."""
    return await door.reply(lambda service: dispatch(service, c.ReindexStore(store=store)), out.reindex_json)


@get(
    "/stores",
    tags=["stores"],
    responses=_errors(
        503,
    ),
)
async def list_stores(door: NamedDependency[Door]) -> Response[Payload]:
    """Every store with its memory count."""
    return await door.reply(lambda service: dispatch(service, c.ListStores()), out.stores_json)


@post("/stores", status_code=201, tags=["stores"], responses=_errors(400, 409, 413, 415, 422, 503))
async def create_store(data: JSONBody[StoreRequest], door: NamedDependency[Door]) -> Response[Payload]:
    """Create an empty store; 409 DESTINATION_EXISTS if there is one by that name."""
    return await door.reply(
        lambda service: dispatch(service, c.CreateStore(name=data.name)),
        lambda summary: {"name": summary.name, "memory_count": 0, "created": True},
        201,
        lambda summary: _with_store("/memories", summary.name),
    )


@post("/categories", status_code=201, tags=["categories"], responses=_errors(400, 409, 413, 415, 422, 503))
async def create_category(
    data: JSONBody[CategoryRequest], door: NamedDependency[Door], store: StoreQuery = None
) -> Response[Payload]:
    """Register a category (a no-op if it exists), optionally with a description."""
    return await door.reply(
        lambda service: dispatch(
            service, c.CreateCategory(category=data.path, description=data.description, store=store)
        ),
        out.category_json,
        201,
        lambda summary: _with_store("/memories", store, category=summary.path),
    )


@put(
    "/categories/{path:path}",
    tags=["categories"],
    summary="Set a category's description",
    responses=_errors(400, 404, 409, 413, 415, 422, 503),
)
async def describe_category(
    path: Annotated[str, PathParameter(description="The category path, then '/description'.")],
    data: JSONBody[DescriptionRequest],
    door: NamedDependency[Door],
    store: StoreQuery = None,
) -> Response[Payload]:
    """PUT /categories/{path}/description with {"description": "..."} (at most 500 characters)."""
    category, _, leaf = _ref(path).rpartition("/")
    if leaf != "description" or not category:
        return _no_route("Set a description with PUT /categories/<category path>/description.")
    return await door.reply(
        lambda service: dispatch(
            service, c.DescribeCategory(category=category, description=data.description, store=store)
        ),
        out.category_json,
    )


@delete("/categories/{path:path}", status_code=200, tags=["categories"], responses=_errors(404, 422, 503))
async def delete_category(
    path: FromPath[str], door: NamedDependency[Door], store: StoreQuery = None, namespace: NamespaceQuery = None
) -> Response[Payload]:
    """Delete a non-root category with its subcategories and memories (under a namespace, only its own), for good."""
    return await door.reply(
        _guarded(
            namespace,
            lambda service, guard: dispatch(
                service, c.DeleteCategory(category=_ref(path), store=store, namespace=guard)
            ),
        ),
        lambda summary: {**out.category_json(summary), "deleted": True},
    )


def _status_json(found: Status) -> Payload:
    """The status JSON with each problem's advice worded for REST callers."""
    body = out.status_json(found)
    if "problems" in body:
        body["problems"] = [worded(problem, "rest") for problem in body["problems"]]
    return body


@get("/status", tags=["health"], responses=_errors(404, 422, 503))
async def status(door: NamedDependency[Door], store: StoreQuery = None) -> Response[Payload]:
    """Reach the backend and count the store's memories; a failure adds "status": "unhealthy" (503 if it is down)."""
    outcome = await door.run(lambda service: dispatch(service, c.StoreStatus(store=store)))
    return unwrap_or_failure(
        outcome.map(lambda found: Response(_status_json(found))).alt(
            lambda error: Response({"status": "unhealthy", **error_body(error)}, status_code=row(error).http_status)
        )
    )


@get("/health", tags=["health"], opt={"public": True})
async def health(request: Request[Any, Any, Any]) -> Payload:
    """Liveness: the server answers, with its version and the backend it is configured for, without touching the
    backend (/status does). Never needs the token: it shows no memory, store or namespace."""
    return {"status": "ok", "version": __version__, "backend": request.app.state.backend}


@get("/openapi.json", include_in_schema=False, opt={"public": True}, media_type=OpenAPIMediaType.OPENAPI_JSON)
async def openapi_json(request: Request[Any, Any, Any]) -> Payload:
    """The OpenAPI document (also at /docs/openapi.json, next to the Swagger UI)."""
    return request.app.openapi_schema.to_schema()


HANDLERS = [
    create_memory,
    get_memory,
    update_memory,
    delete_memory,
    reinforce_memory,
    move_memory,
    memory_action,
    list_memories,
    recent_memories,
    search_memories,
    prune,
    reindex,
    list_stores,
    create_store,
    create_category,
    describe_category,
    delete_category,
    status,
    health,
    openapi_json,
]


# --- errors Litestar raises, and the ones nobody expected ----------------------------------------


def _http_error(_request: Request[Any, Any, Any], error: HTTPException) -> Response[Payload]:
    """Routing, auth, size and parsing failures in the same {"error", "code"} shape as the domain's."""
    status_code = error.status_code
    code = HTTP_CODES.get(status_code) or HTTPStatus(status_code).name
    message = str(error.detail) or HTTPStatus(status_code).phrase
    body: Payload = {"error": message, "code": code}
    if isinstance(error, ValidationException) and isinstance(error.extra, list) and error.extra:
        body["details"] = error.extra
        problems = "; ".join(_problem(item) for item in error.extra if isinstance(item, dict))
        body["error"] = f"Invalid request: {problems}." if problems else message
    return Response(body, status_code=status_code, headers=error.headers)


def _problem(item: Mapping[str, Any]) -> str:
    if item.get("key") == "data" and item.get("message") == "'data'":
        return "the request needs a JSON body"  # Litestar's words for a missing body
    return f"{item.get('key')}: {item.get('message')}"


def _unexpected(request: Request[Any, Any, Any], error: Exception) -> Response[Payload]:
    """A bug: logged with its traceback, answered with a JSON 500 that shows none of it."""
    LOG.exception("Unexpected error on %s %s", request.method, request.url.path, exc_info=error)
    return Response(
        {"error": "Unexpected server error; it has been logged. Please report it.", "code": "INTERNAL_ERROR"},
        status_code=500,
    )


# --- the app ---------------------------------------------------------------------------------------


def _token_guard(tenancy: Tenancy) -> Guard:
    def guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        if handler.opt.get("public"):
            return
        allowed, _ = tenancy.namespace_of(connection.headers.get("authorization"))
        if not allowed:
            raise NotAuthorizedException(UNAUTHORIZED, headers={"WWW-Authenticate": 'Bearer realm="agent-memory"'})

    return guard


def _doors(service: MemoryService, tenancy: Tenancy) -> Callable[[Request[Any, Any, Any]], Door]:
    """The door of a request's caller: the service pinned to the namespace of its token (or of the server)."""
    lock = threading.Lock()
    doors = {pin: Door(pinned, lock) for pin, pinned in tenancy.services(service).unwrap().items()}

    def door(request: Request[Any, Any, Any]) -> Door:
        allowed, pin = tenancy.namespace_of(request.headers.get("authorization"))
        if not allowed:  # the token guard has refused it already; never fall back to a wider door
            raise NotAuthorizedException(UNAUTHORIZED)
        return doors[pin]

    return door


def _caller_guard(policy: HttpPolicy) -> Guard:
    """Host and Origin first, on every route (public ones too): a web page never gets in, token or not."""

    def guard(connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler) -> None:
        host = connection.headers.get("host")
        if not policy.host_allowed(host):
            # 421 Misdirected Request, not 403: the request names another server (RFC 9110 §15.5.20), which is
            # what a DNS-rebound page does; it is also what the MCP SDK answers, so both HTTP doors agree
            raise HTTPException(policy.host_refusal(host), status_code=421)
        origin = connection.headers.get("origin")
        if origin is not None and not policy.origin_allowed(origin, host):
            raise PermissionDeniedException(policy.origin_refusal(origin))

    return guard


# the query parameters each route declares, filled in once the app has built its routes
QueryNames = dict[BaseRouteHandler, frozenset[str]]


def _declared_queries(app: Litestar) -> QueryNames:
    return {
        handler: frozenset(parameter.field_alias for parameter in model.expected_query_params)
        for route in app.routes
        for handler, model in getattr(route, "route_handler_map", {}).values()
    }


def _query_problem(request: Request[Any, Any, Any], declared: QueryNames) -> str | None:
    """An unknown or repeated query parameter: refused, never ignored, so `?namespace=` on a route that reads
    the namespace from its body (or a misspelt `?namepsace=` on one that reads it here) cannot widen the guard."""
    names = [name for name, _ in parse_qsl(request.scope.get("query_string", b"").decode("latin-1"), True)]
    takes = declared.get(request.route_handler, frozenset())
    unknown = sorted({name for name in names if name not in takes})
    if unknown:
        allowed = ", ".join(sorted(takes)) or "none"
        return f"Unknown query parameter(s) {', '.join(unknown)} for {request.method} {request.url.path}; allowed: {allowed}."
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return f"Query parameter(s) {', '.join(repeated)} given more than once: give each once."
    return None


def _has_body(request: Request[Any, Any, Any]) -> bool:
    return request.headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in request.headers


def _request_checks(declared: QueryNames) -> Callable[[Request[Any, Any, Any]], Awaitable[None]]:
    """Before any parsing: the query names, then JSON-only bodies that are UTF-8 and at most 64 levels deep."""

    async def check(request: Request[Any, Any, Any]) -> None:
        if request.method == "OPTIONS":
            return
        problem = _query_problem(request, declared)
        if problem:
            raise ClientException(problem)
        if request.method not in BODY_METHODS:
            return
        has_body = _has_body(request)
        unsupported = media_type_problem(request.headers.get("content-type"), has_body)
        if unsupported:
            raise ClientException(unsupported, status_code=415)
        if has_body:
            malformed = json_body_problem(await request.body())
            if malformed:
                raise ClientException(malformed)

    return check


def _cors(policy: HttpPolicy) -> CORSConfig | None:
    """Browsers may call the API only from the configured origins (none by default)."""
    if not policy.allowed_origins:
        return None
    return CORSConfig(
        allow_origins=list(policy.allowed_origins),
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=["Authorization", "Content-Type"],
        max_age=600,
    )


def _openapi(secured: bool) -> OpenAPIConfig:
    return OpenAPIConfig(
        title="agent-memory",
        version=__version__,
        description='Long-term memory for AI agents. Every failure is {"error": message, "code": CODE}.',
        path=DOCS_PATH,
        render_plugins=[OfflineDocsPlugin(path="/")],  # no CDN: the page works offline
        openapi_router=Router(DOCS_PATH, route_handlers=[], opt={"public": True}, include_in_schema=False),
        use_handler_docstrings=True,
        tags=[Tag(name=name) for name in ("memories", "maintenance", "stores", "categories", "health")],
        components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
        security=[{"bearer": []}] if secured else None,
    )


def build_app(
    service: MemoryService,
    *,
    api_token: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    tenancy: Tenancy | None = None,
) -> Litestar:
    """The ASGI app over a ready service, bound to `host`; with a token, every route but /health and the docs
    needs it. Host and Origin are checked on every route (http_safety.HttpPolicy): loopback names, the bound
    address and `allowed_hosts`; no Origin, the same origin, loopback ones and `allowed_origins`. `tenancy`
    (its pins must be valid: Tenancy.services) pins each caller to a namespace; `api_token` alone is a
    Tenancy without pins."""
    tenancy = tenancy or Tenancy(api_token=api_token)
    policy = HttpPolicy(bind_host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    declared: QueryNames = {}
    app = Litestar(
        route_handlers=HANDLERS,
        dependencies={"door": Provide(_doors(service, tenancy), sync_to_thread=False)},
        guards=[_caller_guard(policy), *([_token_guard(tenancy)] if tenancy.secured else [])],
        before_request=_request_checks(declared),
        cors_config=_cors(policy),
        exception_handlers={HTTPException: _http_error, Exception: _unexpected},
        openapi_config=_openapi(tenancy.secured),
        state=State({"backend": service.catalog.backend}),  # a name, read once: /health never reaches the backend
        request_max_body_size=MAX_BODY_BYTES,
        logging_config=None,  # the host process owns logging; failures go to the "agent_memory.rest" logger
        debug=False,
    )
    declared.update(_declared_queries(app))
    return app


def _startup_failure(error: DomainError) -> int:
    """The server does not start: its error body on stderr, exit code 1."""
    import json

    sys.stderr.write(json.dumps(error_body(error), ensure_ascii=False) + "\n")
    return row(error).exit_code


def run_rest(settings: Settings, host: str = "127.0.0.1", port: int = 8080, api_token: str | None = None) -> int:
    """Build the service from the settings and serve until interrupted; the exit code."""
    import uvicorn

    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.http_protocol import json_400_protocol

    tenancy = Tenancy.of(settings, api_token)
    # no token is a promise that only this machine's users reach the server: refused, not logged, elsewhere
    refusal = refuse_open_bind(host, "token" if tenancy.secured else None, "the REST API")
    if refusal is not None:
        return _startup_failure(refusal)
    match build_service(settings).bind(lambda built: tenancy.services(built).map(lambda _: built)):
        case Success(service):
            service.catalog.keep_warm()  # a long-lived process: its stores' mirrors are read in the background
            app = build_app(
                service,
                host=host,
                allowed_hosts=settings.allowed_hosts,
                allowed_origins=settings.allowed_origins,
                tenancy=tenancy,
            )
        case Failure(error):
            return _startup_failure(error)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s: %(message)s")
    # on Ctrl-C uvicorn shuts down cleanly, then re-raises the signal (so SIGTERM ends the process as -15)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(
            app,
            host=host,
            port=port,
            log_level="info",
            http=json_400_protocol(),
        )
    return 0
