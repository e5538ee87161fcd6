"""A memory file as read: its bytes and version (a stamp), read without following a link or blocking on a pipe, and
what a walk of a store's directory yields (a Record per memory file, a Folder per directory)."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from agent_memory.adapters.files.layout import Parts
from agent_memory.domain.model import Memory

Stamp = tuple[int, int, int]  # a file version as (inode, size, modification time in ns): a rename or an edit changes it


def raise_it(error: OSError) -> None:
    raise error


def read_bytes(path: Path) -> tuple[bytes, Stamp] | None:
    """The file's bytes and version, without following a symbolic link; None when there is no such file.

    Opened without blocking (a named pipe called `*.md` would otherwise wait for a writer, hanging every read of
    the store) and read only when it is a regular file: anything else is an OSError, reported like an unreadable
    file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic link: not part of the store
            return None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())  # before reading: an edit during the read makes the stamp stale, not wrong
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a named pipe, socket or device)", str(path))
        return handle.read(), (status.st_ino, status.st_size, status.st_mtime_ns)


def stamp_of(place: Path) -> Stamp | None:
    try:
        status = place.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


@frozen
class Record:
    """One memory file as read: the memory, its unknown keys, where it lies, and its text."""

    memory: Memory
    extra: Mapping[str, object]
    parts: Parts
    text: str
    stamp: Stamp | None = None
    digest: str | None = None  # of the bytes it was read from (None for a file this process wrote)


@frozen
class Folder:
    """One directory of a walk: where it is, whether it was empty, and its regular files."""

    parts: Parts
    empty: bool
    files: tuple[str, ...]
