"""Where file work meets the domain: OS errors, lock timeouts and refused values as DomainErrors, once per method."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import filelock
from returns.result import Result

from agent_memory.adapters.files.layout import LOCK_FILE
from agent_memory.adapters.shared.boundary import as_result
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue

T = TypeVar("T")

LOCK_TIMEOUT_S = 30.0
CAUGHT = (InvalidValue, OSError)  # filelock.Timeout is an OSError (a TimeoutError)


def storage_error(doing: str, where: Path, error: Exception) -> DomainError | None:
    """What a failure met while doing file work in `where` means to the user; None for exceptions not ours."""
    if isinstance(error, InvalidValue):  # a value the domain's validators refuse, met while rebuilding a record
        return error.to_error()
    if isinstance(error, filelock.Timeout):
        return DomainError(
            ErrorCode.STORAGE_ERROR,
            f"Could not {doing}: another process has held the lock {where / LOCK_FILE} for more than "
            f"{LOCK_TIMEOUT_S:.0f} s. Retry; if no memory command is running, delete that lock file.",
            path=str(where),
            cause=str(error),
        )
    if isinstance(error, OSError):
        hint = disk_hint(error, where)
        return DomainError(
            ErrorCode.STORAGE_ERROR,
            f"Could not {doing} in {where}{hint}."
            if hint
            else f"Could not {doing} in {where}: "
            f"{error.strerror or error}. Check that the directory exists and is writable and that the disk has "
            "space, then retry (run `memory reindex` if the search index may have fallen behind the files).",
            path=error.filename if isinstance(error.filename, str) else str(where),
            cause=str(error),
        )
    return None


def guarded(doing: str, where: Path, call: Callable[[], T]) -> Result[T, DomainError]:
    """Run one step of file work as a Result: an Abort gives its error, an OS error a STORAGE_ERROR saying what to do."""
    return as_result(call, CAUGHT, partial(storage_error, doing, where))
