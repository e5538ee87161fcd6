"""The MCP door's callers: which pinned service runs a tool call, and the arguments or cursors it gets wrong."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import ValidationError

from agent_memory.domain.service import MemoryService
from agent_memory.domain.tenancy import Guard
from agent_memory.entrypoints.token_tenancy import Tenancy

# the service of the tool call being run (set by the server around each call; worker threads inherit it)
CALLER: ContextVar[MemoryService | None] = ContextVar("agent_memory_mcp_caller", default=None)


class Callers:
    """Each namespace's pinned service, built once; a call gets the one its HTTP request's token names."""

    def __init__(self, service: MemoryService, tenancy: Tenancy) -> None:
        self.tenancy = tenancy
        self._pinned: Mapping[Guard, MemoryService] = tenancy.services(service).unwrap()
        self.default = self._pinned[tenancy.pin]

    def service_for(self, context: Any) -> MemoryService | None:
        """The caller's service: over HTTP from its request's Authorization header, over stdio the server's.
        None for a request whose token is not (or no longer) one of the server's."""
        request = getattr(getattr(context, "request_context", None), "request", None)
        headers = getattr(request, "headers", None)
        if headers is None:
            return self.default
        allowed, pin = self.tenancy.namespace_of(headers.get("authorization"))
        return self._pinned[pin] if allowed else None


def unknown_arguments(tool: str, arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> str | None:
    """'INVALID_INPUT: …' naming each argument the tool does not take and the nearest it does; None if all fit.
    A tool that does not exist (no schema) is a JSON-RPC error, -32602, as MCP asks (not a result with isError)."""
    if schema is None:
        raise MCPError(INVALID_PARAMS, f"INVALID_INPUT: no tool is called {tool!r}; tools/list names every tool.")
    known = sorted(schema.get("properties", {}))
    unknown = [name for name in arguments if name not in known]
    if not unknown:
        return None
    problems = []
    for name in unknown:
        near = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
        problems.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return (
        f"INVALID_INPUT: {tool} does not take {', '.join(problems)}; it takes {', '.join(known) or 'no arguments'}. "
        "Nothing was done."
    )


def refuse_cursor(method: str, params: Any) -> None:
    """Every list this server answers fits one page, so no cursor is one it gave: -32602, as MCP asks."""
    cursor = getattr(params, "cursor", None)
    if cursor is not None:
        raise MCPError(INVALID_PARAMS, f"INVALID_INPUT: invalid cursor {cursor!r}: {method} answers in one page.")


def validation_text(error: ValidationError) -> str:
    """'INVALID_INPUT: field: problem; …' for arguments that do not fit a tool's schema."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "INVALID_INPUT: " + "; ".join(problems) + ". Check the tool's input schema and try again."
