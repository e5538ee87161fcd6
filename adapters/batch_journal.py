"""The BatchJournal port on disk: one JSON file per running batch, flock'd by its writer until it commits."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.shared.boundary import as_result
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.durable import fsync_directory
from agent_memory.adapters.shared.plain import memory_from_plain, plain_memory
from agent_memory.adapters.shared.private import PRIVATE_FILE, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import PendingBatch

SUFFIX = ".batch.json"
UNREADABLE = (OSError, ValueError, KeyError, TypeError)  # a journal that is not one: left alone, never rolled back


def _always() -> bool:
    return True


class FileBatchJournal:
    """`<directory>/<key>.batch.json`, written whole (temporary, fsync, rename) before a batch's first write.

    Its writer holds an flock on it while the batch runs; commit deletes it (fsyncing the folder): that is the
    commit point. A file whose flock can be taken has no live writer: its batch was interrupted. The pre-images
    of replaced memories are kept in the storage backends' plain shape. `still_wanted` is asked at commit: a
    server whose client went away answers False, so the batch is rolled back rather than kept unacknowledged.
    """

    hides_unfinished = False  # the stores beside it show a batch's records as written: the next open rolls back

    def __init__(self, directory: Path, *, still_wanted: Callable[[], bool] = _always) -> None:
        self.directory = directory
        self.still_wanted = still_wanted
        self._guard = threading.Lock()
        self._held: dict[str, int] = {}  # key → the descriptor whose flock marks the batch running

    def begin(self, batch: PendingBatch) -> Result[PendingBatch, DomainError]:
        def write() -> PendingBatch:
            private_directory(self.directory)
            descriptor, temporary = tempfile.mkstemp(prefix=".batch.tmp-", dir=self.directory)
            begun = evolve(batch, key=Path(temporary).name.rsplit("-", 1)[-1])
            try:
                os.fchmod(descriptor, PRIVATE_FILE)
                os.write(descriptor, json.dumps(plain_batch(begun)).encode("utf-8"))
                os.fsync(descriptor)
                fcntl.flock(descriptor, fcntl.LOCK_EX)  # a fresh file: nobody else can hold it
                os.replace(temporary, self._path(begun.key))
                fsync_directory(self.directory)
            except BaseException:
                os.close(descriptor)
                Path(temporary).unlink(missing_ok=True)
                raise
            with self._guard:
                self._held[begun.key] = descriptor
            return begun

        return self._result("record the batch before writing it", write)

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]:
        if not self.still_wanted():
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    "The caller went away before the batch could be acknowledged, so it was not kept.",
                    path=batch.store,
                )
            )
        return self.drop(batch)

    def drop(self, batch: PendingBatch) -> Result[None, DomainError]:
        def forget() -> None:
            self._path(batch.key).unlink(missing_ok=True)
            fsync_directory(self.directory)
            self._let_go(batch.key)

        return self._result("finish the batch", forget)

    def release(self, batch: PendingBatch) -> Result[None, DomainError]:
        self._let_go(batch.key)
        return Success(None)

    def interrupted(self, store: str) -> Result[tuple[PendingBatch, ...], DomainError]:
        def look() -> tuple[PendingBatch, ...]:
            if not self.directory.is_dir():  # nothing was ever journaled: a read creates nothing
                return ()
            found = (_unheld(path) for path in sorted(self.directory.glob(f"*{SUFFIX}")))
            return tuple(batch for batch in found if batch is not None and batch.store == store)

        return self._result("read the batch journal", look)

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}{SUFFIX}"

    def _let_go(self, key: str) -> None:
        with self._guard:
            descriptor = self._held.pop(key, None)
        if descriptor is not None:
            os.close(descriptor)  # releases the flock

    def _result(self, doing: str, call: Callable[[], Any]) -> Result[Any, DomainError]:
        def translate(error: Exception) -> DomainError | None:
            if not isinstance(error, OSError):
                return None
            hint = disk_hint(error, self.directory) or f" ({error.strerror or error})"
            return DomainError(
                ErrorCode.STORAGE_ERROR,
                f"Could not {doing} in {self.directory}{hint}.",
                path=str(self.directory),
                cause=type(error).__name__,
            )

        return as_result(call, (OSError,), translate)


def plain_batch(batch: PendingBatch) -> dict[str, Any]:
    return {
        "store": batch.store,
        "created": list(batch.created),
        "replaced": [plain_memory(memory) for memory in batch.replaced],
    }


def _unheld(path: Path) -> PendingBatch | None:
    """The batch a journal file records, when no writer holds it (None while one does, or when it is unreadable)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None  # committed meanwhile, or not ours to open
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its writer is alive: the batch is running
        if os.fstat(descriptor).st_nlink == 0:
            return None  # committed between the listing and the open
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            raw = json.loads(handle.read())
        return PendingBatch(
            str(raw["store"]),
            tuple(str(memory_id) for memory_id in raw["created"]),
            tuple(memory_from_plain(plain) for plain in raw["replaced"]),
            key=path.name.removesuffix(SUFFIX),
        )
    except UNREADABLE:
        return None
    finally:
        os.close(descriptor)
