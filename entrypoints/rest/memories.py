"""The REST door's memory routes: create, read, change, reinforce, move, delete, restore, list, recent and search."""

from __future__ import annotations

from typing import Annotated

from litestar import Response, delete, patch, post
from litestar.di import NamedDependency
from litestar.dto import DTOData
from litestar.params import JSONBody, Parameter, PathParameter
from returns.result import Result

from agent_memory.domain import commands as c
from agent_memory.domain.commands import CreateMemory, UpdateMemory
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.search.searching import MAX_SEARCH_LIMIT
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import MemoryView
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.page_views import listing_page_json, search_page, search_page_json
from agent_memory.entrypoints.rest.bodies import (
    DEFAULT_PAGE,
    ActOnExpired,
    CreateBody,
    IdempotencyHeader,
    MoveBody,
    MoveRequest,
    NamespaceQuery,
    RefPath,
    ReinforceBody,
    RestoreBody,
    SearchBody,
    SearchRequest,
    StoreQuery,
    UpdateBody,
    check_page,
    create_in_utc,
    path_ref,
    search_command,
    update_in_utc,
)
from agent_memory.entrypoints.rest.queries import QueryRoute, query_handler
from agent_memory.entrypoints.rest.replies import (
    NOTHING_CREATED,
    Door,
    Payload,
    created_status,
    failure_reply,
    failures,
    guarded,
    guarded_command,
    no_route,
    with_store,
)

# --- memories --------------------------------------------------------------------------------------


