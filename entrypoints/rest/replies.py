"""The REST door's answers: the error JSON, each route's documented failures, and the Door that runs a use case."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar
from urllib.parse import urlencode

import anyio
import attrs
from litestar import Response
from litestar.openapi import ResponseSpec
from returns.methods import unwrap_or_failure
from returns.result import Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.duplicates import ACTIONS, DuplicatePolicy
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import check_namespace
from agent_memory.domain.results import validated
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import MemoryView
from agent_memory.entrypoints.advice import worded
from agent_memory.entrypoints.error_table import row

T = TypeVar("T")
Payload = dict[str, Any]


@attrs.frozen(kw_only=True)
class ErrorBody:
    """Every failure's JSON: a message, a stable code, and the path or the fields concerned when known."""

    error: str
    code: str
    path: str | None = None
    cause: str | None = None
    details: list[dict[str, Any]] | None = None


MEANING: Mapping[int, str] = {
    400: "Malformed request: not JSON, not UTF-8, nested past 64 levels, a wrong type, an unknown enum value, "
    "a missing or unknown field, an unknown or repeated query parameter (INVALID_INPUT)",
    401: "No or a wrong API token (UNAUTHORIZED); only when the server has one",
    403: "A browser Origin that is not allowed (FORBIDDEN_ORIGIN): see MEMORY_ALLOWED_ORIGINS",
    404: "MEMORY_NOT_FOUND, CATEGORY_NOT_FOUND or STORE_NOT_FOUND",
    409: "DESTINATION_EXISTS, INVALID_OPERATION (already deleted, cannot reinforce, store-wide under a namespace), EMBEDDING_MISMATCH or CONFLICT (another writer changed the memory first: read it again and retry); an Idempotency-Key reused with another body (INVALID_OPERATION)",
    410: "MEMORY_EXPIRED: pass include_expired=true to read or change it anyway",
    413: "The body is larger than 1 MiB (REQUEST_TOO_LARGE)",
    415: "A body that is not 'Content-Type: application/json' (INVALID_INPUT)",
    421: "A Host header that names another server (MISDIRECTED_REQUEST): see MEMORY_ALLOWED_HOSTS",
    422: "INVALID_INPUT or INVALID_PATH: a value the use case refuses; the message says how to fix it",
    503: "BACKEND_UNAVAILABLE, STORAGE_ERROR or EMBEDDING_ERROR: retry later; OUTCOME_UNKNOWN: the storage server "
    "went away after the write was sent, so it may have been stored (GET it, or retry with the same Idempotency-Key)",
}


def failures(*statuses: int) -> dict[int, ResponseSpec]:
    """The documented failures of one route (401, 403, 421 and 400 on every route: token, Origin, Host, query)."""
    return {
        status: ResponseSpec(data_container=ErrorBody, description=MEANING[status], generate_examples=False)
        for status in sorted({400, 401, 403, 421, *statuses})
    }


# POST /memories when nothing was created: a near-duplicate was skipped to or merged into (domain/duplicates.py)
NOTHING_CREATED = ResponseSpec(
    data_container=dict[str, Any],
    description="Nothing new was stored: a live memory of the same scope already says this, and the request's "
    "`on_duplicate` (skip or update) chose it. The body is that memory (updated: with the new content), "
    "`on_duplicate` says what was done (skipped or updated), `duplicates` names the near-duplicates found; "
    "`Content-Location` is where to read it.",
    generate_examples=False,
)


def created_status(view: MemoryView) -> int:
    """201 when a create stored a new memory (with or without near-duplicates kept beside it), 200 when it skipped
    to or updated an existing one."""
    return 200 if view.on_duplicate in (ACTIONS[DuplicatePolicy.SKIP], ACTIONS[DuplicatePolicy.UPDATE]) else 201


def error_body(error: DomainError) -> Payload:
    """{"error", "code"} plus the path and, for the caller's own mistakes, the cause."""
    body: Payload = {"error": worded(error.message, "rest"), "code": error.code.value}
    if error.path is not None:
        body["path"] = error.path
    if error.cause is not None and row(error).http_status < 500:
        body["cause"] = error.cause
    return body


