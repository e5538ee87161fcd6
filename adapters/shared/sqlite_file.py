"""What the SQLite side indexes (keywords, long memories' parts) share about their file: is it damaged, set it aside."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def is_damaged(path: Path) -> bool:
    """Whether the file itself is broken (not merely locked or unwritable)."""
    try:
        probe = sqlite3.connect(path, timeout=5)
        try:
            return bool(probe.execute("PRAGMA quick_check").fetchone()[0] != "ok")
        finally:
            probe.close()
    except sqlite3.OperationalError:
        return False  # locked, or the folder is unusable: not a damaged file
    except sqlite3.DatabaseError:
        return True  # "file is not a database", "database disk image is malformed"


def set_aside(path: Path) -> None:
    """Rename a damaged file and its journal files to `<name>.damaged`, kept for inspection, so a new one can start."""
    for suffix in ("", "-wal", "-shm"):
        damaged = path.with_name(path.name + suffix)
        if damaged.exists():
            damaged.replace(damaged.with_name(damaged.name + ".damaged"))
