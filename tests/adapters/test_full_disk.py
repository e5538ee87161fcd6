"""A full disk (a small tmpfs, root only) through the Python API: a write that answered an error did not take
effect, the error names the full disk and where, and no lock outlives a failed write."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock
from returns.result import Success

from agent_memory.adapters.chroma.session import LOCK_FILE
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.adapters.write_locks import FileWriteLocks
from agent_memory.domain.commands import (
    CreateMemory,
    GetMemory,
    ListMemories,
    ReindexStore,
    SearchMemories,
    StoreStatus,
)
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.ports import KeywordEntry
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.isolation import empty_config


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB file system (a tmpfs): skipped where mounting is not allowed (not root, or no mount rights)."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is made with a tmpfs mount, which needs root")
    folder = tmp_path / "disk"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"mount is refused here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def _grow(folder: Path) -> None:
    (folder / "ballast").unlink(missing_ok=True)
    subprocess.run(["mount", "-o", "remount,size=64m", str(folder)], capture_output=True, check=True)


def _fill(folder: Path) -> Path:
    ballast = folder / "ballast"
    try:
        with ballast.open("wb") as handle:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
    except OSError as error:  # at the open too: the failed writes may have filled the disk to the last byte
        assert error.errno == errno.ENOSPC
    return ballast


@pytest.mark.parametrize("backend", ["files", "chroma", "qdrant"])
def test_a_create_that_failed_on_a_full_disk_is_not_stored(small_disk: Path, backend: str) -> None:
    _fill_with_creates_then_read_and_write_again(small_disk, backend)


def test_a_chroma_write_the_disk_fills_under_is_taken_back(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The room check passes (as when another process fills the disk during the write) and Chroma fails
    half-way, its write logged but not applied: the write is taken back out of the log, never applied later."""
    monkeypatch.setattr("agent_memory.adapters.chroma.session.no_room", lambda where, needed=0: "")
    # a disk filled to the last byte: Chroma cannot open anew there, so get and search say so (list reads the records)
    _fill_with_creates_then_read_and_write_again(small_disk, "chroma", every_read=False)


def test_a_qdrant_write_the_keyword_index_refuses_on_a_full_disk_is_taken_back(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The room check passes and the disk fills under the write: Qdrant stores it, the keyword index refuses it,
    and removing it again (a delete needs room for its journal) works with the folder's reserve given back."""
    monkeypatch.setattr("agent_memory.adapters.qdrant.store.no_room", lambda where, needed=0: "")
    _fill_with_creates_then_read_and_write_again(small_disk, "qdrant")


def _fill_with_creates_then_read_and_write_again(small_disk: Path, backend: str, *, every_read: bool = True) -> None:
    env = {
        "HOME": str(small_disk.parent),
        "MEMORY_CONFIG": empty_config(small_disk.parent),
        "MEMORY_DATA_DIR": str(small_disk / "data"),
        "MEMORY_BACKEND": backend,
    }
    service = build_service(load_settings({}, env).unwrap(), embedder=HashingEmbedder()).unwrap()
    acknowledged, errors, first = 0, [], None
    for number in range(400):
        created = dispatch(service, CreateMemory(content=f"memory {number} " + "x" * 4000))
        if isinstance(created, Success):
            acknowledged += 1
            first = first or created.unwrap().memory.id
        else:
            errors.append(created.failure().message)
            if len(errors) == 3:
                break
    assert errors, "the disk never filled"
    assert all("the disk is full at" in message for message in errors), errors
    # a create the full disk refused stored nothing, and says so (not "part of it may be stored")
    assert all("Nothing was stored" in message and "may be stored" not in message for message in errors), errors
    # the failed writes left no lock: another process's lock on the store, and on Chroma's folder, is taken at once
    other = FileWriteLocks(small_disk / "data" / "locks" / backend, timeout=1)
    assert isinstance(other.exclusive("default", lambda: Success(None)), Success)
    if backend == "chroma":
        with FileLock(small_disk / "data" / "chroma" / LOCK_FILE, timeout=1):
            pass
    _fill(small_disk)
    # every read answers on the full disk, and sees exactly the acknowledged memories (the keyword index too)
    listed = dispatch(service, ListMemories(limit=1000)).unwrap()
    assert len(listed.memories) == acknowledged  # type: ignore[attr-defined]
    reads = [dispatch(service, GetMemory(ref=str(first))), dispatch(service, SearchMemories(query="memory 1"))]
    if every_read:
        assert reads[0].unwrap().memory.id == first
        found = dispatch(service, SearchMemories(query="memory 1", limit=50, mode="keyword")).unwrap()
        assert found.results  # type: ignore[attr-defined]
        status = dispatch(service, StoreStatus()).unwrap()
        assert status.memory_count == acknowledged and not status.problems, status
    else:
        assert all(isinstance(read, Success) or "the disk is full" in read.failure().message for read in reads)
    _grow(small_disk)  # space freed: writes work again, without restarting anything
    dispatch(service, CreateMemory(content="written once there is room again")).unwrap()
    assert len(dispatch(service, ListMemories(limit=1000)).unwrap().memories) == acknowledged + 1  # type: ignore[attr-defined]
    dispatch(service, ReindexStore()).unwrap()
    assert dispatch(service, StoreStatus()).unwrap().memory_count == acknowledged + 1


def test_a_failed_keyword_write_leaves_no_lock(small_disk: Path) -> None:
    path = small_disk / "keywords.sqlite3"
    index = SqliteKeywordIndex(path)
    index.upsert("default", [KeywordEntry("first", "first entry", "t")]).unwrap()
    _fill(small_disk)
    failed = index.upsert("default", [KeywordEntry(f"id-{n}", "words " * 2000, "t") for n in range(50)])
    assert not isinstance(failed, Success) and "the disk is full" in failed.failure().message
    _grow(small_disk)
    other = SqliteKeywordIndex(path)  # another process's connection: it would wait for a lock left held
    other._connect().execute("PRAGMA busy_timeout = 1000")
    other.upsert("default", [KeywordEntry("second", "second entry", "t")]).unwrap()
    index.upsert("default", [KeywordEntry("third", "third entry", "t")]).unwrap()
    assert index.count("default").unwrap() == 3
