"""A full or read-only disk is worded alike by every backend (one helper, adapters/shared/disk.py)."""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

import pytest
from returns.result import Failure

from agent_memory.adapters.chroma import boundary as chroma_store
from agent_memory.adapters.files import boundary as files_boundary
from agent_memory.adapters.qdrant import boundary as qdrant_boundary
from agent_memory.adapters.shared.disk import cannot_write, disk_hint, no_room, read_only_copy, write_size

CAUSES = [
    (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
    (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
    (OSError(errno.EROFS, "Read-only file system"), "read-only"),
    (PermissionError(errno.EACCES, "Permission denied"), "not writable"),
]


@pytest.mark.parametrize(("cause", "words"), CAUSES)
def test_every_backend_words_a_disk_fault_alike(cause: BaseException, words: str) -> None:
    assert words in disk_hint(cause)
    assert words in chroma_store.storage_error("write memories", cause).message
    assert words in qdrant_boundary.storage_error("write memories", cause).message

    if not isinstance(cause, OSError):
        return  # the files backend meets the disk through OS calls only

    def write() -> None:
        raise cause

    written = files_boundary.guarded("write a memory", Path("/data/files/default"), write)
    assert isinstance(written, Failure) and words in written.failure().message


def test_only_refused_writes_count_as_a_disk_that_cannot_be_written() -> None:
    assert cannot_write(OSError(errno.EROFS, "Read-only file system"))
    assert cannot_write(sqlite3.OperationalError("attempt to write a readonly database"))
    assert not cannot_write(OSError(errno.ENOSPC, "No space left on device"))
    assert not cannot_write(ValueError("bad where clause"))


def test_a_read_only_copy_holds_the_files_but_not_the_locks(tmp_path: Path) -> None:
    data = tmp_path / "qdrant"
    (data / "collection").mkdir(parents=True)
    (data / "meta.json").write_text("{}")
    (data / ".lock").write_text("")
    copy = read_only_copy(data)
    assert copy != data and (copy / "meta.json").read_text() == "{}" and (copy / "collection").is_dir()
    assert not (copy / ".lock").exists()


def test_a_write_is_refused_before_it_starts_only_when_the_disk_lacks_room_for_it(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    assert no_room(tmp_path / "data" / "chroma", 0) == ""  # a folder not made yet: its parent's disk is asked
    assert no_room(tmp_path, free) == f": the disk is full at {tmp_path} (free some space, then try again)"
    assert write_size(["x" * 500], 384) > write_size(["x" * 100], 384) > write_size([], 384) == 0
