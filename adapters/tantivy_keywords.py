"""The keyword side's ranking at top-k cost: a Tantivy index (block-max WAND) kept in step with the SQLite file.

The SQLite file (SqliteKeywordIndex) stays the record of every memory's words, thread and neighbours; beside it,
per store, a Tantivy index holds the same rows and answers `search` for its best `limit` hits without scoring every
match. A row's words are one field, its own words twice and each neighbour's once: FTS5's column weights (1, 0.5,
0.5) as term frequencies, so one term query per word and Tantivy's block-max WAND applies. Its thread's prefixes
and scope labels are terms of their own, the filters.

A write changes only SQLite, and lists the ids it changed in a table there, in its own transaction: a Tantivy commit
costs tens of milliseconds, so the next search pays one for every write before it, under the SQLite write lock
(past CATCH_UP_ROWS waiting rows, an import, the write commits them itself).
SQLite records the opstamp of each Tantivy commit; a search that finds Tantivy's meta.json at another one (a crash
between the two commits, an index from before this one existed, a deleted folder) rebuilds the Tantivy index from
the SQLite file. Where Tantivy cannot answer (a disk that refuses writes), the SQLite file's FTS5 ranking answers.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import tantivy
from returns.result import Result, Success

from agent_memory.adapters.shared.private import owner_only_files, private_directory
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.search.tokens import query_terms
from agent_memory.domain.thread_keys import THREAD_JOIN, KeywordScope, scope_labels

WORDS = "words"  # the analyzer: FTS5's `porter unicode61 remove_diacritics 2`, as Tantivy names its parts
UNSCOPED = "\x1f"  # the scope term of a thread written before scopes were in the key: every scope keeps it
CATCH_UP_ROWS = 5000  # rows waiting for Tantivy past which the write commits them (an import), not the next search
WRITER_HEAP = 15_000_000  # bytes; Tantivy's floor is 3 MB a thread, one thread writes
FAILURES = (ValueError, OSError, RuntimeError)  # what the bindings raise for a bad index, a missing file or a lock


def analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(64))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("words", tokenizer_name=WORDS, index_option="freq")
    builder.add_text_field("threads", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("scope", tokenizer_name="raw", index_option="basic")
    return builder.build()


def thread_prefixes(thread: str) -> list[str]:
    """Every `thread_prefix` whose search keeps this thread: itself, and each part before a THREAD_JOIN."""
    return [thread, *(thread[:at] for at in range(len(thread)) if thread.startswith(THREAD_JOIN, at))]


def scope_terms(thread: str) -> list[str]:
    labels = scope_labels(thread)
    return [UNSCOPED] if labels is None else [f"{at}:{label}" for at, label in enumerate(labels)]


class _Opened:
    """One store's Tantivy index as this process holds it, with the generation its searcher last saw."""

    def __init__(self, index: tantivy.Index, words: tantivy.TextAnalyzer) -> None:
        self.index = index
        self.words = words
        self.seen: int | None = None


