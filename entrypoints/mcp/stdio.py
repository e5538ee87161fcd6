"""MCP over stdio that answers every request: lines the SDK would drop unanswered become INVALID_INPUT tool errors,
or the JSON-RPC error the spec names (-32700, -32600) when no request can be read from them."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

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


def _rpc_error(code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))


def _bad_id(message: dict[str, Any]) -> bool:
    """A request whose id no answer could carry: an object, an array, a fraction or a boolean (null is left to the
    SDK, as a notification's missing id is)."""
    identifier = message.get("id")
    return (
        "method" in message
        and identifier is not None
        and (isinstance(identifier, bool) or not isinstance(identifier, int | str))
    )


def protocol_error(line: str) -> JSONRPCError | None:
    """The JSON-RPC error a line gets before the SDK sees it, or None: -32700 for a line that is not JSON, -32600
    for JSON that is no request object (a batch array, a bare value, an id no answer could carry); both with id
    null, as JSON-RPC 2.0 asks when the request's id cannot be read. Blank lines and refused requests: None."""
    if not line.strip() or refusal(line) is not None:
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _rpc_error(PARSE_ERROR, "Parse error: the line is not JSON. Send one JSON-RPC 2.0 request per line.")
    if isinstance(message, list):
        return _rpc_error(INVALID_REQUEST, "Invalid Request: batches are not supported; send one request per line.")
    if not isinstance(message, dict):
        return _rpc_error(INVALID_REQUEST, 'Invalid Request: a request is a JSON object with "jsonrpc": "2.0".')
    if _bad_id(message):
        return _rpc_error(INVALID_REQUEST, "Invalid Request: a request's id is a string or an integer.")
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
    """stdin as the SDK reads it (an async iterator of text lines), with refused requests rewritten, blank lines
    skipped and unreadable ones answered at once on the SDK's write stream (`answer_on`)."""

    def __init__(self, source: Any) -> None:
        self._source = source
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write: Any) -> None:
        """Where the JSON-RPC errors go: the session's write stream, once the SDK has made it."""
        self._answers = write
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._source:
            error = protocol_error(line)
            if error is not None:
                await self._ready.wait()
                await self._answers.send(SessionMessage(error))
                continue
            rewritten = rewrite(line) if line.strip() else None
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
        lines = _Lines(anyio.wrap_file(text))
        async with stdio_server(stdin=lines, stdout=output) as (read, write):  # type: ignore[arg-type]
            lines.answer_on(write)
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(serve)
