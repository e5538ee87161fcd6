"""uvicorn's HTTP protocol with one change: a request its parser refuses gets a JSON 400, like every other error."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from agent_memory.domain.errors import ErrorCode

# the request line and headers together, per request: httptools sets no bound on headers of its own (a
# 200 KB header was accepted)
MAX_HEAD_BYTES = 64 * 1024
LINGER_SECONDS = 2.0  # after a refusal, how long the rest of the request is read before the connection closes
# uvicorn answers a request line or header block it cannot parse (a lowercase or unknown method, an
# over-long URL, a malformed header) itself, before any app sees it, in text/plain: here as a JSON error
UNPARSABLE_REQUEST = (
    "The request is not valid HTTP/1.1 (its method, request line or headers could not be parsed, or they "
    "exceed 64 KB together): send an upper-case method such as GET or POST and well-formed headers, "
    "request line and headers under 64 KB in all."
)


# uvicorn's `http` setting as an import string (module attribute below): a worker process imports it by name
JSON_400_PROTOCOL = "agent_memory.entrypoints.http.protocol:JsonErrorHttpToolsProtocol"


class HeadTooLarge(Exception):
    """Raised inside httptools' callbacks: its parser turns it into the HttpParserError uvicorn answers 400."""


def json_400_body() -> bytes:
    """The body sent for a request uvicorn's parser refused: the REST error shape, INVALID_INPUT."""
    return json.dumps({"error": UNPARSABLE_REQUEST, "code": ErrorCode.INVALID_INPUT.value}).encode()


@functools.cache
def json_400_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol (a declared dependency, the parser uvicorn picks when installed), answering in JSON."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    return _httptools_protocol(HttpToolsProtocol)


def __getattr__(name: str) -> Any:
    """JsonErrorHttpToolsProtocol, made on first use (uvicorn is imported only by a server)."""
    if name == "JsonErrorHttpToolsProtocol":
        return json_400_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _answer_and_linger(transport: asyncio.Transport, answer: bytes) -> None:
    """Send the 400, half-close, and close only after a grace period in which the rest of the request is read.

    Closing at once with the client's unread bytes in the socket makes the kernel send a reset, which can
    destroy the answer before the client reads it (seen with a 120 KB header block refused at 64 KB).
    """
    transport.write(answer)
    if transport.can_write_eof():
        transport.write_eof()
    asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)


def _httptools_protocol(base: Any) -> type[asyncio.Protocol]:
    class JsonErrorHttpToolsProtocol(base):  # type: ignore[misc]
        head_bytes = 0
        refused = False

        def data_received(self, data: bytes) -> None:
            if not self.refused:  # once answered, what the client still sends is read and dropped
                super().data_received(data)

        def on_message_begin(self) -> None:
            self.head_bytes = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)  # as sent: ": " and CRLF
            super().on_header(name, value)

        def _count(self, size: int) -> None:
            self.head_bytes += size
            if self.head_bytes > MAX_HEAD_BYTES:
                raise HeadTooLarge(f"request line and headers over {MAX_HEAD_BYTES} bytes")

        def send_400_response(self, msg: str) -> None:
            self.refused = True
            body = json_400_body()
            head = [b"HTTP/1.1 400 Bad Request\r\n"]
            head.extend(name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers)
            head.append(b"content-type: application/json\r\n")
            head.append(b"content-length: " + str(len(body)).encode("ascii") + b"\r\n")
            head.append(b"connection: close\r\n\r\n")
            _answer_and_linger(self.transport, b"".join(head) + body)

    return JsonErrorHttpToolsProtocol
