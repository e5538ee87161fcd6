"""The REST door's other routes: maintenance (prune, reindex), stores, categories, status and health."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, Response, delete, get, post, put
from litestar.di import NamedDependency
from litestar.dto import DTOData
from litestar.enums import OpenAPIMediaType
from litestar.params import JSONBody, Parameter, PathParameter
from returns.methods import unwrap_or_failure

from agent_memory._version import __version__
from agent_memory.domain import commands as c
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.views import Status
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.advice import worded
from agent_memory.entrypoints.error_table import row
from agent_memory.entrypoints.rest.bodies import (
    CategoryBody,
    DescriptionBody,
    NamespaceQuery,
    PruneRequest,
    StoreBody,
    StoreQuery,
    path_ref,
)
from agent_memory.entrypoints.rest.contract import CATEGORY, DESCRIBED_CATEGORY
from agent_memory.entrypoints.rest.replies import Door, Payload, error_body, failures, guarded, no_route, with_store

# --- maintenance, stores, categories, health ------------------------------------------------------

# any category, a root one too (its memories are soft-deleted like any other's): the document says so with the pattern
CategoryPath = Annotated[
    str, PathParameter(description="A category, e.g. 'projects' or 'projects/old'.", schema_extra=CATEGORY)
]


@post("/prune", status_code=200, tags=["maintenance"], responses=failures(400, 404, 422, 503))
async def prune(
    door: NamedDependency[Door],
    data: JSONBody[PruneRequest | None] = None,
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """Remove every expired memory (of the namespace, if given) for good; {"dry_run": true} only lists them."""
    dry_run = data is not None and data.dry_run
    return await door.reply(
        guarded(
            namespace,
            lambda service, guard: dispatch(service, c.PruneMemories(store=store, dry_run=dry_run, namespace=guard)),
        ),
        out.prune_json,
    )


@post("/reindex", status_code=200, tags=["maintenance"], responses=failures(404, 409, 422, 503))
async def reindex(door: NamedDependency[Door], store: StoreQuery = None) -> Response[Payload]:
    """Re-embed every memory of the store with the configured embedder."""
    return await door.reply(lambda service: dispatch(service, c.ReindexStore(store=store)), out.reindex_json)


@get(
    "/stores",
    tags=["stores"],
    responses=failures(
        503,
    ),
)
async def list_stores(door: NamedDependency[Door]) -> Response[Payload]:
    """Every store with its memory count."""
    return await door.reply(lambda service: dispatch(service, c.ListStores()), out.stores_json)


@post(
    "/stores",
    dto=StoreBody,
    return_dto=None,
    status_code=201,
    tags=["stores"],
    responses=failures(400, 409, 413, 415, 422, 503),
)
async def create_store(data: JSONBody[DTOData[c.CreateStore]], door: NamedDependency[Door]) -> Response[Payload]:
    """Create an empty store; 409 DESTINATION_EXISTS if there is one by that name."""
    return await door.reply(
        lambda service: dispatch(service, data.create_instance()),
        lambda summary: {"name": summary.name, "memory_count": 0, "created": True},
        201,
        lambda summary: with_store("/memories", summary.name),
    )


@post(
    "/categories",
    dto=CategoryBody,
    return_dto=None,
    status_code=201,
    tags=["categories"],
    responses=failures(400, 409, 413, 415, 422, 503),
)
async def create_category(
    data: JSONBody[DTOData[c.CreateCategory]], door: NamedDependency[Door], store: StoreQuery = None
) -> Response[Payload]:
    """Register a category (a no-op if it exists), optionally with a description."""
    return await door.reply(
        lambda service: dispatch(service, data.create_instance(store=store)),
        out.category_json,
        201,
        lambda summary: with_store("/memories", store, category=summary.path),
    )


@put(
    "/categories/{path:path}",
    dto=DescriptionBody,
    return_dto=None,
    tags=["categories"],
    summary="Set a category's description",
    responses=failures(400, 404, 409, 413, 415, 422, 503),
)
async def describe_category(
    path: Annotated[
        str, PathParameter(description="The category path, then '/description'.", schema_extra=DESCRIBED_CATEGORY)
    ],
    data: JSONBody[DTOData[c.DescribeCategory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
) -> Response[Payload]:
    """PUT /categories/{path}/description with {"description": "..."} (at most 500 characters)."""
    category, _, leaf = path_ref(path).rpartition("/")
    if leaf != "description" or not category:
        return no_route("Set a description with PUT /categories/<category path>/description.")
    return await door.reply(
        lambda service: dispatch(service, data.create_instance(category=category, store=store)),
        out.category_json,
    )


@delete("/categories/{path:path}", status_code=200, tags=["categories"], responses=failures(404, 422, 503))
async def delete_category(
    path: CategoryPath,
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
    purge: Annotated[
        bool, Parameter(description="Remove its memories for good, soft-deleted ones too, instead of soft-deleting.")
    ] = False,
) -> Response[Payload]:
    """Delete a category with its subcategories (under a namespace, only its own memories): its memories are
    soft-deleted (POST /restore brings each back), or with ?purge=true removed for good. memory_count says how many."""
    return await door.reply(
        guarded(
            namespace,
            lambda service, guard: dispatch(
                service, c.DeleteCategory(category=path_ref(path), store=store, namespace=guard, purge=purge)
            ),
        ),
        lambda summary: out.category_deleted_json(summary, purged=purge),
    )


def _status_json(found: Status) -> Payload:
    """The status JSON with each problem's and warning's advice worded for REST callers."""
    body = out.status_json(found)
    for key in ("problems", "warnings"):
        if key in body:
            body[key] = [worded(said, "rest") for said in body[key]]
    return body


@get("/status", tags=["health"], responses=failures(404, 422, 503))
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


ADMIN_ROUTES = [
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
