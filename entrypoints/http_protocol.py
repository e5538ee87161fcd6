"""uvicorn's HTTP protocol with one change: a request its parser refuses gets a JSON 400, like every other error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agent_memory.domain.errors import ErrorCode

# uvicorn answers a request line or header block it cannot parse (a lowercase or unknown method, an
# over-long URL, a malformed header) itself, before any app sees it, as text/plain: same words, as JSON
UNPARSABLE_REQUEST = (
    "The request is not valid HTTP/1.1 (its method, request line or headers could not be parsed): send an "
    "upper-case method such as GET or POST, a request line under 64 KB and well-formed headers."
)


def json_400_body() -> bytes:
    """The body sent for a request uvicorn's parser refused: the REST error shape, INVALID_INPUT."""
    return json.dumps({"error": UNPARSABLE_REQUEST, "code": ErrorCode.INVALID_INPUT.value}).encode()


def json_400_protocol() -> type[asyncio.Protocol]:
    """The protocol class uvicorn would pick itself (httptools when installed, else h11), answering in JSON."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is optional for uvicorn: its pure-Python h11 parser serves then
        return _h11_protocol()
    return _httptools_protocol(HttpToolsProtocol)


def _httptools_protocol(base: Any) -> type[asyncio.Protocol]:
    class JsonErrorHttpToolsProtocol(base):  # type: ignore[misc]
        def send_400_response(self, msg: str) -> None:
            body = json_400_body()
            head = [b"HTTP/1.1 400 Bad Request\r\n"]
            head.extend(name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers)
            head.append(b"content-type: application/json\r\n")
            head.append(b"content-length: " + str(len(body)).encode("ascii") + b"\r\n")
            head.append(b"connection: close\r\n\r\n")
            self.transport.write(b"".join(head) + body)
            self.transport.close()

    return JsonErrorHttpToolsProtocol


def _h11_protocol() -> type[asyncio.Protocol]:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class JsonErrorH11Protocol(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            body = json_400_body()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"connection", b"close"),
            ]
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

    return JsonErrorH11Protocol
