"""How far a node's local side index has replayed each store's change feed: a small table in that index's own file."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from agent_memory.adapters.shared.private import private_directory, private_file

TABLE = "feed_marks"


class FeedMarks:
    """The seq of the last change record applied, per store, kept in the SQLite file of the index it describes:
    a file wiped or set aside (damaged) takes its marks with it, so the node replays the feed from the start.

    -1 stands for nothing applied yet. A read never creates the file; a failure is raised as `sqlite3.Error` or
    `OSError` (the feed turns them into typed failures)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def _stat(self) -> tuple[int, int] | None:
        try:
            found = self.path.stat()
        except FileNotFoundError:
            return None
        return (found.st_dev, found.st_ino)

    def _open(self, *, create: bool) -> sqlite3.Connection | None:
        """The connection, opened again when the file was replaced, removed or set aside since."""
        identity = self._stat()
        if self._connection is not None and identity == self._identity:
            return self._connection
        self.close()
        if identity is None and not create:
            return None
        if identity is not None and not create and not os.access(self.path.parent, os.W_OK):
            # a disk that refuses writes: read the marks as they stand (immutable: SQLite makes no journal files)
            uri = f"file:{self.path}?mode=ro&immutable=1"
            connection = sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False, isolation_level=None)
            self._connection, self._identity = connection, identity
            return connection
        private_file(private_directory(self.path.parent) / self.path.name)
        connection = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (store TEXT PRIMARY KEY, seq INTEGER NOT NULL)")
        self._connection, self._identity = connection, self._stat()
        return connection

    def get(self, store: str) -> int:
        with self._lock:
            connection = self._open(create=False)
            if (
                connection is None
                or not connection.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
                ).fetchone()
            ):
                return -1
            row = connection.execute(f"SELECT seq FROM {TABLE} WHERE store = ?", (store,)).fetchone()
            return -1 if row is None else int(row[0])

    def set(self, store: str, seq: int) -> None:
        with self._lock:
            connection = self._open(create=True)
            if connection is None:  # create=True always opens
                return
            connection.execute(
                f"INSERT INTO {TABLE} (store, seq) VALUES (?, ?) ON CONFLICT(store) DO UPDATE SET seq = excluded.seq",
                (store, seq),
            )

    def close(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sqlite3.Error):
                self._connection.close()
        self._connection, self._identity = None, None
