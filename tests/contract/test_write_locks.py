"""The WriteLocks contract on the in-process locks and the lock files, plus what only files can do."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.write_locks import FileWriteLocks
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.locks import ThreadWriteLocks
from agent_memory.domain.ports import WriteLocks
from tests.contract.write_locks_contract import WriteLocksContract


class TestThreadWriteLocks(WriteLocksContract):
    @pytest.fixture
    def locks(self) -> WriteLocks:
        return ThreadWriteLocks()


class TestFileWriteLocks(WriteLocksContract):
    @pytest.fixture
    def locks(self, tmp_path: Path) -> WriteLocks:
        return FileWriteLocks(tmp_path / "locks")


HOLDER = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1], thread_local=False):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_in_another_process(lock_file: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_file), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_another_process_holding_the_store_makes_a_writer_wait(tmp_path: Path) -> None:
    locks = FileWriteLocks(tmp_path)
    holder = _hold_in_another_process(tmp_path / "default.lock", 0.5)
    started = time.monotonic()
    assert locks.exclusive("default", lambda: Success(time.monotonic())).unwrap() >= started
    assert holder.wait(timeout=30) == 0  # the writer got the lock only once the holder had let go


def test_a_lock_not_had_in_time_is_a_busy_error(tmp_path: Path) -> None:
    locks = FileWriteLocks(tmp_path, timeout=0.2)
    holder = _hold_in_another_process(tmp_path / "default.lock", 5)
    try:
        error = locks.exclusive("default", lambda: Success("never")).failure()
    finally:
        holder.kill()
        holder.wait()
    assert error.code is ErrorCode.STORAGE_ERROR and "busy" in error.message


def test_an_unwritable_lock_directory_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    error = FileWriteLocks(tmp_path / "file" / "locks").exclusive("default", lambda: Success(1)).failure()
    assert error.code is ErrorCode.STORAGE_ERROR and "writable" in error.message


def test_an_invalid_store_name_never_becomes_a_lock_file(tmp_path: Path) -> None:
    failed = FileWriteLocks(tmp_path).exclusive("../escape", lambda: Success(1))
    assert failed.failure().code is ErrorCode.INVALID_INPUT
    assert list(tmp_path.iterdir()) == []
