"""The one error type of the domain: a code from a closed set, a message, and optional path and cause."""

from __future__ import annotations

from enum import StrEnum

from attrs import frozen


class ErrorCode(StrEnum):
    """Every way a memory operation can fail; entrypoints map these to exit codes and HTTP statuses."""

    MEMORY_NOT_FOUND = "MEMORY_NOT_FOUND"
    MEMORY_EXPIRED = "MEMORY_EXPIRED"
    INVALID_PATH = "INVALID_PATH"
    INVALID_INPUT = "INVALID_INPUT"
    INVALID_OPERATION = "INVALID_OPERATION"
    DESTINATION_EXISTS = "DESTINATION_EXISTS"
    CATEGORY_NOT_FOUND = "CATEGORY_NOT_FOUND"
    STORE_NOT_FOUND = "STORE_NOT_FOUND"
    STORAGE_ERROR = "STORAGE_ERROR"
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"
    EMBEDDING_MISMATCH = "EMBEDDING_MISMATCH"
    EMBEDDING_ERROR = "EMBEDDING_ERROR"
    # a write sent to the storage server that went away before answering: it may have been stored, or not
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    # another writer changed the memory since this write read it (its revision won at the engine): nothing of this
    # write was kept; read the memory again and retry
    CONFLICT = "CONFLICT"


@frozen
class DomainError:
    """A failed operation, as data: use cases return it inside a Failure, never raise it."""

    code: ErrorCode
    message: str
    path: str | None = None
    cause: str | None = None


def not_found(memory_ref: str, cause: str | None = None) -> DomainError:
    """The error for a memory that does not exist (or is soft-deleted, which looks the same)."""
    return DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=memory_ref, cause=cause)


def invalid_input(message: str) -> DomainError:
    """The error for a value the caller can correct."""
    return DomainError(ErrorCode.INVALID_INPUT, message)


class InvalidValue(ValueError):
    """Raised by attrs validators when a domain value would break an invariant.

    Use cases catch it at construction and turn it into a Failure(DomainError), so a bad value
    can never be built and never escapes as an exception.
    """

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_INPUT) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_error(self) -> DomainError:
        return DomainError(self.code, self.message)
