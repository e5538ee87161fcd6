"""The MCP door (`memory mcp`): every use case as an MCP tool on the official SDK, over stdio or HTTP."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from attrs import frozen
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from pydantic import Field, ValidationError
from returns.result import Failure, Result, Success

from agent_memory._version import __version__
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.namespaces import ConfigurationError, resolve_namespace
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.advice import for_door, sentence
from agent_memory.entrypoints.error_table import row
from agent_memory.entrypoints.http.safety import refuse_open_bind
from agent_memory.entrypoints.mcp.callers import CALLER, Callers, refuse_cursor, unknown_arguments, validation_text
from agent_memory.entrypoints.mcp.command_tools import AGENT_TOOLS, ToolSpec, tool_annotations
from agent_memory.entrypoints.mcp.http_gate import build_mcp_http_app
from agent_memory.entrypoints.mcp.outputs import SCHEMAS, compact_input_schema, namespace_rule
from agent_memory.entrypoints.mcp.prompts import add_prompts, prompt_problem
from agent_memory.entrypoints.mcp.resources import add_resources
from agent_memory.entrypoints.mcp.stdio import REFUSED_TOOL, run_stdio
from agent_memory.entrypoints.mcp.tool_calls import argument_model, run_tool
from agent_memory.entrypoints.settings import Settings
from agent_memory.entrypoints.token_tenancy import UNAUTHORIZED, Tenancy
from agent_memory.entrypoints.tooling.calls import run_manage, run_search
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError, error_text

TRANSPORTS = ("stdio", "http")
SERVER_NAME = "agent-memory"

INSTRUCTIONS = """\
Long-term memory that persists across conversations.
A memory has an id (a UUID) and usually a path 'category/…/slug' (e.g. 'preferences/editor'); every tool that
takes `path_or_id` accepts either (or give it as `path` or `id`). Memories live in stores (default store unless `store` is given) and may carry
tags, citations (source references), an expiry and a namespace (tenant labels such as ["user", "u-123"]).
Use add_memory / get_memory / update_memory to work by path, search_memories to find memories by meaning and
keywords, list_memories and get_recent_memories to browse. manage_memory and search_memory are the namespaced
agent tools: give them `namespace`, or `user_id`, or `org_id` and `agent_id`.
Errors start with a code (MEMORY_NOT_FOUND, INVALID_PATH, INVALID_INPUT, …) followed by what to do."""

Payload = dict[str, Any]
Outcome = Result[Payload, DomainError]

# --- argument types: their descriptions become the tools' JSON schemas ---------------------------

StoreArg = Annotated[
    str | None,
    Field(description="The store to use (lowercase letters, digits and '-'). Omit for the default store."),
]
TenantId = Annotated[str | None, Field(description="Resolves the namespace when `namespace` is omitted.")]


# --- results ---------------------------------------------------------------------------------------


def tool_error_text(error: DomainError) -> str:
    """'CODE: message (path p)' plus what to do next, e.g. 'MEMORY_NOT_FOUND: Memory not found (path notes/x). …'."""
    return sentence(error_text(for_door(error, "mcp")), row(error).hint("mcp"))


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _reply(outcome: Outcome) -> CallToolResult:
    """A tool's answer: the object its output schema describes, its text the same JSON (the MCP spec's SHOULD; an
    agent tool's spec 003 sentence is its `result`, its list its `results`), or the error's text."""
    match outcome:
        case Success(payload):
            text = json.dumps(payload, ensure_ascii=False)
            return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)
        case Failure(error):
            return _error(tool_error_text(error))
    return _error("STORAGE_ERROR: the operation returned no result.")  # pragma: no cover - Result is closed


class _Server(MCPServer[Any]):
    """MCPServer whose argument-validation failures read 'INVALID_INPUT: field: problem' like every other error,
    that refuses arguments a tool or prompt does not take, and that runs each call, resource read and prompt as
    its caller's tenant (tenancy.py)."""

    def __init__(self, *args: Any, callers: Callers, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._callers = callers

    async def _handle_list_tools(self, ctx: Any, params: Any) -> Any:
        refuse_cursor("tools/list", params)
        return await super()._handle_list_tools(ctx, params)

    async def _handle_list_resources(self, ctx: Any, params: Any) -> Any:
        refuse_cursor("resources/list", params)
        return await super()._handle_list_resources(ctx, params)

    async def _handle_list_resource_templates(self, ctx: Any, params: Any) -> Any:
        refuse_cursor("resources/templates/list", params)
        return await super()._handle_list_resource_templates(ctx, params)

    async def _handle_list_prompts(self, ctx: Any, params: Any) -> Any:
        refuse_cursor("prompts/list", params)
        return await super()._handle_list_prompts(ctx, params)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        caller = self._callers.service_for(context)
        if caller is None:
            raise ResourceError("UNAUTHORIZED: " + UNAUTHORIZED)
        token = CALLER.set(caller)
        try:
            return await super().read_resource(uri, context)
        finally:
            CALLER.reset(token)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        problem = prompt_problem(self._prompt_manager.get_prompt(name), name, arguments)
        caller = self._callers.service_for(context)
        if problem is not None or caller is None:  # the SDK's own refusal is a bare ValueError: said here
            raise MCPError(INVALID_PARAMS, problem or "UNAUTHORIZED: " + UNAUTHORIZED)
        token = CALLER.set(caller)
        try:
            return await super().get_prompt(name, arguments, context)
        finally:
            CALLER.reset(token)

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
                return _error(validation_text(error.__cause__))
            raise
        finally:
            CALLER.reset(token)


@frozen
class StdioSession:
    """An MCP stdio session inside the memory server (cli/server/process.py): the server's service builder and lock, the
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

    def locked(self, step: Callable[[], str]) -> str:
        """A resource read, serialised with the tool calls."""
        with self._lock:
            return step()

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> CallToolResult:
        """A generated tool's call: its command, through the dispatcher, answered with the tool's JSON."""
        return self._run(lambda: _reply(run_tool(self.service, spec, arguments, self.default_store)))

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
        on_duplicate: Literal["keep", "skip", "update"] | None = None,  # see the description
    ) -> CallToolResult:
        def step() -> CallToolResult:
            resolved = resolve_namespace(_template(namespace), _config(user_id, org_id, agent_id))
            sentence = run_manage(
                self.service,
                resolved,
                content=content,
                action=action,
                id=id,
                store=self._store(store),
                type=type,
                tags=tags,
                on_duplicate=on_duplicate,
            )
            return _reply(Success({"action": action, "id": sentence.rsplit(" ", 1)[-1], "result": sentence}))

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
            hits = json.loads(found)
            return _reply(Success({"results": hits, "count": len(hits)}))

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


def _generated_tool(spec: ToolSpec, tools: _Tools) -> Tool:
    """A tool made from its command: the command's fields are its arguments (mcp.tool_calls.argument_model)."""
    model = argument_model(spec)

    def call(**arguments: Any) -> CallToolResult:
        return tools.run(spec, arguments)

    return Tool(
        fn=call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=compact_input_schema(model.model_json_schema(by_alias=True)),
        fn_metadata=FuncMetadata(arg_model=model, output_schema=SCHEMAS[spec.output]),
        is_async=False,
        context_kwarg=None,
        annotations=tool_annotations(spec.title, spec.read_only, spec.destructive, spec.idempotent),
    )


def _agent_tool(name: str, tools: _Tools) -> Tool:
    title, description, read_only, destructive = AGENT_TOOLS[name]
    made = Tool.from_function(
        getattr(tools, name),
        name=name,
        title=title,
        description=description,
        annotations=tool_annotations(title, read_only, destructive, read_only),
    )
    made.parameters = namespace_rule(compact_input_schema(made.parameters))
    made.fn_metadata.output_schema = SCHEMAS["manage" if name == "manage_memory" else "facts"]
    return made


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
    from agent_memory.entrypoints.mcp.command_tools import tool_specs  # the table's commands, read now

    built = [*(_generated_tool(spec, tools) for spec in tool_specs()), *(_agent_tool(n, tools) for n in AGENT_TOOLS)]
    server = _Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, tools=built, callers=callers)
    add_resources(server, lambda: tools.service, tools.locked, tool_error_text)
    add_prompts(server, lambda: tools.service, default_store, tools.locked, tool_error_text)
    return server


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
    if session is None:
        from agent_memory.entrypoints.seams import keep_owner_only

        keep_owner_only()  # what the server writes (the data, its libraries' files) is the user's alone
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

    from agent_memory.entrypoints.http.protocol import json_400_protocol

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
