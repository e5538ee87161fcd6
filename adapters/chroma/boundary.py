"""Where chromadb meets the domain: its exceptions as DomainErrors, raised inside and returned once per port method."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import httpx
from attrs import frozen
from chromadb.errors import ChromaError, NotFoundError
from returns.result import Result

from agent_memory.adapters.chroma.salvage import is_vector_index_damage
from agent_memory.adapters.shared.boundary import Abort, as_result
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.private import owner_only_files
from agent_memory.domain.errors import DomainError, ErrorCode

T = TypeVar("T")


class Sent(Abort):
    """The server went away after a request was sent to it (not while connecting): a write's outcome is unknown."""


class CollectionGone(Abort):
    """Chroma no longer knows the collection a call named (a server's collection renamed or dropped by another
    client's rebuild since it was looked up): the store looks it up again and retries."""


@frozen
class Boundary:
    """Runs Chroma calls inside plain code (`call`), and a port method's plain code as a Result (`result`)."""

    location: str
    server: bool

    def unavailable(self, cause: BaseException | str) -> DomainError:
        if self.server:
            message = f"Cannot connect to ChromaDB at {self.location}. Is Docker running?"
        else:
            message = f"Cannot open the ChromaDB data at {self.location}{disk_hint(cause, self.location)}."
        return DomainError(ErrorCode.BACKEND_UNAVAILABLE, message, cause=str(cause))

    def call(self, doing: str, call: Callable[[], T]) -> T:
        """`call()`; what it raises aborts: network failures as BACKEND_UNAVAILABLE, library errors as STORAGE_ERROR."""
        try:
            with owner_only_files():  # what Chroma writes meanwhile (sqlite, HNSW files) is the owner's alone
                return call()
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, ConnectionError) as error:
            raise Abort(self.unavailable(error)) from error  # nothing was sent
        except httpx.TransportError as error:
            raise Sent(self.unavailable(error)) from error  # sent, and no answer came back
        except NotFoundError as error:
            raise CollectionGone(self.failed(doing, error)) from error
        except (ChromaError, ValueError, TypeError, KeyError) as error:
            raise Abort(self.failed(doing, error)) from error
        except Exception as error:
            # Boundary catch-all, narrowed: chromadb's HTTP client raises a plain `Exception(response.text)`
            # for server errors it cannot classify (chromadb/api/base_http_client.py). Only that exact
            # type is turned into STORAGE_ERROR; any subclass (an Abort from inside included) propagates.
            if type(error) is not Exception:
                raise
            raise Abort(self.failed(doing, error)) from error

    def outcome_unknown(self, doing: str, cause: DomainError) -> DomainError:
        """OUTCOME_UNKNOWN: a write was sent and the server went away before it answered."""
        return DomainError(
            ErrorCode.OUTCOME_UNKNOWN,
            f"The Chroma server at {self.location} went away while it was asked to {doing}, after the request was "
            "sent: the write may have been stored, or not. Look the memory up (by its path or id) before writing it "
            "again, or retry with the same idempotency key, which stores it once either way.",
            cause=cause.cause,
        )

    def failed(self, doing: str, error: BaseException) -> DomainError:
        """STORAGE_ERROR for a library error: on a server, what the server answered; embedded, a full disk named."""
        if self.server:
            answer = " ".join(str(error).split())[:300] or type(error).__name__
            return DomainError(
                ErrorCode.STORAGE_ERROR,
                f"ChromaDB failed to {doing}: the server at {self.location} answered: {answer}",
                cause=f"{type(error).__name__}: {error}",
            )
        return storage_error(doing, error, self.location)

    def result(self, call: Callable[[], T]) -> Result[T, DomainError]:
        """A port method's plain code as a Result: an Abort gives its DomainError, anything else is a bug."""
        return as_result(call)


def storage_error(doing: str, error: BaseException, where: str | None = None) -> DomainError:
    """A library error as STORAGE_ERROR; `where` (an embedded database's folder) lets a full disk be named."""
    return DomainError(
        ErrorCode.STORAGE_ERROR,
        f"ChromaDB failed to {doing}{disk_hint(error, where) or index_hint(error)}.",
        cause=f"{type(error).__name__}: {error}",
    )


def index_hint(cause: BaseException | str) -> str:
    """': its vector index is damaged …' when the cause is Chroma failing to load its HNSW files; '' otherwise."""
    if not is_vector_index_damage(str(cause)):
        return ""
    return (
        ": its vector index (HNSW files) is damaged. `memory export` still reads every memory, and "
        "`memory reindex` rebuilds the index from them"
    )
