"""The HTTP doors' uvicorn protocol, run by real uvicorn: a refused request gets the JSON 400, a fair one the app."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from agent_memory.entrypoints.http.protocol import json_400_protocol
from tests.http_raw import UNPARSABLE_REQUESTS, raw_http, unparsable_answers

STARTUP_SECONDS = 30


async def health(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The smallest ASGI app: 200 with a JSON body for any HTTP request."""
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", b"16")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"status": "ok"}'})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def port() -> Iterator[int]:
    chosen = free_port()
    config = uvicorn.Config(
        health,
        host="127.0.0.1",
        port=chosen,
        http=json_400_protocol(),
        log_level="critical",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield chosen
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_SECONDS)


def test_every_refused_request_gets_the_json_400(port: int) -> None:
    expected = {name: (400, "application/json", "INVALID_INPUT") for name in UNPARSABLE_REQUESTS}
    assert unparsable_answers(port) == expected


def test_a_request_within_the_limits_reaches_the_app(port: int) -> None:
    headers = b"".join(b"X-%d: a\r\n" % number for number in range(1_000))  # about 9 KB
    status, _, body = raw_http(
        port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers + b"\r\n"
    )
    assert (status, body) == (200, b'{"status": "ok"}')
