"""Where qdrant-client meets the domain: its exceptions as DomainErrors, once per port method, under local mode's lock."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import httpx
from attrs import field, frozen
from qdrant_client.common.client_exceptions import QdrantException
from qdrant_client.http.exceptions import ApiException, ResponseHandlingException, UnexpectedResponse
from returns.result import Result

from agent_memory.adapters.shared.boundary import Abort, as_result
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.private import owner_only_files
from agent_memory.domain.errors import DomainError, ErrorCode

T = TypeVar("T")

# What qdrant-client raises. ValueError: local mode's "Collection … not found" and pydantic's ValidationError;
# sqlite3.Error: local mode's storage files (disk full, read-only); RuntimeError: local mode once its client
# is closed (QdrantCatalog.close).
LIBRARY_ERRORS: tuple[type[Exception], ...] = (
    ApiException,
    httpx.TransportError,
    ConnectionError,
    QdrantException,
    ValueError,
    TypeError,
    KeyError,
    sqlite3.Error,
    RuntimeError,
)


def is_transport_failure(error: BaseException) -> bool:
    """Whether the error means the server could not be reached (as opposed to an answer it gave)."""
    if isinstance(error, ResponseHandlingException):
        return isinstance(error.source, httpx.TransportError | ConnectionError)
    return isinstance(error, httpx.TransportError | ConnectionError)


def storage_error(doing: str, error: BaseException, where: str | None = None) -> DomainError:
    """A library error as STORAGE_ERROR; `where` (a local folder) lets a full disk be named."""
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"Qdrant failed to {doing}{disk_hint(error, where)}.",
        cause=f"{type(error).__name__}: {error}",
    )


@frozen
class Boundary:
    """Runs a port method's plain Python and turns what qdrant-client raises into a DomainError.

    Local mode is not thread-safe (one SQLite connection per collection, plain dicts), so a port method runs
    whole under `guard`, a re-entrant lock; a server client needs none (`guard` is then a null context).
    """

    location: str
    server: bool
    guard: contextlib.AbstractContextManager[Any] = field(eq=False, repr=False)

    def result(self, doing: str, call: Callable[[], T]) -> Result[T, DomainError]:
        """`call()` as a Result: unreachable → BACKEND_UNAVAILABLE, other library errors → STORAGE_ERROR."""

        def guarded() -> T:
            with self.guard, owner_only_files():  # what local mode writes meanwhile is the owner's alone
                return call()

        return as_result(guarded, LIBRARY_ERRORS, partial(self.translate, doing))

    def probe(self, call: Callable[[], T]) -> T:
        """A call every Qdrant answers (list collections or aliases): an HTTP error there means no usable Qdrant."""
        try:
            return call()
        except UnexpectedResponse as error:
            raise Abort(self.refused(error, probe=True) or storage_error("answer", error)) from error

    def translate(self, doing: str, error: Exception) -> DomainError | None:
        """The DomainError for a library exception; None for a RuntimeError subclass (a bug: let it propagate)."""
        if is_transport_failure(error):
            return self.unavailable(error)
        if isinstance(error, UnexpectedResponse) and (refused := self.refused(error, probe=False)) is not None:
            return refused
        if isinstance(error, RuntimeError) and type(error) is not RuntimeError:
            return None
        return storage_error(doing, error, None if self.server else self.location)

    def unavailable(self, cause: BaseException | str) -> DomainError:
        if self.server:
            message = f"Cannot connect to Qdrant at {self.location}. Is the server running?"
        else:
            message = f"Cannot open the Qdrant data at {self.location}{disk_hint(cause, self.location)}."
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=f"{type(cause).__name__}: {cause}")

    def refused(self, error: UnexpectedResponse, *, probe: bool) -> DomainError | None:
        """BACKEND_UNAVAILABLE for an HTTP answer that means "no usable Qdrant here"; None for other answers."""
        status = error.status_code
        if status in (401, 403):
            message = f"Qdrant at {self.location} refused the request (HTTP {status}). Check QDRANT_API_KEY."
        elif probe:  # calls every Qdrant answers (list collections/aliases): anything else is not a Qdrant
            message = f"No Qdrant server answers at {self.location} (HTTP {status}). Check QDRANT_URL."
        else:
            return None
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=str(error))
