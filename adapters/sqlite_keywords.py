"""The keyword side of hybrid search: SQLite FTS5 (bm25) per store, each memory beside its thread neighbours."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from returns.result import Failure, Result, Success

from agent_memory.adapters.shared.disk import creatable, disk_hint
from agent_memory.adapters.shared.private import private_directory, private_file
from agent_memory.adapters.shared.sqlite_file import is_damaged, set_aside
from agent_memory.adapters.shared.stall import stall_point
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.search.tokens import query_terms
from agent_memory.domain.thread_keys import SCOPE_JOIN, THREAD_JOIN, KeywordScope

T = TypeVar("T")
TOKENIZER = "porter unicode61 remove_diacritics 2"
NEIGHBOUR_WEIGHT = 0.5  # bm25 column weight of the previous and next memories' words (own words: 1.0)
ID_BATCH = 500  # ids per `IN (…)` lookup, well under SQLite's bound-parameter limit


def match_expression(query: str) -> str:
    """The FTS5 MATCH expression: every content word quoted (so no syntax can leak in), joined by OR."""
    terms = query_terms(query)
    return "{content prev next} : (" + " OR ".join(f'"{t}"' for t in terms) + ")" if terms else ""


def scope_glob(scope: KeywordScope) -> str:
    """A GLOB pattern every thread in the scope matches (`thread_in_scope`), with the labels' own wildcards
    taken literally; `*` stands for a label the scope leaves open, so a rare thread outside may match too."""
    labels = ("*" if label is None else "".join(f"[{c}]" if c in "*?[" else c for c in label) for label in scope)
    return "*" + THREAD_JOIN + SCOPE_JOIN + SCOPE_JOIN.join(labels) + SCOPE_JOIN + "*"


def _thread_conditions(thread_prefix: str | None, scope: KeywordScope | None) -> tuple[list[str], list[object]]:
    """The SQL conditions on the links row `l` (and their arguments) that keep a search to a prefix and scope."""
    where: list[str] = []
    arguments: list[object] = []
    if thread_prefix is not None:  # substr, not LIKE: labels may hold % and _
        under = thread_prefix + THREAD_JOIN
        where.append("(l.thread = ? OR substr(l.thread, 1, ?) = ?)")
        arguments += [thread_prefix, len(under), under]
    if scope is not None:  # a thread written before scopes were in the key holds no SCOPE_JOIN: kept
        where.append("(instr(l.thread, ?) = 0 OR l.thread GLOB ?)")
        arguments += [SCOPE_JOIN, scope_glob(scope)]
    return where, arguments


def _table(store: str) -> str:
    return "kw_" + store.replace("-", "_")


class SqliteKeywordIndex:
    """KeywordIndex over one SQLite file: per store an FTS5 table (content, prev, next) and a link table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._ready: set[str] = set()

    # --- plumbing ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            if self.path.is_file() and not os.access(self.path.parent, os.W_OK):
                self._connection = self._read_only()
                return self._connection
            private_file(private_directory(self.path.parent) / self.path.name)
            connection = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            self._connection = connection
        return self._connection

    def _roll_back(self, connection: sqlite3.Connection) -> None:
        """End a failed write's transaction; a connection that cannot even roll back is closed (which does)."""
        try:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
        except sqlite3.Error:
            connection.close()
            self._connection = None
            self._ready.clear()

    @staticmethod
    def _on_nothing(work: Callable[[sqlite3.Connection], T]) -> T:
        """A read's answer where there is no index file yet: what an empty index answers, in memory."""
        connection = sqlite3.connect(":memory:", isolation_level=None)
        try:
            return work(connection)
        finally:
            connection.close()

    def _read_only(self) -> sqlite3.Connection:
        """On a disk that refuses writes: the index as it stands (immutable: SQLite makes no journal files),
        so searches still work; any write through it fails as a read-only database."""
        uri = f"file:{self.path}?mode=ro&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False, isolation_level=None)

    def _ensure(self, connection: sqlite3.Connection, store: str) -> str:
        table = _table(store)
        if table not in self._ready or connection is not self._connection:
            connection.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5(content, prev, next, tokenize='{TOKENIZER}')"
            )
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {table}_links (id TEXT PRIMARY KEY, row INTEGER NOT NULL UNIQUE, "
                "thread TEXT NOT NULL, prev_id TEXT, next_id TEXT)"
            )
            connection.execute(f"CREATE INDEX IF NOT EXISTS {table}_thread ON {table}_links(thread, row)")
            if connection is self._connection:
                self._ready.add(table)
        return table

    def _run(self, doing: str, work: Callable[[sqlite3.Connection], T], *, write: bool) -> Result[T, DomainError]:
        try:
            with self._lock:
                if not write and self._connection is None and creatable(self.path):
                    return Success(self._on_nothing(work))  # a read creates nothing: no index is an empty one
                connection = self._connect()
                if not write:
                    return Success(work(connection))
                connection.execute("BEGIN IMMEDIATE")
                try:
                    result = work(connection)
                    connection.execute("COMMIT")
                except BaseException:
                    # a failed COMMIT (a full disk) leaves the transaction open, holding the index's write lock
                    # for every process: roll back, so a failed write changes nothing and leaves no lock
                    self._roll_back(connection)
                    raise
                return Success(result)
        except (sqlite3.Error, OSError) as error:  # OSError: the folder cannot be made (a file is in the way)
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The keyword index at {self.path} failed while {doing}{disk_hint(error, self.path.parent)}"
                    + ("." if disk_hint(error, self.path.parent) else "; `memory reindex` rebuilds it."),
                    cause=str(error),
                )
            )

    # --- rows -------------------------------------------------------------------------------

    @staticmethod
    def _text(connection: sqlite3.Connection, table: str, memory_id: str | None) -> str:
        if memory_id is None:
            return ""
        found = connection.execute(
            f"SELECT t.content FROM {table} AS t JOIN {table}_links AS l ON l.row = t.rowid WHERE l.id = ?",
            (memory_id,),
        ).fetchone()
        return str(found[0]) if found else ""

    @staticmethod
    def _set(connection: sqlite3.Connection, table: str, memory_id: str | None, column: str, value: str) -> None:
        if memory_id is not None:
            connection.execute(
                f"UPDATE {table} SET {column} = ? WHERE rowid = (SELECT row FROM {table}_links WHERE id = ?)",
                (value, memory_id),
            )

    def _append(self, connection: sqlite3.Connection, table: str, entry: KeywordEntry) -> None:
        tail = (
            None
            if entry.alone
            else connection.execute(
                f"SELECT id FROM {table}_links WHERE thread = ? ORDER BY row DESC LIMIT 1", (entry.thread,)
            ).fetchone()
        )
        tail_id = None if tail is None else str(tail[0])
        row = connection.execute(
            f"INSERT INTO {table}(content, prev, next) VALUES (?, ?, '')",
            (entry.text, self._text(connection, table, tail_id)),
        ).lastrowid
        connection.execute(
            f"INSERT INTO {table}_links(id, row, thread, prev_id, next_id) VALUES (?, ?, ?, ?, NULL)",
            (entry.id, row, entry.thread, tail_id),
        )
        if tail_id is not None:
            connection.execute(f"UPDATE {table}_links SET next_id = ? WHERE id = ?", (entry.id, tail_id))
            self._set(connection, table, tail_id, "next", entry.text)

    def _links(
        self, connection: sqlite3.Connection, table: str, memory_id: str
    ) -> tuple[str | None, str | None] | None:
        found = connection.execute(f"SELECT prev_id, next_id FROM {table}_links WHERE id = ?", (memory_id,)).fetchone()
        return None if found is None else (found[0], found[1])

    def _retext(self, connection: sqlite3.Connection, table: str, entry: KeywordEntry) -> None:
        links = self._links(connection, table, entry.id)
        if links is None:
            self._append(connection, table, entry)
            return
        self._set(connection, table, entry.id, "content", entry.text)
        self._set(connection, table, links[0], "next", entry.text)
        self._set(connection, table, links[1], "prev", entry.text)

    def _unlink(self, connection: sqlite3.Connection, table: str, memory_id: str) -> None:
        links = self._links(connection, table, memory_id)
        if links is None:
            return
        before, after = links
        if before is not None:
            connection.execute(f"UPDATE {table}_links SET next_id = ? WHERE id = ?", (after, before))
            self._set(connection, table, before, "next", self._text(connection, table, after))
        if after is not None:
            connection.execute(f"UPDATE {table}_links SET prev_id = ? WHERE id = ?", (before, after))
            self._set(connection, table, after, "prev", self._text(connection, table, before))
        connection.execute(
            f"DELETE FROM {table} WHERE rowid = (SELECT row FROM {table}_links WHERE id = ?)", (memory_id,)
        )
        connection.execute(f"DELETE FROM {table}_links WHERE id = ?", (memory_id,))

    def _written(self, connection: sqlite3.Connection, store: str, table: str, *, rebuilt: bool) -> None:
        """Called at the end of every write, inside its transaction: a subclass keeps a derived index in step."""

    # --- the port ---------------------------------------------------------------------------

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        stall_point("keywords")  # a test's SIGKILL lands here: a batch's memories stored, their words not yet

        def write(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            for entry in entries:
                self._retext(connection, table, entry)
            self._written(connection, store, table, rebuilt=False)

        return self._run("indexing", write, write=True)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        def delete(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            for memory_id in ids:
                self._unlink(connection, table, memory_id)
            self._written(connection, store, table, rebuilt=False)

        return self._run("removing", delete, write=True)

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        expression = match_expression(query)
        if not expression:
            return Success([])

        def find(connection: sqlite3.Connection) -> list[tuple[str, float]]:
            table = self._ensure(connection, store)
            weight = NEIGHBOUR_WEIGHT
            rank = f"bm25({table}, 1.0, {weight}, {weight})"
            where, arguments = _thread_conditions(thread_prefix, scope)
            if not where:  # rank first, then join only the best `limit` rows to their ids
                sql = (
                    f"SELECT l.id, hit.rank FROM (SELECT rowid, {rank} AS rank FROM {table} WHERE {table} MATCH ? "
                    f"ORDER BY rank LIMIT ?) AS hit JOIN {table}_links AS l ON l.row = hit.rowid ORDER BY hit.rank"
                )
            else:
                sql = (
                    f"SELECT l.id, {rank} AS rank FROM {table} JOIN {table}_links AS l ON l.row = {table}.rowid "
                    f"WHERE {table} MATCH ? AND {' AND '.join(where)} ORDER BY rank LIMIT ?"
                )
            rows = connection.execute(sql, (expression, *arguments, limit)).fetchall()
            if not rows or -rows[0][1] <= 0:
                return [(str(memory_id), 1.0) for memory_id, _ in rows]
            best = -float(rows[0][1])
            return [(str(memory_id), -float(rank) / best) for memory_id, rank in rows]

        return self._run("searching", find, write=False)

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]:
        def find(connection: sqlite3.Connection) -> dict[str, tuple[str | None, str | None]]:
            table = self._ensure(connection, store)
            found: dict[str, tuple[str | None, str | None]] = {}
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), ID_BATCH):
                batch = unique[start : start + ID_BATCH]
                marks = ",".join("?" * len(batch))
                rows = connection.execute(
                    f"SELECT id, prev_id, next_id FROM {table}_links WHERE id IN ({marks})", batch
                ).fetchall()
                found.update((str(i), (before, after)) for i, before, after in rows)
            return {memory_id: found[memory_id] for memory_id in ids if memory_id in found}

        return self._run("reading neighbours", find, write=False)

    def count(self, store: str) -> Result[int, DomainError]:
        def rows(connection: sqlite3.Connection) -> int:
            table = self._ensure(connection, store)
            return int(connection.execute(f"SELECT count(*) FROM {table}_links").fetchone()[0])

        return self._run("counting", rows, write=False)

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        def replace(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            connection.execute(f"DELETE FROM {table}")
            connection.execute(f"DELETE FROM {table}_links")
            for entry in entries:
                self._append(connection, table, entry)
            self._written(connection, store, table, rebuilt=True)

        def afresh(error: DomainError) -> Result[None, DomainError]:
            if not self._damaged():
                return Failure(error)
            # a damaged file cannot be rebuilt in place: keep it aside for inspection and start a new one
            self._set_aside()
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
            set_aside(self.path)