def failure_reply(error: DomainError) -> Response[Payload]:
    return Response(error_body(error), status_code=row(error).http_status)


def no_route(message: str) -> Response[Payload]:
    return Response({"error": message, "code": "NOT_FOUND"}, status_code=404)


Locate = Callable[[T], str]
Status = int | Callable[[T], int]  # a route's success status, or how to tell it from the value (a create's)


def _reply(
    outcome: Result[T, DomainError],
    render: Callable[[T], Payload],
    status: Status[T] = 200,
    locate: Locate[T] | None = None,
) -> Response[Payload]:
    """The thin door's last step: a success rendered with the CLI's JSON shapes (with `locate`, a `Location` header
    naming where to read what a 201 created, or `Content-Location` naming the resource another status answers
    with: the existing memory a create skipped to or merged into), a failure as its error body."""

    def success(value: T) -> Response[Payload]:
        code = status(value) if callable(status) else status
        header = "Location" if code == 201 else "Content-Location"
        headers = None if locate is None else {header: locate(value)}
        return Response(render(value), status_code=code, headers=headers)

    return unwrap_or_failure(outcome.map(success).alt(failure_reply))


def with_store(url: str, store: str | None, **query: str) -> str:
    """A URL of this API, with the store and other query parameters when given."""
    given = {**query, **({} if store is None else {"store": store})}
    return url + ("?" + urlencode(given) if given else "")


# --- the service, one call at a time ---------------------------------------------------------------

Use = Callable[[MemoryService], Result[T, DomainError]]


class Door:
    """The service behind a lock, called in a worker thread: the event loop stays free (/health answers during a
    reindex) and read-check-write steps of concurrent requests never interleave. One door per caller namespace
    (tenancy.py), all sharing the lock and the slot. The slot bounds the threads: a request waits for it in the
    event loop, holding no thread, so a burst of callers costs one thread per process, not one each (more
    processes answer at once: `memory serve --workers N` over a Chroma or Qdrant server). Over such a server the
    app passes no lock (`nullcontext`) and a wider slot: the service's write locks order the writes, and the
    creates queued in a process share one turn of the store's lease (adapters/lease_locks.py)."""

    def __init__(
        self,
        service: MemoryService,
        lock: AbstractContextManager[Any] | None = None,
        slot: anyio.CapacityLimiter | None = None,
    ) -> None:
        self.service = service
        self._lock: AbstractContextManager[Any] = lock or threading.Lock()
        self._slot = slot or anyio.CapacityLimiter(1)

    def _locked(self, use: Use[T]) -> Result[T, DomainError]:
        with self._lock:
            return use(self.service)

    async def run(self, use: Use[T]) -> Result[T, DomainError]:
        return await anyio.to_thread.run_sync(self._locked, use, limiter=self._slot)

    async def reply(
        self, use: Use[T], render: Callable[[T], Payload], status: Status[T] = 200, locate: Locate[T] | None = None
    ) -> Response[Payload]:
        """Run one use case and answer with its JSON (the CLI's shapes) or its error body."""
        return _reply(await self.run(use), render, status, locate)


def guarded(
    namespace: str | None, call: Callable[[MemoryService, tuple[str, ...] | None], Result[T, DomainError]]
) -> Use[T]:
    """A use case behind the `?namespace=a/b` tenant guard (INVALID_INPUT if the labels are not valid)."""
    return lambda service: _namespace(namespace).bind(lambda guard: call(service, guard))


def _namespace(raw: str | None) -> Result[tuple[str, ...] | None, DomainError]:
    return Success(None) if raw is None else validated(lambda: check_namespace(raw))


NamespaceGuard = tuple[str, ...] | None


def guarded_command(namespace: str | None, command: Callable[[NamespaceGuard], c.Asks[T]]) -> Use[T]:
    """A command made under the `?namespace=` guard, dispatched."""
    return guarded(namespace, lambda service, guard: dispatch(service, command(guard)))