class TantivyKeywordIndex(SqliteKeywordIndex):
    """KeywordIndex: SQLite keeps the rows, Tantivy ranks them (top-k); see the module docstring."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.folder = path.with_name(path.stem + "-topk")
        self._schema = schema()
        self._opened: dict[str, _Opened] = {}
        self._touched: set[str] = set()  # the ids the write under way changed (writes hold self._lock)

    # --- the generation: the opstamp of the last Tantivy commit, recorded in SQLite too --------

    @staticmethod
    def _sqlite_generation(connection: sqlite3.Connection, table: str) -> int:
        """0 for an empty store no write has numbered yet, -1 for rows written before this index existed (so
        Tantivy, at 0 or more, is rebuilt); a read never makes the table: the file may be read-only."""
        made = connection.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"{table}_generation",)).fetchone()
        found = None if made is None else connection.execute(f"SELECT generation FROM {table}_generation").fetchone()
        if found is not None:
            return int(found[0])
        return -1 if connection.execute(f"SELECT 1 FROM {table}_links LIMIT 1").fetchone() else 0

    def _tantivy_generation(self, store: str) -> int:
        """The opstamp of the store's last Tantivy commit, from its meta.json (Tantivy's atomic commit point)."""
        return int(json.loads((self.folder / store / "meta.json").read_text(encoding="utf-8"))["opstamp"])

    # --- the Tantivy side ---------------------------------------------------------------------

    def _open(self, store: str, *, create: bool) -> _Opened:
        opened = self._opened.get(store)
        if opened is None:
            folder = self.folder / store
            if create:
                private_directory(folder)
            elif not tantivy.Index.exists(str(folder)):
                raise FileNotFoundError(folder)
            with owner_only_files():  # what Tantivy writes (meta.json, its lock files) is the owner's alone
                index = tantivy.Index(self._schema, path=str(folder), reuse=True)
            words = analyzer()
            index.register_tokenizer(WORDS, words)
            opened = self._opened[store] = _Opened(index, words)
        return opened

    def _document(self, row: tuple[str, str, str, str, str]) -> tantivy.Document:
        memory_id, thread, content, before, after = row
        return tantivy.Document(
            id=memory_id,
            words=f"{content}\n{content}\n{before}\n{after}",  # FTS5's weights 1, 0.5, 0.5, doubled
            threads=thread_prefixes(thread),
            scope=scope_terms(thread),
        )

    def _rows(self, connection: sqlite3.Connection, table: str, ids: Sequence[str] | None) -> list[tuple[str, ...]]:
        sql = f"SELECT l.id, l.thread, t.content, t.prev, t.next FROM {table} AS t JOIN {table}_links AS l ON l.row = t.rowid"
        if ids is None:
            return connection.execute(sql).fetchall()
        rows: list[tuple[str, ...]] = []
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            rows += connection.execute(f"{sql} WHERE l.id IN ({','.join('?' * len(batch))})", batch).fetchall()
        return rows

    def _commit(self, opened: _Opened, connection: sqlite3.Connection, table: str, ids: Sequence[str] | None) -> int:
        writer = opened.index.writer(WRITER_HEAP, 1)
        try:
            if ids is None:
                writer.delete_all_documents()
            else:
                for memory_id in ids:
                    writer.delete_documents_by_term("id", memory_id)
            for row in self._rows(connection, table, ids):
                writer.add_document(self._document(row))  # type: ignore[arg-type]
            return int(writer.commit())
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()  # frees the writer's lock for the next write, whichever process

    def _write(self, connection: sqlite3.Connection, store: str, table: str, ids: Sequence[str] | None) -> None:
        """Put the given rows (None: all) as SQLite holds them now into Tantivy; SQLite records its opstamp."""
        if ids is not None and not ids:
            return  # nothing changed (an upsert of the same texts): no commit, no deleted copies in the counts
        opened = self._open(store, create=True)
        with owner_only_files():  # segments, merges and meta.json: the owner's alone, whatever the umask
            generation = self._commit(opened, connection, table, ids)
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table}_generation (generation INTEGER NOT NULL)")
        connection.execute(f"DELETE FROM {table}_generation")
        connection.execute(f"INSERT INTO {table}_generation(generation) VALUES (?)", (generation,))
        opened.index.reload()
        opened.seen = generation

    def _written(self, connection: sqlite3.Connection, store: str, table: str, *, rebuilt: bool) -> None:
        """A write's rows wait in SQLite for the next search to bring Tantivy up to date (a Tantivy commit costs
        tens of milliseconds: one per search after writes, not one per write), unless CATCH_UP_ROWS wait: an
        import commits them as it goes, so its first search does not index it all. A rebuild rebuilds both now."""
        touched, self._touched = self._touched, set()
        connection.execute(f"CREATE TABLE IF NOT EXISTS {table}_pending (id TEXT PRIMARY KEY)")
        if not rebuilt:
            connection.executemany(f"INSERT OR IGNORE INTO {table}_pending(id) VALUES (?)", [(i,) for i in touched])
            if connection.execute(f"SELECT count(*) FROM {table}_pending").fetchone()[0] >= CATCH_UP_ROWS:
                with contextlib.suppress(*FAILURES):  # Tantivy's trouble never fails a write: a search repairs it
                    self._apply_waiting(connection, store, table)
            return
        connection.execute(f"DELETE FROM {table}_pending")
        try:
            self._write(connection, store, table, None)
        except FAILURES as error:  # the SQLite transaction rolls back: the rebuild changes neither
            self._opened.pop(store, None)
            raise OSError(f"the top-k index failed: {error}") from error

    def _apply_waiting(self, connection: sqlite3.Connection, store: str, table: str) -> None:
        """Commit the rows that writes left waiting to Tantivy, or every row where the two are apart."""
        waiting = [str(r[0]) for r in connection.execute(f"SELECT id FROM {table}_pending").fetchall()]
        try:
            in_step = self._tantivy_generation(store) == self._sqlite_generation(connection, table)
        except FAILURES:  # no meta.json: a new index (or a lost one), made from every row
            in_step = False
        self._write(connection, store, table, waiting if in_step else None)
        connection.execute(f"DELETE FROM {table}_pending")

    @staticmethod
    def _waiting(connection: sqlite3.Connection, table: str) -> bool:
        """Whether writes wait for Tantivy (a read never makes the table: the file may be read-only)."""
        made = connection.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"{table}_pending",)).fetchone()
        return made is not None and connection.execute(f"SELECT 1 FROM {table}_pending LIMIT 1").fetchone() is not None

    # --- which rows a write changed: each id whose own, previous or next words moved ------------

    def _set(self, connection: sqlite3.Connection, table: str, memory_id: str | None, column: str, value: str) -> None:  # type: ignore[override]
        if memory_id is None:
            return
        held = connection.execute(
            f"SELECT {column} FROM {table} WHERE rowid = (SELECT row FROM {table}_links WHERE id = ?)", (memory_id,)
        ).fetchone()
        if (
            held is not None and held[0] != value
        ):  # an unchanged row stays as it is (no deleted copy in Tantivy's counts)
            super()._set(connection, table, memory_id, column, value)
            self._touched.add(memory_id)

    def _append(self, connection: sqlite3.Connection, table: str, entry: KeywordEntry) -> None:
        super()._append(connection, table, entry)
        self._touched.add(entry.id)

    def _unlink(self, connection: sqlite3.Connection, table: str, memory_id: str) -> None:
        super()._unlink(connection, table, memory_id)
        self._touched.add(memory_id)

    # --- search -------------------------------------------------------------------------------

    def _query(
        self, opened: _Opened, terms: list[str], thread_prefix: str | None, scope: KeywordScope | None
    ) -> tantivy.Query | None:
        tokens = list(dict.fromkeys(token for term in terms for token in opened.words.analyze(term)))
        if not tokens:
            return None
        words = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "words", token)) for token in tokens]
        )
        filters: list[tantivy.Query] = []
        if thread_prefix is not None:
            filters.append(tantivy.Query.term_query(self._schema, "threads", thread_prefix))
        if scope is not None and any(label is not None for label in scope):
            held = [
                (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "scope", f"{at}:{label}"))
                for at, label in enumerate(scope)
                if label is not None
            ]
            unscoped = tantivy.Query.term_query(self._schema, "scope", UNSCOPED)
            filters.append(
                tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, tantivy.Query.boolean_query(held)), (tantivy.Occur.Should, unscoped)]
                )
            )
        if not filters:
            return words
        kept = [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, words), *kept])

    def _ranked(
        self, connection: sqlite3.Connection, store: str, terms: list[str], limit: int, **where: object
    ) -> list[tuple[str, float]]:
        table = self._ensure(connection, store)
        generation = self._sqlite_generation(connection, table) if connection is self._connection else 0
        if self._waiting(connection, table):
            raise LookupError(store)  # writes wait: the caller brings Tantivy up to date, then asks again
        opened = self._open(store, create=connection is self._connection)
        if opened.seen != generation:
            opened.index.reload()
            if self._tantivy_generation(store) != generation:
                raise LookupError(store)  # apart: the caller rebuilds Tantivy from SQLite, then asks again
            opened.seen = generation
        query = self._query(opened, terms, where.get("thread_prefix"), where.get("scope"))  # type: ignore[arg-type]
        if query is None:
            return []
        searcher = opened.index.searcher()
        hits = searcher.search(query, limit, count=False).hits
        if not hits:
            return []
        best = float(hits[0][0])
        found = [(str(searcher.doc(address)["id"][0]), float(score)) for score, address in hits]
        return [(memory_id, score / best if best > 0 else 1.0) for memory_id, score in found]

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        terms = query_terms(query)
        if not terms:
            return Success([])

        def find(connection: sqlite3.Connection) -> list[tuple[str, float]] | None:
            try:
                return self._ranked(connection, store, terms, limit, thread_prefix=thread_prefix, scope=scope)
            except LookupError:  # the two indexes are apart
                return None
            except FAILURES:  # no Tantivy index here (a read-only disk, an empty data folder) or a broken one
                self._opened.pop(store, None)
                return None

        for attempt in range(2):
            ranked = self._run("searching", find, write=False)
            if not isinstance(ranked, Success) or ranked.unwrap() is not None:
                return ranked  # type: ignore[return-value]
            if attempt or self._connection is None or not self._catch_up(store):
                break
        return super().search(store, query, limit, thread_prefix=thread_prefix, scope=scope)

    def _catch_up(self, store: str) -> bool:
        """Bring the store's Tantivy index up to date with the SQLite file, under its write lock: the rows that
        writes left waiting, or every row where the two are apart; False if it cannot."""

        def catch_up(connection: sqlite3.Connection) -> None:
            table = self._ensure(connection, store)
            connection.execute(f"CREATE TABLE IF NOT EXISTS {table}_pending (id TEXT PRIMARY KEY)")
            try:
                self._apply_waiting(connection, store, table)
            except FAILURES:  # a damaged or foreign folder: made anew
                self._opened.pop(store, None)
                shutil.rmtree(self.folder / store, ignore_errors=True)
                self._write(connection, store, table, None)
                connection.execute(f"DELETE FROM {table}_pending")

        try:
            return isinstance(self._run("updating the top-k index", catch_up, write=True), Success)
        except FAILURES:
            self._opened.pop(store, None)
            return False