@post(
    "/memories",
    dto=CreateBody,
    return_dto=None,
    status_code=201,
    tags=["memories"],
    responses={200: NOTHING_CREATED, **failures(400, 409, 413, 415, 422, 503)},
)
async def create_memory(
    data: JSONBody[DTOData[CreateMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    idempotency_key: IdempotencyHeader = None,
) -> Response[Payload]:
    """Store a new memory: 201 with its `Location`. With `path` it is created at that path (409 DESTINATION_EXISTS
    if taken). When a live memory of its scope already says the same (`on_duplicate`: skip or update), nothing new
    is made: 200 with that memory (`Content-Location`), and `on_duplicate` says what was done. With an
    `Idempotency-Key` header, a retry answers the memory the first request stored."""
    command = data.create_instance(store=store, idempotency_key=idempotency_key)
    return await door.reply(
        lambda service: create_in_utc(command).bind(lambda ready: dispatch(service, ready)),
        out.view_json,
        created_status,
        lambda view: with_store(f"/memories/{view.memory.id}", store),
    )


@patch(
    "/memories/{ref:path}",
    dto=UpdateBody,
    return_dto=None,
    tags=["memories"],
    responses=failures(400, 404, 409, 410, 413, 415, 422, 503),
)
async def update_memory(
    ref: RefPath,
    data: JSONBody[DTOData[UpdateMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
    include_expired: ActOnExpired = False,
) -> Response[Payload]:
    """Change content or metadata. Omitted or null fields are kept; tags/citations replace, [] clears them."""

    def update(service: MemoryService, guard: tuple[str, ...] | None) -> Result[MemoryView, DomainError]:
        command = data.create_instance(ref=path_ref(ref), store=store, namespace=guard, include_expired=include_expired)
        return update_in_utc(command).bind(lambda ready: dispatch(service, ready))

    return await door.reply(guarded(namespace, update), out.view_json)


@delete("/memories/{ref:path}", status_code=200, tags=["memories"], responses=failures(400, 404, 409, 410, 422, 503))
async def delete_memory(
    ref: RefPath,
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
            guarded_command(namespace, lambda guard: c.RemoveMemory(ref=path_ref(ref), store=store, namespace=guard)),
            out.removed_json,
        )
    return await door.reply(
        guarded_command(
            namespace,
            lambda guard: c.DeleteMemory(
                ref=path_ref(ref), store=store, namespace=guard, include_expired=include_expired
            ),
        ),
        out.deleted_json,
    )


@post(
    "/reinforce",
    dto=ReinforceBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=failures(400, 404, 409, 410, 413, 415, 422, 503),
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
        guarded_command(namespace, lambda guard: data.create_instance(store=store, namespace=guard)), out.view_json
    )


@post(
    "/move",
    dto=MoveBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=failures(400, 404, 409, 410, 413, 415, 422, 503),
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
        guarded_command(namespace, lambda guard: data.create_instance(store=store, namespace=guard)), out.view_json
    )


@post(
    "/restore",
    dto=RestoreBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=failures(400, 404, 409, 413, 415, 422, 503),
)
async def restore_memory(
    data: JSONBody[DTOData[c.RestoreMemory]],
    door: NamedDependency[Door],
    store: StoreQuery = None,
    namespace: NamespaceQuery = None,
) -> Response[Payload]:
    """Undo the soft delete of the memory named by `ref` (its id, or its path): it comes back with its id and every
    field (409 DESTINATION_EXISTS if a live memory holds its path now, 409 INVALID_OPERATION if it is not deleted,
    404 once removed for good). GET /memories?include_deleted=true lists the deleted ones."""
    return await door.reply(
        guarded_command(namespace, lambda guard: data.create_instance(store=store, namespace=guard)), out.view_json
    )


@post(
    "/memories/{ref:path}",
    status_code=200,
    tags=["memories"],
    summary="Reinforce or move a memory (deprecated: POST /reinforce, POST /move)",
    deprecated=True,
    responses=failures(400, 404, 409, 410, 413, 415, 422, 503),
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
    memory, _, action = path_ref(ref).rpartition("/")
    if action == "reinforce" and memory:
        return await door.reply(
            guarded_command(namespace, lambda guard: c.ReinforceMemory(ref=memory, store=store, namespace=guard)),
            out.view_json,
        )
    if action == "move" and memory:
        if data is None:
            return failure_reply(invalid_input('move needs a JSON body like {"destination": "category/slug"}.'))
        destination = data.destination
        return await door.reply(
            guarded_command(
                namespace,
                lambda guard: c.MoveMemory(
                    ref=memory, destination=destination, store=store, namespace=guard, include_expired=include_expired
                ),
            ),
            out.view_json,
        )
    return no_route(f"POST /memories/{path_ref(ref)} names no action: use POST /reinforce or POST /move.")


@post(
    "/search",
    dto=SearchBody,
    return_dto=None,
    status_code=200,
    tags=["memories"],
    responses=failures(400, 404, 409, 413, 415, 422, 503),
)
async def search_memories(
    data: JSONBody[DTOData[SearchRequest]], door: NamedDependency[Door], store: StoreQuery = None
) -> Response[Payload]:
    """Find memories by meaning, best first, under the filters; only related hits are kept, each with relevance (0 to
    1 on the model's calibrated scale: the number to read), similarity, confidence, score (the ranker's own) and
    matched_part (the sentence or window of a long memory that answered: text, start, end; null otherwise);
    `broad` says a question that named no subject got the scope's memories by what matters. `limit` (1–1000,
    default 10) and `offset` page through the hits; `has_more` says whether more follow."""
    request = data.create_instance(store=store)
    check_page("limit", request.limit, 1, MAX_SEARCH_LIMIT, "body")
    check_page("offset", request.offset, 0, MAX_SEARCH_LIMIT - 1, "body")
    command = search_command(request)
    return await door.reply(lambda service: search_page(service, command), search_page_json)


# the GET routes: their query parameters are their commands' fields (rest_queries.py)
get_memory = query_handler(
    QueryRoute(
        name="get_memory",
        path="/memories/{ref:path}",
        in_path="ref",
        command=c.GetMemory,
        summary="One memory by id or path; an expired one is 410 MEMORY_EXPIRED unless include_expired.",
        render=lambda view, _given: out.view_json(view),
        responses=(404, 410, 422, 503),
    )
)
list_memories = query_handler(
    QueryRoute(
        name="list_memories",
        path="/memories",
        command=c.ListMemories,
        defaults={"limit": DEFAULT_PAGE},
        summary="A category's memories (recursively, newest update first), one page of them, and its subcategories.",
        render=lambda listing, given: listing_page_json(listing, given["limit"], given["offset"], compact=False),
        responses=(400, 404, 422, 503),
    )
)
recent_memories = query_handler(
    QueryRoute(
        name="recent_memories",
        path="/recent",
        command=c.RecentMemories,
        summary="The most recently updated memories, newest first.",
        render=lambda views, _given: out.recent_json(views),
        responses=(400, 404, 422, 503),
    )
)

MEMORY_ROUTES = [
    create_memory,
    get_memory,
    update_memory,
    delete_memory,
    reinforce_memory,
    move_memory,
    restore_memory,
    memory_action,
    list_memories,
    recent_memories,
    search_memories,
]
