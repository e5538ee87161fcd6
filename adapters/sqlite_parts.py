"""The PartVectors adapter: long memories' later parts as float32 rows in one SQLite file, ranked by brute force."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.private import private_directory, private_file
from agent_memory.adapters.shared.sqlite_file import is_damaged, set_aside
from agent_memory.adapters.token_windows import PARTS_SCHEME
from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from agent_memory.domain.ports import Vector

T = TypeVar("T")
ID_BATCH = 500  # ids per `IN (…)` lookup, well under SQLite's bound-parameter limit


def _table(store: str) -> str:
    """The store's table of parts cut by this PARTS_SCHEME (scheme 1's was "parts_<store>", later ones are
    "parts<scheme>_<store>"): parts cut another way are in another table, so no memory counts as having parts until
    `memory reindex` cuts them again (status warns meanwhile), and a rebuild drops the older tables."""
    name = store.replace("-", "_")
    return f"parts{PARTS_SCHEME}_{name}" if PARTS_SCHEME > 1 else f"parts_{name}"


def _older_tables(store: str) -> list[str]:
    name = store.replace("-", "_")
    return [f"parts_{name}", *(f"parts{scheme}_{name}" for scheme in range(2, PARTS_SCHEME))]


def _blob(vector: Vector) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


class SqlitePartVectors:
    """PartVectors over one SQLite file: per store a table of (memory id, part number, float32 vector).

    Long memories are few, so a search reads a store's parts and ranks them with one matrix product (numpy):
    no file is read for a store that has none, and a write of short memories only looks up whether they had any.
    A search keeps a store's parts in memory until a write (`PRAGMA data_version` tells another process's): with
    1,700 parts (100 notes of 1,500 words) `nearest` took 1 ms, with 17,000 8 ms alone and 39 ms on two cores
    at load average 7 (bench/long_memories.py).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._ready: set[str] = set()
        self._held: dict[str, _Rows] = {}  # per table: its parts in memory (data_version says when another wrote)

    # --- plumbing ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.path.is_file() and not os.access(self.path.parent, os.W_OK):
                # a disk that refuses writes: the index as it stands (immutable: no journal files), so searches work
                uri = f"file:{self.path}?mode=ro&immutable=1"
                self._connection = sqlite3.connect(
                    uri, uri=True, timeout=60, check_same_thread=False, isolation_level=None
                )
                return self._connection
            private_file(private_directory(self.path.parent) / self.path.name)
            connection = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            self._connection = connection
        return self._connection

    def _ensure(self, connection: sqlite3.Connection, store: str) -> str:
        table = _table(store)
        if table not in self._ready:
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (id TEXT NOT NULL, part INTEGER NOT NULL, vector BLOB NOT NULL, "
                "PRIMARY KEY (id, part))"
            )
            self._ready.add(table)
        return table

    @staticmethod
    def _readable(connection: sqlite3.Connection, store: str) -> str | None:
        """The store's table when it exists (a read creates nothing: on a read-only disk it could not)."""
        table = _table(store)
        found = connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        return table if found else None

    def _run(self, doing: str, work: Callable[[sqlite3.Connection], T], *, write: bool) -> Result[T, DomainError]:
        try:
            with self._lock:
                if not write and self._connection is None and not self.path.exists():
                    # no file: no long memory was written (also on a disk that refuses writes), nothing is made
                    empty = sqlite3.connect(":memory:", isolation_level=None)
                    try:
                        return Success(work(empty))
                    finally:
                        empty.close()
                connection = self._connect()
                if not write:
                    return Success(work(connection))
                connection.execute("BEGIN IMMEDIATE")
                try:
                    self._held.clear()  # this connection's own writes leave data_version as it is
                    result = work(connection)
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:  # a failed write changes nothing and holds no lock
                        connection.execute("ROLLBACK")
                    raise
                return Success(result)
        except (sqlite3.Error, OSError) as error:
            hint = disk_hint(error, self.path.parent)
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The index of long memories' parts at {self.path} failed while {doing}{hint}"
                    + ("." if hint else "; `memory reindex` rebuilds it."),
                    cause=str(error),
                )
            )

    @staticmethod
    def _having(connection: sqlite3.Connection, table: str, ids: Sequence[str]) -> set[str]:
        """Which of the ids have parts (one indexed lookup per ID_BATCH ids)."""
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), ID_BATCH):
            batch = unique[start : start + ID_BATCH]
            marks = ",".join("?" * len(batch))
            rows = connection.execute(f"SELECT DISTINCT id FROM {table} WHERE id IN ({marks})", batch).fetchall()
            found.update(str(row[0]) for row in rows)
        return found

    def _stale(self, connection: sqlite3.Connection, store: str, ids: Sequence[str]) -> set[str]:
        table = self._readable(connection, store)
        return set() if table is None else self._having(connection, table, ids)

    @staticmethod
    def _write(connection: sqlite3.Connection, table: str, parts: Mapping[str, Sequence[Vector]]) -> None:
        for memory_id, vectors in parts.items():
            connection.execute(f"DELETE FROM {table} WHERE id = ?", (memory_id,))
            connection.executemany(
                f"INSERT INTO {table} (id, part, vector) VALUES (?, ?, ?)",
                [(memory_id, number, _blob(vector)) for number, vector in enumerate(vectors, start=1)],
            )

    def _scores(
        self, store: str, embedding: Vector, ids: Sequence[str] | None
    ) -> Result[dict[str, float], DomainError]:
        """The best part's similarity per memory id that has parts (only among `ids` when given)."""

        dimension = len(embedding)

        def read(connection: sqlite3.Connection) -> dict[str, float]:
            table = self._readable(connection, store)
            if table is None:
                return {}
            if ids is None:  # a whole store's parts: read once, again only after a write (this process's or another's)
                version = int(connection.execute("PRAGMA data_version").fetchone()[0])
                held = self._held.get(table)
                if held is None or held.version != version or held.matrix.shape[1] != dimension:
                    every = connection.execute(f"SELECT id, vector FROM {table} ORDER BY id, part").fetchall()
                    held = _Rows.of(version, every, dimension)
                    if connection is self._connection:
                        self._held[table] = held
                return held.best(embedding)
            return _Rows.of(0, _parts_of(connection, table, "id, vector", ids), dimension).best(embedding)

        return self._run("searching", read, write=False)

    # --- the port ---------------------------------------------------------------------------

    def put(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        longs = {i: v for i, v in parts.items() if v}
        shorts = [i for i, v in parts.items() if not v]
        if not longs:  # short memories: a lookup, and a write only when one of them had parts before
            stale = self._run("looking up", lambda c: self._stale(c, store, shorts), write=False)
            return stale.bind(lambda found: self._delete(store, sorted(found)) if found else Success(None))

        def write(connection: sqlite3.Connection) -> None:
            self._write(connection, self._ensure(connection, store), parts)

        return self._run("indexing", write, write=True)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        """Forget ids' parts: a lookup, and a write only when one of them has parts (most memories have none)."""
        if not ids:
            return Success(None)
        stale = self._run("looking up", lambda c: self._stale(c, store, ids), write=False)
        return stale.bind(lambda found: self._delete(store, sorted(found)) if found else Success(None))

    def holding(self, store: str, ids: Sequence[str]) -> Result[set[str], DomainError]:
        """Which of the ids have parts here (a lookup that creates nothing)."""
        if not ids:
            return Success(set())
        return self._run("looking up", lambda c: self._stale(c, store, ids), write=False)

    def _delete(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        def delete(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            connection.executemany(f"DELETE FROM {table} WHERE id = ?", [(i,) for i in ids])

        return self._run("removing", delete, write=True)

    def rebuild(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        def replace(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            for older in _older_tables(store):  # parts cut by an earlier scheme: cut again below
                connection.execute(f"DROP TABLE IF EXISTS {older}")
            connection.execute(f"DELETE FROM {table}")
            self._write(connection, table, {i: v for i, v in parts.items() if v})

        def afresh(error: DomainError) -> Result[None, DomainError]:
            if not self._damaged():
                return Failure(error)
            self._set_aside()  # a damaged file cannot be rebuilt in place: kept aside for inspection, a new one made
            return self._run("rebuilding", replace, write=True)

        return self._run("rebuilding", replace, write=True).lash(afresh)

    def _damaged(self) -> bool:
        return is_damaged(self.path)

    def _set_aside(self) -> None:
        with self._lock:
            if self._connection is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._connection.close()
                self._connection = None
            self._ready.clear()
            self._held.clear()
            set_aside(self.path)

    def nearest(self, store: str, embedding: Vector, limit: int) -> Result[list[tuple[str, float]], DomainError]:
        return self._scores(store, embedding, None).map(
            lambda best: sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]
        )

    def similarities(self, store: str, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        if not ids:
            return Success({})
        return self._scores(store, embedding, ids)

    def nearest_parts(
        self, store: str, embedding: Vector, ids: Sequence[str]
    ) -> Result[dict[str, tuple[int, float]], DomainError]:
        """Per given id that has parts, its nearest part's number and similarity (a page's hits: read by id)."""
        if not ids:
            return Success({})

        def read(connection: sqlite3.Connection) -> dict[str, tuple[int, float]]:
            table = self._readable(connection, store)
            if table is None:
                return {}
            return _nearest_of(_parts_of(connection, table, "id, part, vector", ids), embedding)

        return self._run("searching", read, write=False)


def _parts_of(connection: sqlite3.Connection, table: str, columns: str, ids: Sequence[str]) -> list[Any]:
    """The `columns` of the parts of these ids (each id once), ordered by id and part, read ID_BATCH ids a query."""
    rows: list[Any] = []
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), ID_BATCH):
        batch = unique[start : start + ID_BATCH]
        marks = ",".join("?" * len(batch))
        rows += connection.execute(
            f"SELECT {columns} FROM {table} WHERE id IN ({marks}) ORDER BY id, part", batch
        ).fetchall()
    return rows


def _nearest_of(rows: Sequence[tuple[str, int, bytes]], embedding: Vector) -> dict[str, tuple[int, float]]:
    """Each memory's nearest part among the rows (its number, 1 − cosine distance); rows of another width skipped."""
    import numpy as np

    query = np.asarray(embedding, dtype=np.float32)
    kept = [(str(i), int(number), blob) for i, number, blob in rows if len(blob) == query.shape[0] * 4]
    if not kept:
        return {}
    matrix = np.frombuffer(b"".join(blob for _, _, blob in kept), dtype=np.float32).reshape(len(kept), -1)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * (float(np.sqrt(query @ query)) or 1.0)
    scores = (np.einsum("ij,j->i", matrix, query) / np.clip(norms, 1e-12, None)).tolist()
    found: dict[str, tuple[int, float]] = {}
    for (memory_id, number, _), score in zip(kept, scores, strict=True):
        if memory_id not in found or score > found[memory_id][1]:
            found[memory_id] = (number, float(score))
    return found


@frozen
class _Rows:
    """Parts read into memory, grouped by memory (rows ordered by id): each memory's id, where its rows start, and
    the unit rows (float32), as of one `data_version`."""

    version: int
    ids: tuple[str, ...]
    starts: npt.NDArray[np.intp]
    matrix: npt.NDArray[np.float32]

    @classmethod
    def of(cls, version: int, rows: Sequence[tuple[str, bytes]], dimension: int) -> _Rows:
        import numpy as np

        kept = [(str(i), blob) for i, blob in rows if len(blob) == dimension * 4]  # another width: skipped
        matrix = np.frombuffer(b"".join(blob for _, blob in kept), dtype=np.float32).reshape(len(kept), dimension)
        # einsum, not `@` (BLAS): a matrix-vector product through BLAS took 15 ms for 1,700 rows on two busy cores
        # (its thread pool waits for a core), einsum's own loop 0.1 ms
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        firsts = [at for at, (memory_id, _) in enumerate(kept) if at == 0 or kept[at - 1][0] != memory_id]
        return cls(
            version,
            tuple(kept[at][0] for at in firsts),
            np.asarray(firsts, dtype=np.intp),
            matrix / np.clip(norms, 1e-12, None)[:, None],
        )

    def best(self, embedding: Vector) -> dict[str, float]:
        """1 − cosine distance of the query to each memory's nearest part."""
        import numpy as np

        query = np.asarray(embedding, dtype=np.float32)
        if not self.ids or query.shape[0] != self.matrix.shape[1]:
            return {}
        scores = np.einsum("ij,j->i", self.matrix, query) / (float(np.sqrt(query @ query)) or 1.0)
        return dict(zip(self.ids, np.maximum.reduceat(scores, self.starts).tolist(), strict=True))
