"""One table for every door: each ErrorCode's CLI exit code, HTTP status and the hint its tool errors add."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from attrs import frozen

from agent_memory.domain.errors import DomainError, ErrorCode

__all__ = ["ERRORS", "FAILED", "ErrorRow", "ToolDoor", "codes_with_status", "row"]

ToolDoor = Literal["mcp", "python"]  # the doors whose errors a model reads: the MCP server, the agent tools

FAILED = 1  # spec 000: a command that fails exits 1, whatever the reason; the JSON's code says which


@frozen
class ErrorRow:
    """How the doors show one ErrorCode. A hint says what to do next in the words of the tools that door
    offers (MCP tools, or the agent tools manage_memory/search_memory); empty when the message says it already."""

    exit_code: int
    http_status: int
    mcp_hint: str = ""
    python_hint: str = ""

    def hint(self, door: ToolDoor) -> str:
        return self.mcp_hint if door == "mcp" else self.python_hint


# every ErrorCode has a row: tests/unit/test_error_table.py fails for a code added without one
ERRORS: Mapping[ErrorCode, ErrorRow] = MappingProxyType(
    {
        ErrorCode.MEMORY_NOT_FOUND: ErrorRow(
            FAILED, 404, mcp_hint="Check the path or id: list_memories and search_memories show what exists."
        ),
        ErrorCode.MEMORY_EXPIRED: ErrorRow(FAILED, 410),
        ErrorCode.INVALID_PATH: ErrorRow(FAILED, 422),
        ErrorCode.INVALID_INPUT: ErrorRow(FAILED, 422),
        ErrorCode.INVALID_OPERATION: ErrorRow(FAILED, 409),
        ErrorCode.DESTINATION_EXISTS: ErrorRow(FAILED, 409),
        ErrorCode.CATEGORY_NOT_FOUND: ErrorRow(FAILED, 404),
        ErrorCode.STORE_NOT_FOUND: ErrorRow(
            FAILED, 404, mcp_hint="list_stores shows the stores; create_store or add_memory creates one."
        ),
        ErrorCode.STORAGE_ERROR: ErrorRow(FAILED, 503),
        ErrorCode.BACKEND_UNAVAILABLE: ErrorRow(
            FAILED, 503, mcp_hint="The storage backend is not reachable: retry later or tell the user."
        ),
        ErrorCode.EMBEDDING_MISMATCH: ErrorRow(FAILED, 409),
        ErrorCode.EMBEDDING_ERROR: ErrorRow(FAILED, 503),
        ErrorCode.OUTCOME_UNKNOWN: ErrorRow(
            FAILED,
            503,
            mcp_hint="The write may have been stored: get_memory (by its path or id) shows whether it was; retry "
            "with the same idempotency_key to be sure it is stored once.",
            python_hint="The write may have been stored: look it up by its path or id before writing it again, or "
            "retry with the same idempotency_key.",
        ),
        ErrorCode.CONFLICT: ErrorRow(
            FAILED,
            409,
            mcp_hint="Another writer changed this memory first: get_memory shows it now; apply the change again.",
            python_hint="Another writer changed this memory first: read it again and apply the change again.",
        ),
    }
)


def row(error: DomainError) -> ErrorRow:
    """The row of `error`'s code."""
    return ERRORS[error.code]


def codes_with_status(status: int) -> tuple[ErrorCode, ...]:
    """The codes REST answers with `status`, in ErrorCode order (what its OpenAPI description names)."""
    return tuple(code for code, each in ERRORS.items() if each.http_status == status)
