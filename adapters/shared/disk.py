"""The disk under the embedded backends: what a failing write means to the user, and copies to read a read-only disk."""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

FULL_DISK = "the disk is full"  # in every message about a full disk, so callers can tell one
FULL = f": {FULL_DISK} (free some space, then try again)"
READ_ONLY = ": the disk or folder is read-only (make it writable, or point MEMORY_DATA_DIR elsewhere)"
NOT_WRITABLE = (
    ": permission denied, the folder is not writable by this user (check who owns the data directory, or point "
    "MEMORY_DATA_DIR elsewhere)"
)

_COPIES: list[Path] = []


FULL_BELOW = (
    1 << 20
)  # bytes free under which a write that failed for a reason the library words otherwise met a full disk


def disk_hint(cause: BaseException | str, where: Path | str | None = None) -> str:
    """': the disk is full …' and the like, when an error (or a library's message) says so; '' otherwise.

    With `where` (the data's folder), a full disk is named ("the disk is full at <where>"), also when the library's
    error hides the cause (Chroma's compactor says only that a request failed): the free space there tells.
    Shared by every backend, so a full or read-only disk reads the same whichever one is configured."""
    text = str(cause).lower()
    code = getattr(cause, "errno", None)
    if code == errno.ENOSPC or "no space left" in text or "disk is full" in text or nearly_full(where):
        return FULL if where is None else f": {FULL_DISK} at {where} (free some space, then try again)"
    if code == errno.EROFS or "read-only" in text or "readonly" in text:
        return READ_ONLY
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in text:
        return NOT_WRITABLE
    return ""


def nearly_full(where: Path | str | None) -> bool:
    """Whether the file system holding `where` (or its nearest existing parent) has almost no space left."""
    if where is None:
        return False
    folder = Path(where)
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return False
    return usage.free < FULL_BELOW


# A write to an embedded database (Chroma, Qdrant's local mode) first checks there is room for it and this much
# more: the database writes its own journal and log beside the data, the keyword index its share, and a write
# that fails after it began must still be able to take itself back. So a disk that fills up refuses the next
# write whole, before any of it is stored, instead of failing half-way (Chroma kept a failed write in its log
# and applied it later; Qdrant could not remove one the keyword index then refused).
WRITE_RESERVE = FULL_BELOW  # read at call time (tests lower it to reach the failure past the check)
STORED_COPIES = 6  # how many times a content's bytes land on disk: log, records, full-text indexes, with slack
RECORD_BYTES = 2048  # a record's fields, ids and index entries beside its content and vector
VECTOR_COPIES = 2  # a vector's float32s in the log (or the points table) and the vector index


def write_size(contents: Sequence[str], dimension: int | None) -> int:
    """An estimate, on the generous side, of the bytes a write of records with these contents and vectors puts on
    the disk: 8.1 KB for a memory of 500 characters at 384 dimensions, where embedded Chroma took 5.1 KB and the
    keyword index about 1.5 KB (measured 2026-11-27; a new collection's vector index adds about 4 MB once)."""
    per_record = RECORD_BYTES + VECTOR_COPIES * 4 * (dimension or 0)
    return sum(STORED_COPIES * len(content.encode("utf-8", "surrogatepass")) + per_record for content in contents)


RESERVE_FILE = ".agent-memory.reserve"  # room kept aside in an embedded database's folder, for taking a write back
RESERVE_BYTES = 512 * 1024


def keep_reserve(folder: Path | str) -> None:
    """Put RESERVE_BYTES aside in `folder` (a file of zeros, the owner's alone) when it is not there yet: called
    where a write has just been found room, so it never fills a disk. Best effort: a failure leaves none."""
    place = Path(folder) / RESERVE_FILE
    if place.exists() or not place.parent.is_dir():
        return
    try:
        descriptor = os.open(place, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(bytes(RESERVE_BYTES))
    except OSError:
        place.unlink(missing_ok=True)


def release_reserve(folder: Path | str) -> bool:
    """Give the folder's reserve back to the disk (for a write that takes another back, on a full disk): whether
    there was one. `keep_reserve` puts it aside again once there is room."""
    try:
        (Path(folder) / RESERVE_FILE).unlink()
    except OSError:
        return False
    return True


def no_room(where: Path | str, needed: int = 0) -> str:
    """': the disk is full at <where> …' when the file system there has less than `needed` + WRITE_RESERVE
    bytes free; '' when the write may go ahead (or the free space cannot be read)."""
    folder = Path(where)
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    if free >= needed + WRITE_RESERVE:
        return ""
    return f": {FULL_DISK} at {where} (free some space, then try again)"


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
    # the search mirrors' files (adapters.chroma.mirror_file) are read from the real directory: not copied
    ignored = shutil.ignore_patterns("*.lock", ".lock", ".agent-memory-mirrors")
    shutil.copytree(directory, target, symlinks=True, ignore=ignored)
    return target


def _remove_copies() -> None:
    for copy in _COPIES:
        shutil.rmtree(copy, ignore_errors=True)
