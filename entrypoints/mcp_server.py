"""The MCP door (`memory mcp`): every use case as an MCP tool on the official SDK, over stdio or HTTP."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from attrs import frozen
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError
from returns.result import Failure, Result, Success

from agent_memory._version import __version__
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.namespaces import ConfigurationError, resolve_namespace
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.agent_tools import MemoryToolError, error_text, run_manage, run_search
from agent_memory.entrypoints.door_words import for_door, sentence
from agent_memory.entrypoints.error_table import row
from agent_memory.entrypoints.http_safety import ANY_HOST, HttpPolicy, media_type_problem, refuse_open_bind
from agent_memory.entrypoints.mcp_callers import CALLER, Callers, unknown_arguments
from agent_memory.entrypoints.mcp_stdio import REFUSED_TOOL, run_stdio
from agent_memory.entrypoints.paging import listing_page_json, search_page, search_page_json
from agent_memory.entrypoints.settings import Settings
from agent_memory.entrypoints.tenancy import UNAUTHORIZED, Tenancy

TRANSPORTS = ("stdio", "http")
MAX_PAGE = 1000
SERVER_NAME = "agent-memory"

INSTRUCTIONS = """\
Long-term memory that persists across conversations.
A memory has an id (a UUID) and usually a path 'category/…/slug' (e.g. 'preferences/editor'); every tool that
takes `path_or_id` accepts either. Memories live in stores (default store unless `store` is given) and may carry
tags, citations (source references), an expiry and a namespace (tenant labels such as ["user", "u-123"]).
Use add_memory / get_memory / update_memory to work by path, search_memories to find memories by meaning and
keywords, list_memories and get_recent_memories to browse. manage_memory and search_memory are the namespaced
agent tools: give them `namespace`, or `user_id`, or `org_id` and `agent_id`.
Errors start with a code (MEMORY_NOT_FOUND, INVALID_PATH, INVALID_INPUT, …) followed by what to do."""

Payload = dict[str, Any]
Outcome = Result[Payload, DomainError]

# --- argument types: their descriptions become the tools' JSON schemas ---------------------------

PathOrId = Annotated[str, Field(description="The memory's path ('category/…/slug') or its id (a UUID).", min_length=1)]
MemoryPathArg = Annotated[
    str,
    Field(
        description="Where the memory lives: 'category/…/slug', at least two segments, e.g. 'preferences/editor'. "
        "Segments are normalised to lowercase slugs.",
        min_length=1,
    ),
]
CategoryArg = Annotated[
    str, Field(description="A category path such as 'projects' or 'projects/agent-memory'.", min_length=1)
]
OptionalCategory = Annotated[
    str | None, Field(description="Only memories under this category path, e.g. 'projects'. Omit for all.")
]
StoreArg = Annotated[
    str | None,
    Field(description="The store to use (lowercase letters, digits and '-'). Omit for the default store."),
]
NamespaceArg = Annotated[
    list[str] | None,
    Field(description='Tenant labels, e.g. ["user", "u-123"]. Omit for none (add) or any (reads).'),
]
NamespaceGuard = Annotated[
    list[str] | None,
    Field(description='Only act on a memory inside this namespace (or below it), e.g. ["user", "u-123"].'),
]
TagsArg = Annotated[list[str] | None, Field(description="Labels to find the memory by later.")]
AgentArg = Annotated[str | None, Field(description="The agent the memory belongs to (a search scope).")]
PersonalityArg = Annotated[str | None, Field(description="The personality it belongs to (a search scope).")]
ProjectArg = Annotated[str | None, Field(description="The project it belongs to (a search scope).")]
TypeArg = Annotated[str | None, Field(description="What kind of memory it is, e.g. 'preference' or 'decision'.")]
CitationsArg = Annotated[
    list[str] | None,
    Field(description='References to source material, e.g. ["src/core/types.ts:17", "https://docs.example.com"].'),
]
ExpiresArg = Annotated[
    str | None,
    Field(description="ISO 8601 time after which the memory is hidden, e.g. 2026-12-31T23:59:00Z."),
]
DecayArg = Annotated[
    Literal["stable", "contextual", "reinforceable"],
    Field(
        description="How confidence falls with age: stable (always 1.0, default), contextual (fades from creation) "
        "or reinforceable (fades from the last reinforce_memory)."
    ),
]
IncludeExpired = Annotated[bool, Field(description="Also return memories whose expiry has passed.")]
ActOnExpired = Annotated[
    bool, Field(description="Act on the memory even if its expiry has passed (MEMORY_EXPIRED otherwise).")
]
TenantId = Annotated[str | None, Field(description="Resolves the namespace when `namespace` is omitted.")]


# --- results ---------------------------------------------------------------------------------------


def tool_error_text(error: DomainError) -> str:
    """'CODE: message (path p)' plus what to do next, e.g. 'MEMORY_NOT_FOUND: Memory not found (path notes/x). …'."""
    return sentence(error_text(for_door(error, "mcp")), row(error).hint("mcp"))


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _reply(outcome: Outcome) -> CallToolResult:
    match outcome:
        case Success(payload):
            text = json.dumps(payload, ensure_ascii=False)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)
        case Failure(error):
            return _error(tool_error_text(error))
    return _error("STORAGE_ERROR: the operation returned no result.")  # pragma: no cover - Result is closed


def _validation_text(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "INVALID_INPUT: " + "; ".join(problems) + ". Check the tool's input schema and try again."


# --- argument parsing --------------------------------------------------------------------------


def _timestamp(name: str, raw: str | None) -> Result[datetime | None, DomainError]:
    if raw is None:
        return Success(None)
    try:
        return Success(out.parse_iso(raw))
    except ValueError:
        return Failure(
            invalid_input(
                f"{name} {raw!r} is not an ISO 8601 timestamp in the years 0001–9999 (UTC) like 2026-12-31T23:59:00Z."
            )
        )


def _labels(raw: list[str] | None) -> tuple[str, ...] | None:
    return None if raw is None else tuple(raw)


class _Server(MCPServer[Any]):
    """MCPServer whose argument-validation failures read 'INVALID_INPUT: field: problem' like every other error,
    that refuses arguments a tool does not take, and that runs each call as its caller's tenant (tenancy.py)."""

    def __init__(self, *args: Any, callers: Callers, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._callers = callers

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name == REFUSED_TOOL:  # a stdio request the SDK could not read (mcp_stdio): answered, not dropped
            return _error(f"INVALID_INPUT: {arguments.get('reason', 'unreadable request')}")
        tool = self._tool_manager.get_tool(name)
        unknown = unknown_arguments(name, arguments, tool.parameters if tool is not None else None)
        if unknown:
            return _error(unknown)
        caller = self._callers.service_for(context)
        if caller is None:
            return _error("UNAUTHORIZED: " + UNAUTHORIZED)
        token = CALLER.set(caller)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                return _error(_validation_text(error.__cause__))
            raise
        finally:
            CALLER.reset(token)


@frozen
class StdioSession:
    """An MCP stdio session inside the memory server (cli_server.py): the server's service builder and lock, the
    client's connection as stdin/stdout, and `ready`, called once the session starts serving."""

    services: Callable[[Settings], Result[MemoryService, DomainError]]
    lock: threading.Lock
    stdin: Any
    stdout: Any
    ready: Callable[[], None]


# --- the tools -----------------------------------------------------------------------------------


class _Tools:
    """The tool functions over one service; calls are serialised so read-check-write steps never interleave."""

    def __init__(self, service: MemoryService, default_store: str, lock: threading.Lock | None = None) -> None:
        self._service = service
        self.default_store = default_store
        self._lock = lock or threading.Lock()

    @property
    def service(self) -> MemoryService:
        """The service of the call's caller, pinned to its namespace (the server's own outside a call)."""
        return CALLER.get() or self._service

    def _store(self, store: str | None) -> str:
        return store or self.default_store

    def _run(self, step: Callable[[], CallToolResult]) -> CallToolResult:
        with self._lock:
            return step()

    # memories by path or id ---------------------------------------------------------------------

    def add_memory(
        self,
        path: MemoryPathArg,
        content: Annotated[str, Field(description="The memory's text.")],
        tags: TagsArg = None,
        expires_at: ExpiresArg = None,
        citations: CitationsArg = None,
        source: Annotated[str | None, Field(description="Where the memory came from (free text).")] = None,
        namespace: NamespaceArg = None,
        decay_policy: DecayArg = "stable",
        agent: AgentArg = None,
        personality: PersonalityArg = None,
        project: ProjectArg = None,
        type: TypeArg = None,
        store: StoreArg = None,
    ) -> CallToolResult:
        def command(expiry: datetime | None) -> CreateMemory:
            return CreateMemory(
                content=content,
                path=path,
                decay_policy=decay_policy,
                agent=agent or "",
                personality=personality or "",
                project=project or "",
                type=type or "",
                store=self._store(store),
                tags=tuple(tags or ()),
                citations=tuple(citations or ()),
                source=source or "",
                expires_at=expiry,
                namespace=tuple(namespace or ()),
            )

        return self._run(
            lambda: _reply(
                _timestamp("expires_at", expires_at).bind(lambda e: self.service.add(command(e))).map(out.view_json)
            )
        )

    def get_memory(
        self,
        path_or_id: PathOrId,
        include_expired: IncludeExpired = False,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.get(
                    path_or_id, store=self._store(store), include_expired=include_expired, namespace=namespace
                ).map(out.view_json)
            )
        )

    def update_memory(
        self,
        path_or_id: PathOrId,
        content: Annotated[str | None, Field(description="New text; omit to keep it.")] = None,
        tags: Annotated[list[str] | None, Field(description="Replaces the tags; [] clears them; omit to keep.")] = None,
        expires_at: ExpiresArg = None,
        clear_expiry: Annotated[bool, Field(description="Remove the expiry date.")] = False,
        citations: Annotated[
            list[str] | None, Field(description="Replaces the citations; [] clears them; omit to keep them.")
        ] = None,
        source: Annotated[str | None, Field(description="New source; omit to keep it.")] = None,
        agent: AgentArg = None,
        personality: PersonalityArg = None,
        project: ProjectArg = None,
        type: TypeArg = None,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
        include_expired: ActOnExpired = False,
    ) -> CallToolResult:
        def command(expiry: datetime | None) -> UpdateMemory:
            return UpdateMemory(
                ref=path_or_id,
                store=self._store(store),
                namespace=_labels(namespace),
                agent=agent,
                personality=personality,
                project=project,
                type=type,
                content=content,
                tags=_labels(tags),
                citations=_labels(citations),
                source=source,
                expires_at=expiry,
                clear_expiry=clear_expiry,
                include_expired=include_expired,
            )

        return self._run(
            lambda: _reply(
                _timestamp("expires_at", expires_at).bind(lambda e: self.service.update(command(e))).map(out.view_json)
            )
        )

    def remove_memory(
        self, path_or_id: PathOrId, store: StoreArg = None, namespace: NamespaceGuard = None
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.remove(path_or_id, store=self._store(store), namespace=namespace).map(out.removed_json)
            )
        )

    def delete_memory(
        self,
        path_or_id: PathOrId,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
        include_expired: ActOnExpired = False,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.delete(
                    path_or_id, store=self._store(store), namespace=namespace, include_expired=include_expired
                ).map(out.deleted_json)
            )
        )

    def move_memory(self, arguments: dict[str, Any]) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.move(
                    arguments["from"],
                    arguments["to"],
                    store=self._store(arguments["store"]),
                    namespace=arguments["namespace"],
                    include_expired=arguments["include_expired"],
                ).map(out.view_json)
            )
        )

    def reinforce_memory(
        self,
        id: Annotated[str, Field(description="The id (or path) of a memory with decay policy 'reinforceable'.")],
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(self.service.reinforce(id, store=self._store(store), namespace=namespace).map(out.view_json))
        )

    # browsing -------------------------------------------------------------------------------------

    def list_memories(
        self,
        category: OptionalCategory = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most memories to list (default 100).")] = 100,
        offset: Annotated[int, Field(ge=0, description="Memories to skip, for paging (see total).")] = 0,
        include_expired: IncludeExpired = False,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.list(
                    category,
                    store=self._store(store),
                    include_expired=include_expired,
                    namespace=namespace,
                    limit=limit,
                    offset=offset,
                ).map(lambda listing: listing_page_json(listing, limit, offset, compact=True))
            )
        )

    def get_recent_memories(
        self,
        limit: Annotated[int, Field(ge=1, le=100, description="How many, 1 to 100.")] = 5,
        category: OptionalCategory = None,
        include_expired: IncludeExpired = False,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.recent(
                    store=self._store(store),
                    limit=limit,
                    category=category,
                    include_expired=include_expired,
                    namespace=namespace,
                ).map(out.recent_json)
            )
        )

    def search_memories(self, arguments: dict[str, Any]) -> CallToolResult:
        command = SearchMemories(
            query=arguments["query"],
            limit=arguments["limit"],
            min_confidence=arguments["min_confidence"],
            agent=arguments["agent"],
            personality=arguments["personality"],
            project=arguments["project"],
            type=arguments["type"],
            global_=arguments["global"],
            tags=tuple(arguments["tags"] or ()),
            namespace=_labels(arguments["namespace"]),
            path_prefix=arguments["category"],
            include_expired=arguments["include_expired"],
            mode=arguments["mode"],
            store=self._store(arguments["store"]),
            offset=arguments["offset"],
        )
        return self._run(lambda: _reply(search_page(self.service, command).map(search_page_json)))

    # maintenance --------------------------------------------------------------------------------

    def prune_memories(
        self,
        dry_run: Annotated[bool, Field(description="Only list the expired memories that would be deleted.")] = False,
        store: StoreArg = None,
        namespace: NamespaceGuard = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.prune(store=self._store(store), dry_run=dry_run, namespace=namespace).map(out.prune_json)
            )
        )

    def reindex_store(self, store: StoreArg = None) -> CallToolResult:
        return self._run(lambda: _reply(self.service.reindex(store=self._store(store)).map(out.reindex_json)))

    def list_stores(self) -> CallToolResult:
        return self._run(lambda: _reply(self.service.list_stores().map(out.stores_json)))

    def create_store(
        self, name: Annotated[str, Field(description="The new store's name, e.g. 'work-notes'.", min_length=1)]
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.create_store(name).map(lambda s: {"name": s.name, "memory_count": 0, "created": True})
            )
        )

    def create_category(
        self,
        path: CategoryArg,
        description: Annotated[str, Field(description="What belongs here (at most 500 characters).")] = "",
        store: StoreArg = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.create_category(path, description=description, store=self._store(store)).map(
                    out.category_json
                )
            )
        )

    def set_category_description(
        self,
        path: CategoryArg,
        description: Annotated[str, Field(description="The new description (at most 500 characters).")],
        store: StoreArg = None,
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.describe_category(path, description, store=self._store(store)).map(out.category_json)
            )
        )

    def delete_category(
        self, path: CategoryArg, store: StoreArg = None, namespace: NamespaceGuard = None
    ) -> CallToolResult:
        return self._run(
            lambda: _reply(
                self.service.delete_category(path, store=self._store(store), namespace=namespace).map(
                    lambda s: {**out.category_json(s), "deleted": True}
                )
            )
        )

    # the namespaced agent tools (spec 003) --------------------------------------------------------

    def manage_memory(
        self,
        action: Annotated[
            Literal["create", "update", "delete"],
            Field(description="create (give content), update (give id and the full new content) or delete (give id)."),
        ] = "create",
        content: Annotated[str | None, Field(description="The memory's text, for create and update.")] = None,
        id: Annotated[str | None, Field(description="The memory's id, for update and delete.")] = None,
        type: Annotated[
            str | None, Field(description="What kind of memory, e.g. 'preference' (search_memory's category).")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Labels; on update they replace the old ones.")] = None,
        namespace: Annotated[
            list[str] | None,
            Field(description='The namespace, e.g. ["user", "u-123"]; or give user_id, or org_id and agent_id.'),
        ] = None,
        user_id: TenantId = None,
        org_id: TenantId = None,
        agent_id: TenantId = None,
        store: StoreArg = None,
    ) -> CallToolResult:
        def step() -> CallToolResult:
            resolved = resolve_namespace(_template(namespace), _config(user_id, org_id, agent_id))
            return _text(
                run_manage(
                    self.service,
                    resolved,
                    content=content,
                    action=action,
                    id=id,
                    store=self._store(store),
                    type=type,
                    tags=tags,
                )
            )

        return self._run(lambda: _agent_step(step))

    def search_memory(
        self,
        query: Annotated[str, Field(description="What to look for, in natural language or keywords.")],
        limit: Annotated[int, Field(ge=1, le=1000, description="Most results to return.")] = 10,
        offset: Annotated[int, Field(ge=0, description="Results to skip, for paging.")] = 0,
        filter: Annotated[
            dict[str, Any] | None,
            Field(
                description='Field conditions, e.g. {"category": "preference"} (category = the memory type), '
                '{"tags": "work"}, {"created_at": {"$gte": "2026-01-01T00:00:00Z"}}; operators $eq $ne $in $gt '
                "$gte $lt $lte."
            ),
        ] = None,
        namespace: Annotated[
            list[str] | None,
            Field(description="The namespace to search (and those below it); or give user_id, or org_id and agent_id."),
        ] = None,
        user_id: TenantId = None,
        org_id: TenantId = None,
        agent_id: TenantId = None,
        store: StoreArg = None,
    ) -> CallToolResult:
        def step() -> CallToolResult:
            resolved = resolve_namespace(_template(namespace), _config(user_id, org_id, agent_id))
            found, _ = run_search(
                self.service, resolved, query=query, limit=limit, offset=offset, filter=filter, store=self._store(store)
            )
            return _text(found)

        return self._run(lambda: _agent_step(step))


def _template(namespace: list[str] | None) -> tuple[str, ...] | None:
    return None if namespace is None else tuple(namespace)


def _config(user_id: str | None, org_id: str | None, agent_id: str | None) -> dict[str, str]:
    given = {"user_id": user_id, "org_id": org_id, "agent_id": agent_id}
    return {key: value for key, value in given.items() if value is not None}


def _agent_step(step: Callable[[], CallToolResult]) -> CallToolResult:
    try:
        return step()
    except ConfigurationError as error:  # a BaseException: caught by name so the server never dies on it
        return _error(
            f"INVALID_INPUT: {error} Pass `namespace` (a list of labels), or `user_id`, or `org_id` and `agent_id`."
        )
    except MemoryToolError as error:  # a use case's failure in the MCP door's words, as every other tool's
        return _error(str(error) if error.domain is None else tool_error_text(error.domain))


# --- argument models for the tools whose wire names are Python keywords (`from`, `global`) ----------


class _MoveArguments(ArgModelBase):
    source: Annotated[str, Field(alias="from", min_length=1, description="The memory's current path or id.")]
    to: Annotated[str, Field(min_length=1, description="The new path, 'category/…/slug'. It must be free.")]
    store: StoreArg = None
    namespace: NamespaceGuard = None
    include_expired: ActOnExpired = False


class _SearchArguments(ArgModelBase):
    query: Annotated[str, Field(description="What to look for, in natural language or keywords.")]
    limit: Annotated[int | None, Field(ge=1, le=1000, description="Most results (default 10).")] = None
    offset: Annotated[
        int, Field(ge=0, le=999, description="Results to skip, for paging; has_more says whether more follow.")
    ] = 0
    min_confidence: Annotated[
        float | None, Field(ge=0.0, le=1.0, description="Confidence floor, 0 to 1 (default 0.3).")
    ] = None
    agent: Annotated[str | None, Field(description="Only memories of this agent.")] = None
    personality: Annotated[str | None, Field(description="Only memories of this personality.")] = None
    project: Annotated[str | None, Field(description="Only memories of this project.")] = None
    type: Annotated[str | None, Field(description="Only memories of this type, e.g. 'preference'.")] = None
    global_: Annotated[
        bool | None, Field(alias="global", description="true: only global memories; false: only non-global.")
    ] = None
    tags: Annotated[list[str] | None, Field(description="Only memories having all these tags.")] = None
    namespace: Annotated[list[str] | None, Field(description="Only this namespace and those below it.")] = None
    category: OptionalCategory = None
    include_expired: IncludeExpired = False
    mode: Annotated[
        Literal["hybrid", "semantic", "keyword"],
        Field(description="hybrid (meaning and keywords, default), semantic (meaning only) or keyword (words only)."),
    ] = "hybrid"
    store: StoreArg = None


def _model_tool(name: str, model: type[ArgModelBase], run: Callable[[dict[str, Any]], CallToolResult]) -> Tool:
    def call(**arguments: Any) -> CallToolResult:
        return run(arguments)

    return Tool(
        fn=call,
        name=name,
        title=TITLES[name],
        description=_DESCRIPTIONS[name],
        parameters=model.model_json_schema(by_alias=True),
        fn_metadata=FuncMetadata(arg_model=model),
        is_async=False,
        context_kwarg=None,
        annotations=_annotations(name),
    )


_READ_ONLY = {"get_memory", "list_memories", "get_recent_memories", "list_stores", "search_memories", "search_memory"}
# destructive: may overwrite or delete what is stored (an update replaces content, tags and citations)
_DESTRUCTIVE = {"delete_memory", "remove_memory", "prune_memories", "delete_category", "manage_memory", "update_memory"}

_DESCRIPTIONS: dict[str, str] = {
    "add_memory": "Create a memory at a path ('category/…/slug'). The store and categories are created if missing. "
    "Fails with DESTINATION_EXISTS if the path is taken (use update_memory then).",
    "get_memory": "Read one memory (content and metadata, citations always included) by path or id. "
    "Expired memories are hidden unless include_expired is true.",
    "update_memory": "Change a memory's content or metadata by path or id. Omitted fields are kept; "
    "tags and citations given replace the old ones ([] clears); clear_expiry removes the expiry. "
    "An expired memory is refused (MEMORY_EXPIRED) unless include_expired is true.",
    "delete_memory": "Soft-delete a memory by path or id: it stays stored but is hidden from every read and "
    "search (remove_memory deletes for good). Fails with MEMORY_EXPIRED for an expired memory unless "
    "include_expired is true.",
    "remove_memory": "Delete a memory for good, by path or id.",
    "move_memory": "Give a memory a new path. Fails with DESTINATION_EXISTS if the new path is taken, and with "
    "MEMORY_EXPIRED for an expired memory unless include_expired is true.",
    "reinforce_memory": "Reset the decay of a memory with decay policy 'reinforceable' (it is being used).",
    "list_memories": "List a category's memories (recursively, newest first), one page of them, and its direct "
    "subcategories with counts and descriptions. Omit category for the whole store. Each memory is listed as "
    "path, id, tokens (a size estimate) and updated_at; read one with get_memory. total is how many there are: "
    "page with limit and offset.",
    "get_recent_memories": "The most recently updated memories, newest first (limit 1–100, default 5).",
    "search_memories": "Find memories by meaning and keywords, best first, with optional filters "
    "(agent, project, type, global, tags, namespace, category). Each hit has similarity, confidence and score; "
    "page with limit and offset (has_more says whether more follow).",
    "prune_memories": "Delete every expired memory of the store for good; dry_run only lists them.",
    "reindex_store": "Re-embed every memory of the store (after an embedding-model change or hand-edited files).",
    "list_stores": "Every store with its memory count.",
    "create_store": "Create an empty store. Fails with DESTINATION_EXISTS if it exists.",
    "create_category": "Create a category (a no-op if it exists), optionally with a description.",
    "set_category_description": "Set a category's description (at most 500 characters).",
    "delete_category": "Delete a non-root category with its subcategories and memories, for good.",
    "manage_memory": "Create, update or delete a long-term memory in a namespace so it persists across "
    "conversations. create: give content (the id is returned). update: give id and the full new content. "
    "delete: give id. Returns 'created memory <id>', 'updated memory <id>' or 'Deleted memory <id>'. "
    "Give the namespace as `namespace`, or `user_id` (→ ['user', id]), or `org_id` and `agent_id`.",
    "search_memory": "Search memories in a namespace and those below it, by meaning and keywords. Returns a JSON "
    "list of {namespace, id, content, metadata, created_at, updated_at, score}. Give the namespace as "
    "`namespace`, or `user_id`, or `org_id` and `agent_id`.",
}

TOOL_NAMES = (
    "add_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "remove_memory",
    "move_memory",
    "reinforce_memory",
    "list_memories",
    "get_recent_memories",
    "search_memories",
    "prune_memories",
    "reindex_store",
    "list_stores",
    "create_store",
    "create_category",
    "set_category_description",
    "delete_category",
    "manage_memory",
    "search_memory",
)


TITLES: dict[str, str] = {
    "add_memory": "Add a memory",
    "get_memory": "Read a memory",
    "update_memory": "Update a memory",
    "delete_memory": "Delete a memory (soft)",
    "remove_memory": "Remove a memory for good",
    "move_memory": "Move a memory",
    "reinforce_memory": "Reinforce a memory",
    "list_memories": "List memories",
    "get_recent_memories": "Recent memories",
    "search_memories": "Search memories",
    "prune_memories": "Prune expired memories",
    "reindex_store": "Re-embed a store",
    "list_stores": "List stores",
    "create_store": "Create a store",
    "create_category": "Create a category",
    "set_category_description": "Describe a category",
    "delete_category": "Delete a category",
    "manage_memory": "Manage a namespaced memory",
    "search_memory": "Search namespaced memories",
}


def _annotations(name: str) -> ToolAnnotations:
    return ToolAnnotations(title=TITLES[name], read_only_hint=name in _READ_ONLY, destructive_hint=name in _DESTRUCTIVE)


def build_mcp_server(
    service: MemoryService,
    *,
    default_store: str,
    tenancy: Tenancy | None = None,
    lock: threading.Lock | None = None,
) -> MCPServer[Any]:
    """The MCP server over a ready service; tools without `store` use `default_store`. With `tenancy`, every call
    runs pinned to its caller's namespace (over HTTP its token's, else the server's); its pins must be valid.
    `lock` serialises its calls with other users of the same service (the memory server's CLI requests)."""
    callers = Callers(service, tenancy or Tenancy())
    tools = _Tools(callers.default, default_store, lock)
    by_model: dict[str, tuple[type[ArgModelBase], Callable[[dict[str, Any]], CallToolResult]]] = {
        "move_memory": (_MoveArguments, tools.move_memory),
        "search_memories": (_SearchArguments, tools.search_memories),
    }
    built = [
        _model_tool(name, *by_model[name])
        if name in by_model
        else Tool.from_function(
            getattr(tools, name),
            name=name,
            title=TITLES[name],
            description=_DESCRIPTIONS[name],
            annotations=_annotations(name),
        )
        for name in TOOL_NAMES
    ]
    return _Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, tools=built, callers=callers)


