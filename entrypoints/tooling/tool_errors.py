"""What every agent-tool door shows a model when a call goes wrong: 'CODE: message', raised as a ValueError."""

from __future__ import annotations

from typing import Any

from returns.result import Failure, Result

from agent_memory.domain.context import is_memory_id
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.entrypoints.advice import for_door, sentence
from agent_memory.entrypoints.error_table import row

__all__ = ["MemoryToolError", "error_text", "invalid", "succeeded"]


def error_text(error: DomainError) -> str:
    """'CODE: message (path p)' with the cause when there is one: what every tool door shows a model."""
    text = f"{error.code.value}: {error.message}"
    if error.path and error.path not in error.message:
        text += f" ({'id' if is_memory_id(error.path) else 'path'} {error.path})"
    if error.cause:
        text += f"; {error.cause}"
    return text


class MemoryToolError(ValueError):
    """A tool call the model can correct. str() is 'CODE: message', e.g. 'INVALID_INPUT: update needs an id'."""

    def __init__(
        self, code: ErrorCode, message: str, *, text: str | None = None, domain: DomainError | None = None
    ) -> None:
        super().__init__(text or f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.domain = domain  # the use case's failure, when there is one: another door words it its own way

    @classmethod
    def from_domain(cls, error: DomainError) -> MemoryToolError:
        worded = for_door(error, "python")
        text = sentence(error_text(worded), row(error).hint("python"))
        return cls(worded.code, worded.message, text=text, domain=error)


def invalid(message: str) -> MemoryToolError:
    return MemoryToolError(ErrorCode.INVALID_INPUT, message)


def succeeded(result: Result[Any, DomainError]) -> Any:
    """The success value, or the domain error raised as a MemoryToolError (a ValueError)."""
    if isinstance(result, Failure):
        raise MemoryToolError.from_domain(result.failure())
    return result.value_or(None)
