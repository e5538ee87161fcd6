"""The MCP door's resources: what an agent can attach as context without a tool call, each a command too.

- `memory://stores`: every store with its memory count.
- `memory://{store}/index`: a store's top categories and its newest memories, compact (path, id, tokens,
  updated_at), the same page `list_memories` shows.
- `memory://{store}/memories/{+path}`: one memory by path (or id), as `get_memory` shows it.

A resource runs its command through the dispatcher as its caller's tenant, like a tool; a failure is a
ResourceError whose text is the tool error's ('MEMORY_NOT_FOUND: … Check the path or id: …').
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from returns.result import Failure, Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.mcp.command_tools import LIST_PAGE
from agent_memory.entrypoints.page_views import listing_page_json

JSON_MIME = "application/json"
_NOT_FOUND = frozenset({ErrorCode.MEMORY_NOT_FOUND, ErrorCode.STORE_NOT_FOUND, ErrorCode.CATEGORY_NOT_FOUND})


def _answer(outcome: Result[dict[str, Any], DomainError], error_text: Callable[[DomainError], str]) -> str:
    match outcome:
        case Success(payload):
            return json.dumps(payload, ensure_ascii=False)
        case Failure(error):
            if error.code in _NOT_FOUND:
                raise ResourceNotFoundError(error_text(error))
            raise ResourceError(error_text(error))
    raise ResourceError("STORAGE_ERROR: the operation returned no result.")  # pragma: no cover - Result is closed


def add_resources(
    server: MCPServer[Any],
    service: Callable[[], MemoryService],
    run: Callable[[Callable[[], str]], str],
    error_text: Callable[[DomainError], str],
) -> None:
    """Register the resources on `server`; `service()` is the caller's service, `run` the door's call lock."""

    @server.resource(
        "memory://stores",
        name="stores",
        title="Stores",
        description="Every store with its memory count.",
        mime_type=JSON_MIME,
    )
    def stores() -> str:
        return run(lambda: _answer(dispatch(service(), c.ListStores()).map(out.stores_json), error_text))

    @server.resource(
        "memory://{store}/index",
        name="store-index",
        title="A store's index",
        description=f"A store's top categories (with counts and descriptions) and its {LIST_PAGE} newest memories, "
        "each as path, id, tokens and updated_at; read one with memory://{store}/memories/{path}.",
        mime_type=JSON_MIME,
    )
    def index(store: str) -> str:
        listing = c.ListMemories(store=store, limit=LIST_PAGE)
        return run(
            lambda: _answer(
                dispatch(service(), listing).map(lambda page: listing_page_json(page, LIST_PAGE, 0, compact=True)),
                error_text,
            )
        )

    @server.resource(
        "memory://{store}/memories/{+path}",
        name="memory",
        title="A memory",
        description="One memory by its path ('category/…/slug') or id, with its content, metadata and confidence.",
        mime_type=JSON_MIME,
    )
    def memory(store: str, path: str) -> str:
        return run(
            lambda: _answer(dispatch(service(), c.GetMemory(ref=path, store=store)).map(out.view_json), error_text)
        )
