"""Private by default: folders the data lives in are 0700 and files 0600 for their owner, whatever the umask."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
OWNER_ONLY = 0o077  # the umask bits that keep group and others out

_UMASK_LOCK = threading.Lock()
_depth = 0
_saved = 0


def private_directory(path: Path) -> Path:
    """`path` as a folder, every missing level made 0700 (`mkdir -p` would make the parents by the umask).

    An existing folder is left as it is (a data directory a user opened to a group stays so; `status` says so)."""
    missing: list[Path] = []
    current = path
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, PRIVATE_DIR)
        except FileExistsError:
            if not folder.is_dir():
                raise
    return path


def private_file(path: Path) -> Path:
    """Make `path` an (empty, 0600) file if there is none, so a library that opens it keeps that mode.

    SQLite gives its journal and WAL files the database file's mode, so one private file keeps them all private."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE)
    except FileExistsError:
        return path
    os.close(descriptor)
    return path


@contextmanager
def owner_only_files() -> Iterator[None]:
    """Files and folders made inside (by this code or a library) get no group or other bits.

    The umask is per process: this narrows it (never widens it) while any caller is inside, and restores it when
    the last one leaves. Libraries that write in their own threads while a call runs are covered too."""
    global _depth, _saved
    with _UMASK_LOCK:
        if _depth == 0:
            _saved = os.umask(OWNER_ONLY)
            os.umask(_saved | OWNER_ONLY)
        _depth += 1
    try:
        yield
    finally:
        with _UMASK_LOCK:
            _depth -= 1
            if _depth == 0:
                os.umask(_saved)


def keep_owner_only() -> None:
    """For a process of ours that lives to serve the data (the memory server, MCP, REST): owner-only from now on."""
    os.umask(os.umask(OWNER_ONLY) | OWNER_ONLY)


def exposed_paths(directory: Path, *, limit: int = 5) -> list[Path]:
    """Up to `limit` paths under `directory` through which group or others can read memory data: a file they may
    read or write, or a folder below `directory` they may list (its names are memory paths), reached through
    folders they may enter (symlinks not followed). `directory` itself may be the user's own 0755 folder: what it
    lists is the product's own file names, no memory data."""
    found: list[Path] = []
    try:
        if directory.stat().st_mode & 0o011 == 0:
            return found  # nobody but the owner can enter it: whatever is inside is out of reach
    except OSError:
        return found
    for root, folders, files in os.walk(directory):
        for path in (Path(root) / name for name in [*files, *folders]):
            if path.is_symlink():
                continue
            try:
                mode = path.stat().st_mode
            except OSError:
                continue
            if mode & (0o044 if path.is_dir() else 0o066) and path not in found:
                found.append(path)
                if len(found) >= limit:
                    return found
        # a folder others may not enter keeps whatever is below it out of their reach
        folders[:] = [name for name in folders if _enterable(Path(root) / name)]
    return found


def _enterable(folder: Path) -> bool:
    try:
        return not folder.is_symlink() and bool(folder.stat().st_mode & 0o011)
    except OSError:
        return False
