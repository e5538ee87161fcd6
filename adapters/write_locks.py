"""The WriteLocks port on disk: one lock file per store, shared by every process of this machine."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from filelock import FileLock, Timeout
from returns.result import Failure, Result

from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.private import PRIVATE_FILE, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name

T = TypeVar("T")
DEFAULT_TIMEOUT_S = 300.0  # a writer waits this long for another's write or a whole reindex


class FileWriteLocks:
    """`<directory>/<store>.lock`, taken with flock; reentrant per thread (a use case calling another)."""

    def __init__(self, directory: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.directory = directory
        self.timeout = timeout
        self._held = threading.local()

    def exclusive(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        held: set[str] = self._held.__dict__.setdefault("stores", set())
        if store in held:
            return work()
        try:
            check_store_name(store)  # the name becomes a file name: only a valid store name ever does
        except InvalidValue as error:
            return Failure(error.to_error())
        try:
            with self._locked(store):
                held.add(store)
                try:
                    return work()
                finally:
                    held.discard(store)
        except Timeout:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The store '{store}' is busy: another process has been writing to it (or reindexing it) "
                    f"for {self.timeout:g} s. Try again when it is done.",
                    path=store,
                )
            )
        except OSError as error:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"Cannot write to store '{store}': its lock in {self.directory} cannot be taken"
                    + (disk_hint(error) or f" ({error.strerror or error}): check that the data directory is writable")
                    + ". Nothing was written.",
                    path=store,
                    cause=type(error).__name__,
                )
            )

    @contextmanager
    def _locked(self, store: str) -> Iterator[None]:
        private_directory(self.directory)
        # a new FileLock per acquisition: flock excludes every other open file, threads of this process included
        with FileLock(self.directory / f"{store}.lock", timeout=self.timeout, thread_local=False, mode=PRIVATE_FILE):
            yield
