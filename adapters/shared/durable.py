"""Files written whole: a temporary file beside the target, fsynced, renamed onto it; directories fsynced."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

TEMP_MARKER = ".tmp-"  # temporaries are `.<target name>.tmp-<random>`: hidden, and recognisable after a crash


def temporary_prefix(target: Path) -> str:
    """The name every temporary of `target` starts with."""
    return f".{target.name}{TEMP_MARKER}"


def write_atomically(target: Path, data: bytes) -> None:
    """Replace `target` with `data` so that a reader or a crash sees the old contents or the new, never a part.

    The temporary is flushed and fsynced before the rename; a rewritten file keeps its permissions (a new one
    is private, 0600). The rename is durable once the directory is fsynced (`fsync_directory`), which callers
    writing several files do once at the end. OSError propagates; no temporary is left behind then.
    """
    mode = _mode_of(target)
    descriptor, temporary = tempfile.mkstemp(prefix=temporary_prefix(target), dir=target.parent)
    renamed = False
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        renamed = True
    finally:
        if not renamed:
            Path(temporary).unlink(missing_ok=True)


def fsync_directory(directory: Path) -> None:
    """Make the renames and removals in `directory` durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _mode_of(target: Path) -> int | None:
    """An existing regular file's permissions; None (a new file: 0600) when there is none, or a symlink or other
    non-file sits there: a link's own mode is 0777 and says nothing, and the link is replaced, never followed."""
    try:
        status = target.lstat()
    except FileNotFoundError:
        return None
    return stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else None