# --- over HTTP: the same callers as the REST door (http_safety), and an optional bearer token ----------------


class _HttpGate:
    """ASGI middleware before the SDK's app: Host and Origin as the REST door checks them, JSON-only POSTs, then
    the bearer token (when there is one) on every request; every refusal is a JSON body. The SDK's own Host and
    Origin protection stays on behind it."""

    def __init__(self, app: Any, policy: HttpPolicy, tenancy: Tenancy) -> None:
        self.app = app
        self.policy = policy
        self.tenancy = tenancy

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] = {}
        for key, value in scope["headers"]:  # the first of repeated headers, as the SDK's Starlette reads them
            headers.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
        refusal = self._refusal(scope["method"], headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, body, extra = refusal
        await _send_json(send, status, body, extra)

    def _refusal(
        self, method: str, headers: Mapping[str, str]
    ) -> tuple[int, Payload, list[tuple[bytes, bytes]]] | None:
        host, origin = headers.get("host"), headers.get("origin")
        if not self.policy.host_allowed(host):  # 421 as the SDK and the REST door answer it
            return 421, {"error": self.policy.host_refusal(host), "code": "MISDIRECTED_REQUEST"}, []
        if origin is not None and not self.policy.origin_allowed(origin, host):
            return 403, {"error": self.policy.origin_refusal(origin), "code": "FORBIDDEN_ORIGIN"}, []
        if not self.tenancy.namespace_of(headers.get("authorization"))[0]:
            body = {"error": UNAUTHORIZED, "code": "UNAUTHORIZED"}
            return 401, body, [(b"www-authenticate", b'Bearer realm="agent-memory"')]
        # every MCP POST carries a JSON-RPC message: JSON or 415, here rather than the SDK's plain-text 400
        unsupported = media_type_problem(headers.get("content-type"), has_body=True) if method == "POST" else None
        if unsupported:
            return 415, {"error": unsupported, "code": "INVALID_INPUT"}, []
        return None


async def _send_json(send: Any, status: int, body: Payload, extra: list[tuple[bytes, bytes]]) -> None:
    raw = json.dumps(body, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})


