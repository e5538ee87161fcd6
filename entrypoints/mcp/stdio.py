"""MCP over stdio that answers every request: lines the SDK would drop unanswered become INVALID_INPUT tool errors."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agent_memory.entrypoints.http.safety import MAX_JSON_DEPTH, json_depth
from agent_memory.entrypoints.json_codec import has_lone_surrogate

# the tool name a refused request is rewritten to call; the server answers it with the reason (mcp_server._Server)
REFUSED_TOOL = "agent_memory.refused"
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOP_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def refusal(line: str) -> str | None:
    """Why the SDK would leave this request unanswered (bad UTF-8, a lone surrogate, deep nesting, a request that is
    not valid JSON-RPC); None if fine."""
    if _SURROGATE.search(line):  # undecodable bytes arrive as lone surrogates (surrogateescape)
        return "The request is not valid UTF-8: send JSON encoded as UTF-8."
    raw = line.encode("utf-8", "surrogateescape")
    if json_depth(raw, stop_after=MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        return f"The request's JSON nests deeper than {MAX_JSON_DEPTH} levels."
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None  # not JSON at all: the SDK reports it (there is no id to answer)
    if has_lone_surrogate(message):
        return "The request holds a lone surrogate escape (\\ud800–\\udfff): send valid Unicode text."
    if _unreadable_request(message):
        return (
            'The request is not valid JSON-RPC 2.0: it needs "jsonrpc": "2.0", a string "method" and, if any, '
            '"params" as an object.'
        )
    return None


def _unreadable_request(message: Any) -> bool:
    """A request (a method and an integer or string id) the SDK cannot validate: it would drop it unanswered."""
    if not isinstance(message, dict) or "method" not in message:
        return False
    identifier = message.get("id")
    if isinstance(identifier, bool) or not isinstance(identifier, int | str):
        return False  # no id to answer with: a notification, or an id no answer could carry
    from mcp import types

    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError:  # pydantic's ValidationError
        return True
    return False


def request_id(line: str) -> Any:
    """The JSON-RPC id of a request too broken to parse as a whole: the first top-level `"id"` before any nesting."""
    raw = line.encode("utf-8", "surrogateescape").strip()
    starts = [at for at in (raw.find(b"[", 1), raw.find(b"{", 1)) if at > 0]
    head = raw[: min(starts)] if starts else raw  # the keys before the first nesting ({"jsonrpc", "id", ...)
    last = len(raw) - 1
    tail = raw[max(raw.rfind(b"]", 0, last), raw.rfind(b"}", 0, last), 0) :]  # the keys after the last one
    found = _TOP_ID.search(head) or _TOP_ID.search(tail)
    if found is None:
        return None
    try:
        return json.loads(found.group(1).decode("utf-8", "replace"))
    except ValueError:
        return None


def rewrite(line: str) -> str | None:
    """The line as the SDK should see it: unchanged, a call of the refusal tool with the reason, or None (drop a
    refused notification: it expects no answer)."""
    reason = refusal(line)
    if reason is None:
        return line
    identifier = request_id(line)
    if identifier is None:
        return None
    call = {"name": REFUSED_TOOL, "arguments": {"reason": reason}}
    return json.dumps({"jsonrpc": "2.0", "id": identifier, "method": "tools/call", "params": call}) + "\n"


class _Lines:
    """stdin as the SDK reads it (an async iterator of text lines), with refused requests rewritten."""

    def __init__(self, source: Any) -> None:
        self._source = source

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._source:
            rewritten = rewrite(line)
            if rewritten is not None:
                yield rewritten


def run_stdio(server: Any, streams: tuple[Any, Any] | None = None) -> None:
    """Serve `server` (an MCPServer) over stdin/stdout until the client closes stdin; or over `streams` (binary
    input, binary output: a memory server's client connection)."""
    from mcp.server.stdio import stdio_server

    async def serve() -> None:
        source = sys.stdin.buffer if streams is None else streams[0]
        text = io.TextIOWrapper(source, encoding="utf-8", errors="surrogateescape")
        output = None
        if streams is not None:
            output = anyio.wrap_file(io.TextIOWrapper(streams[1], encoding="utf-8", write_through=True))
        async with stdio_server(stdin=_Lines(anyio.wrap_file(text)), stdout=output) as (read, write):  # type: ignore[arg-type]
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(serve)
