"""The disk under the embedded backends: what a failing write means to the user, and copies to read a read-only disk."""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import tempfile
from pathlib import Path

FULL = ": the disk is full (free some space, then try again)"
READ_ONLY = ": the disk or folder is read-only (make it writable, or point MEMORY_DATA_DIR elsewhere)"
NOT_WRITABLE = (
    ": permission denied, the folder is not writable by this user (check who owns the data directory, or point "
    "MEMORY_DATA_DIR elsewhere)"
)

_COPIES: list[Path] = []


def disk_hint(cause: BaseException | str) -> str:
    """': the disk is full …' and the like, when an error (or a library's message) says so; '' otherwise.

    Shared by every backend, so a full or read-only disk reads the same whichever one is configured."""
    text = str(cause).lower()
    code = getattr(cause, "errno", None)
    if code == errno.ENOSPC or "no space left" in text or "database or disk is full" in text:
        return FULL
    if code == errno.EROFS or "read-only" in text or "readonly" in text:
        return READ_ONLY
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in text:
        return NOT_WRITABLE
    return ""


def cannot_write(cause: BaseException | str) -> bool:
    """Whether an error means the disk refuses writes (read-only, or not writable by this user)."""
    return disk_hint(cause) in (READ_ONLY, NOT_WRITABLE)


def creatable(path: Path) -> bool:
    """Whether `path`, absent, could be made: its nearest existing ancestor is a folder this user may write.

    A reader of data not made yet answers as if empty only then; elsewhere it reaches the library, which says why
    the data cannot be there (a file in the way, a folder that refuses writes)."""
    current = path
    while not current.exists():
        if current.parent == current:
            return False
        current = current.parent
    return current != path and current.is_dir() and os.access(current, os.W_OK | os.X_OK)


def read_only_copy(directory: Path) -> Path:
    """A private copy of `directory` in the temporary folder, removed when the process exits.

    For libraries that must write to open their data (Chroma's and Qdrant's embedded modes create lock and
    journal files): on a read-only disk they read the copy. Nothing is ever written back."""
    copy = Path(tempfile.mkdtemp(prefix="agent-memory-read-only-"))
    if not _COPIES:
        atexit.register(_remove_copies)
    _COPIES.append(copy)
    target = copy / directory.name
    shutil.copytree(directory, target, symlinks=True, ignore=shutil.ignore_patterns("*.lock", ".lock"))
    return target


def _remove_copies() -> None:
    for copy in _COPIES:
        shutil.rmtree(copy, ignore_errors=True)
