"""The BatchJournal contract on the in-process journal and the journal files, plus what only files can do."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure

from agent_memory.adapters.batch_journal import FileBatchJournal
from agent_memory.adapters.in_memory import KillableJournal
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import BatchJournal
from tests.contract.batch_journal_contract import BATCH, BatchJournalContract

ROOT = Path(__file__).resolve().parents[2]


def _writer_died(journal: BatchJournal) -> None:
    assert isinstance(journal, KillableJournal)
    journal.writer_died()


def _closed(journal: BatchJournal) -> None:
    """What a killed process leaves: its files, no flock (its descriptors closed by the kernel)."""
    assert isinstance(journal, FileBatchJournal)
    for batch in list(journal._held):
        journal._let_go(batch)


class TestKillableJournal(BatchJournalContract):
    crash = staticmethod(_writer_died)

    @pytest.fixture
    def journal(self) -> BatchJournal:
        return KillableJournal()

    @pytest.fixture
    def another(self, journal: BatchJournal) -> BatchJournal:
        return journal


class TestFileBatchJournal(BatchJournalContract):
    crash = staticmethod(_closed)

    @pytest.fixture
    def journal(self, tmp_path: Path) -> BatchJournal:
        return FileBatchJournal(tmp_path / "journals")

    @pytest.fixture
    def another(self, tmp_path: Path) -> BatchJournal:
        return FileBatchJournal(tmp_path / "journals")  # its own descriptors: flock tells it what runs


KILLED = """
import os, sys
from agent_memory.adapters.batch_journal import FileBatchJournal
from tests.contract.batch_journal_contract import BATCH
FileBatchJournal(__import__("pathlib").Path(sys.argv[1])).begin(BATCH).unwrap()
os.kill(os.getpid(), 9)
"""


def test_a_batch_of_a_killed_process_is_interrupted_and_its_file_private(tmp_path: Path) -> None:
    folder = tmp_path / "journals"
    killed = subprocess.run([sys.executable, "-c", KILLED, str(folder)], cwd=ROOT, check=False, timeout=60)
    assert killed.returncode == -9
    (found,) = FileBatchJournal(folder).interrupted("default").unwrap()
    assert (found.created, found.replaced) == (BATCH.created, BATCH.replaced)
    (record,) = folder.iterdir()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_looking_for_interrupted_batches_creates_nothing(tmp_path: Path) -> None:
    assert FileBatchJournal(tmp_path / "journals").interrupted("default").unwrap() == ()
    assert list(tmp_path.iterdir()) == []


def test_a_journal_whose_caller_left_refuses_to_commit_and_keeps_the_batch(tmp_path: Path) -> None:
    journal = FileBatchJournal(tmp_path, still_wanted=lambda: False)
    begun = journal.begin(BATCH).unwrap()
    refused = journal.commit(begun)
    assert isinstance(refused, Failure) and refused.failure().code is ErrorCode.STORAGE_ERROR
    journal.release(begun).unwrap()
    assert FileBatchJournal(tmp_path).interrupted("default").unwrap() == (begun,)


def test_an_unreadable_journal_file_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "junk.batch.json").write_text("{not json")
    assert FileBatchJournal(tmp_path).interrupted("default").unwrap() == ()


def test_an_unwritable_journal_folder_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    error = FileBatchJournal(tmp_path / "file" / "journals").begin(BATCH).failure()
    assert error.code is ErrorCode.STORAGE_ERROR and "record the batch" in error.message