def build_mcp_http_app(
    server: MCPServer[Any],
    *,
    host: str = "127.0.0.1",
    api_token: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    tenancy: Tenancy | None = None,
) -> Any:
    """The streamable-HTTP ASGI app (at /mcp) behind the gate; with a token, every request needs it. Give the
    server's `tenancy` (build_mcp_server's) for per-token namespaces; `api_token` alone is one without pins."""
    from mcp.server.transport_security import TransportSecuritySettings

    policy = HttpPolicy(bind_host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=ANY_HOST not in allowed_hosts,  # "*": the SDK cannot say "any host"
        allowed_hosts=policy.hosts_for_sdk,
        allowed_origins=policy.origins_for_sdk,
    )
    gate = tenancy or Tenancy(api_token=api_token)
    return _HttpGate(server.streamable_http_app(transport_security=security, host=host), policy, gate)


def run_mcp(
    settings: Settings,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    api_token: str | None = None,
    *,
    session: StdioSession | None = None,
) -> int:
    """Build the service from the settings, then serve until the client goes away; the exit code.
    Over HTTP, a host beyond loopback needs a token (stdio has no network side and takes none).
    With `session` (stdio inside the memory server), its service, lock and streams replace the process's."""
    from agent_memory.entrypoints.bootstrap import build_service

    if transport not in TRANSPORTS:
        return _startup_failure(invalid_input(f"Unknown transport {transport!r}: use stdio or http."))
    # stdio has no token: its one caller is pinned to the server's namespace, if any
    tenancy = Tenancy.of(settings, api_token) if transport == "http" else Tenancy(pin=settings.namespace)
    secured = "token" if tenancy.secured else None
    refusal = refuse_open_bind(host, secured, "MCP over HTTP") if transport == "http" else None
    if refusal is not None:
        return _startup_failure(refusal)
    build = build_service if session is None else session.services
    match build(settings).bind(lambda built: tenancy.services(built).map(lambda _: built)):
        case Success(service):
            if session is None:  # inside the memory server, the server keeps its storage warm itself
                service.catalog.keep_warm()
            lock = None if session is None else session.lock
            server = build_mcp_server(service, default_store=settings.store, tenancy=tenancy, lock=lock)
        case Failure(error):
            return _startup_failure(error)
    try:
        if transport == "http":
            _serve_http(server, settings, host, port, tenancy)
        elif session is not None:
            session.ready()
            run_stdio(server, streams=(session.stdin, session.stdout))
        else:
            run_stdio(server)
    except KeyboardInterrupt:
        pass
    return 0


def _serve_http(server: MCPServer[Any], settings: Settings, host: str, port: int, tenancy: Tenancy) -> None:
    import uvicorn

    from agent_memory.entrypoints.http_protocol import json_400_protocol

    app = build_mcp_http_app(
        server,
        host=host,
        tenancy=tenancy,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=server.settings.log_level.lower(),
        http=json_400_protocol(),
    )


def _startup_failure(error: DomainError) -> int:
    sys.stderr.write(json.dumps(out.error_json(error), ensure_ascii=False) + "\n")
    return row(error).exit_code
