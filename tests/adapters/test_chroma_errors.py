"""Chroma's errors name the cause a user can act on: a full disk, a read-only folder, permissions."""

from __future__ import annotations

import errno
import sqlite3

import pytest
from chromadb.errors import ChromaError

from agent_memory.adapters.chroma.boundary import Boundary, storage_error
from agent_memory.adapters.shared.disk import disk_hint


@pytest.mark.parametrize(
    ("cause", "words"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
        (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
        (OSError(errno.EROFS, "Read-only file system"), "read-only"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
        (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
    ],
)
def test_disk_causes_are_named(cause: BaseException, words: str) -> None:
    assert words in disk_hint(cause)
    assert words in storage_error("write memories", cause).message
    assert words in Boundary("/data/chroma", server=False).unavailable(cause).message


def test_other_causes_add_nothing() -> None:
    assert disk_hint(ValueError("bad where clause")) == ""
    assert storage_error("query", ValueError("x")).message == "ChromaDB failed to query."


def test_a_server_failure_says_what_the_server_answered() -> None:
    failure = Boundary("db.example:8000", server=True).failed("read memories", ChromaError("Missing field: [segment]"))
    assert failure.message == (
        "ChromaDB failed to read memories: the server at db.example:8000 answered: Missing field: [segment]"
    )
