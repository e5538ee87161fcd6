"""Taking a write that failed half-way out of embedded Chroma's write log, so that it is never applied.

Chroma logs a write (chroma.sqlite3's `embeddings_queue`) before it applies it to the collection's segments. On a
full disk the log row can land and the applying fail: the write is then applied once there is room, although it
was answered as failed, and every read meanwhile fails trying to apply it. The data directory's lock is held
throughout (adapters.chroma.session), so the rows after the log's position before the write are that write's.
Taking it back moves them to a topic no collection reads: the rows keep their sequence numbers (deleting them
would let the next write reuse a number a vector index may have seen), and the update rewrites rows in place,
which a full disk usually still allows. This knows Chroma's SQLite layout of the 0.5-1.x series, as
adapters.chroma.salvage does; anything else it meets leaves the write where it is (False).
"""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3

DATABASE = "chroma.sqlite3"
TAKEN_BACK = "agent-memory:taken-back"  # the topic of log rows that no collection reads


def log_position(directory: pathlib.Path) -> int | None:
    """The last sequence number in the write log (0 when empty); None when it cannot be read."""
    database = directory / DATABASE
    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as connection:
            last = connection.execute("SELECT max(seq_id) FROM embeddings_queue").fetchone()[0]
    except sqlite3.Error:
        return None
    return int(last or 0)


def take_back(directory: pathlib.Path, since: int) -> bool:
    """Move the log rows after `since` out of every collection's reach; False when some were applied already (the
    write is then partly in place) or the database refuses the update."""
    try:
        with contextlib.closing(sqlite3.connect(directory / DATABASE, timeout=5)) as connection:
            applied = connection.execute("SELECT max(seq_id) FROM max_seq_id").fetchone()[0]
            if applied is not None and int(applied) > since:
                return False
            with connection:
                connection.execute("UPDATE embeddings_queue SET topic = ? WHERE seq_id > ?", (TAKEN_BACK, since))
    except sqlite3.Error:
        return False
    return True
