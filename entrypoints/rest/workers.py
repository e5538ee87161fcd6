"""`memory serve` as several processes: the check that the engine allows it, and the app each worker builds itself.

uvicorn's supervisor binds the port once and starts `serve_workers` processes (spawned, never forked: a Chroma or
Qdrant client and the embedding model do not survive a fork) that accept on that one socket. Each worker builds
its own service from the same settings when its app is first called (its lifespan start-up), so the parent holds
nothing but the socket. Only an engine that several processes can share is allowed: a Chroma server or a Qdrant
server. Embedded Chroma keeps each process's search index in that process (another process's writes are not
seen, and two writers can damage the directory), Qdrant local mode admits one process, and the files backend's
index is an embedded one of those: there the start-up is refused with what to change.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.entrypoints.settings import Settings

# a process over a shared engine runs this many calls of its service at once (one at a time over an embedded one)
CALLS_AT_ONCE = 8
# the header every answer carries: which process served it (a load balancer's or a test's way to tell them apart)
WORKER_HEADER = b"x-memory-worker"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[..., Awaitable[None]]  # an ASGI app (Litestar types its scopes more narrowly)
Build = Callable[[Settings, str, "str | None"], "Asgi | DomainError"]  # one process's app from the settings


def shared_engine(settings: Settings) -> str | None:
    """The engine several processes can share (a Chroma or Qdrant server's address), None for an embedded one."""
    if settings.backend == "chroma" and settings.chroma_host:
        return f"the Chroma server at {settings.chroma_host}:{settings.chroma_port}"
    if settings.backend == "qdrant" and settings.qdrant_url:
        return f"the Qdrant server at {settings.qdrant_url}"
    return None


def workers_refusal(settings: Settings) -> DomainError | None:
    """Why `serve_workers` processes cannot serve these settings (an embedded engine), or None when they can."""
    if settings.serve_workers == 1 or shared_engine(settings) is not None:
        return None
    embedded = {
        "chroma": "embedded Chroma keeps each process's search index in that process, so one worker would not "
        "see what another wrote and two writers could damage the data directory",
        "qdrant": "Qdrant local mode admits one process",
        "files": "the files backend keeps its search index in an embedded Chroma or Qdrant of this machine",
    }[settings.backend]
    return invalid_input(
        f"`memory serve` cannot run {settings.serve_workers} worker processes over the {settings.backend} backend "
        f"without a server: {embedded}. Point it at a Chroma server (backend chroma with CHROMADB_HOST) or a "
        "Qdrant server (backend qdrant with QDRANT_URL), or serve with one worker (--workers 1, the default)."
    )


def with_worker_header(app: Asgi) -> Asgi:
    """The app, every HTTP answer of it naming this process in the `x-memory-worker` header."""
    pid = str(os.getpid()).encode("ascii")

    async def named(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (WORKER_HEADER, pid)]
            await send(message)

        await app(scope, receive, send_named)

    return named


class WorkerApp:
    """The ASGI app a worker process runs: pickled to the worker with the settings and `build` (a module-level
    function, pickled by name: rest/app.serving_app), built there on first use."""

    def __init__(self, build: Build, settings: Settings, host: str, api_token: str | None) -> None:
        self._build, self._settings, self._host, self._api_token = build, settings, host, api_token
        self._app: Asgi | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"build": self._build, "settings": self._settings, "host": self._host, "api_token": self._api_token}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["build"], state["settings"], state["host"], state["api_token"])  # type: ignore[misc]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:  # the first call is the lifespan's start-up (the server runs with lifespan "on")
            built = self._build(self._settings, self._host, self._api_token)
            if isinstance(built, DomainError):  # the parent built these settings a moment ago: the engine went since
                await _refuse_start(built, scope, receive, send)
                return
            self._app = built
        await self._app(scope, receive, send)


async def _refuse_start(error: DomainError, scope: Scope, receive: Receive, send: Send) -> None:
    """A worker that cannot build its service: its start-up fails (uvicorn's supervisor then stops them all)."""
    message = json.dumps({"error": error.message, "code": error.code.value}, ensure_ascii=False)
    sys.stderr.write(message + "\n")
    if scope["type"] == "lifespan":
        await receive()  # lifespan.startup
        await send({"type": "lifespan.startup.failed", "message": message})
        return
    await send({"type": "http.response.start", "status": 503, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": message.encode()})
