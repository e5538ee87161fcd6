"""The PartVectors contract against SQLite on a real file and the in-memory fake, plus the file's own promises."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import InMemoryPartVectors
from agent_memory.adapters.sqlite_parts import SqlitePartVectors, _blob
from agent_memory.adapters.token_windows import PARTS_SCHEME
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import PartVectors
from tests.contract.part_vectors_contract import STORE, PartVectorsContract, X, Y
from tests.contract.vector_store_contract import failed_with, ok


class TestSqlitePartVectors(PartVectorsContract):
    @pytest.fixture
    def parts(self, tmp_path: Path) -> PartVectors:
        return SqlitePartVectors(tmp_path / "data" / "parts.sqlite3")

    def reopen(self, parts: PartVectors) -> PartVectors:
        assert isinstance(parts, SqlitePartVectors)
        return SqlitePartVectors(parts.path)

    def test_reads_and_writes_of_short_memories_make_no_file(self, tmp_path: Path) -> None:
        path = tmp_path / "parts.sqlite3"
        parts = SqlitePartVectors(path)
        assert ok(parts.nearest(STORE, X, 5)) == []
        ok(parts.put(STORE, {"a": [], "b": []}))  # memories within the window: nothing to keep
        ok(parts.remove(STORE, ["a"]))
        assert not path.exists()
        ok(parts.put(STORE, {"a": [X]}))
        assert path.is_file()

    def test_a_reader_sees_another_writers_parts_at_its_next_search(self, tmp_path: Path) -> None:
        """Each object keeps a store's parts in memory between searches: a write elsewhere must show."""
        reader, writer = SqlitePartVectors(tmp_path / "p.sqlite3"), SqlitePartVectors(tmp_path / "p.sqlite3")
        ok(writer.put(STORE, {"a": [Y]}))
        assert [i for i, _ in ok(reader.nearest(STORE, X, 5))] == ["a"]
        ok(writer.put(STORE, {"b": [X]}))
        assert [i for i, _ in ok(reader.nearest(STORE, X, 5))] == ["b", "a"]
        ok(writer.remove(STORE, ["b"]))
        assert [i for i, _ in ok(reader.nearest(STORE, X, 5))] == ["a"]
        ok(reader.put(STORE, {"c": [X]}))  # and its own writes
        assert [i for i, _ in ok(reader.nearest(STORE, X, 5))] == ["c", "a"]

    def test_parts_cut_by_an_earlier_scheme_count_as_none_until_a_rebuild_drops_them(self, tmp_path: Path) -> None:
        """Issue 48: parts of scheme 1 (128-token windows only) sit in `parts_<store>`: no memory counts as having
        parts (status warns of them), a search does not read them, and a rebuild (reindex) drops the old table."""
        path = tmp_path / "parts.sqlite3"
        with closing(sqlite3.connect(path)) as old, old:
            old.execute("CREATE TABLE parts_default (id TEXT NOT NULL, part INTEGER NOT NULL, vector BLOB NOT NULL)")
            old.execute("INSERT INTO parts_default VALUES ('a', 1, ?)", (_blob(X),))
        parts = SqlitePartVectors(path)
        assert ok(parts.holding(STORE, ["a"])) == set() and ok(parts.nearest(STORE, X, 5)) == []
        ok(parts.rebuild(STORE, {"a": [X]}))
        assert ok(parts.holding(STORE, ["a"])) == {"a"}
        with closing(sqlite3.connect(path)) as after:
            tables = {row[0] for row in after.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {f"parts{PARTS_SCHEME}_default"}

    def test_a_bad_file_is_a_storage_error_saying_reindex(self, tmp_path: Path) -> None:
        path = tmp_path / "parts.sqlite3"
        path.write_bytes(b"this is not an SQLite database " * 200)
        damaged = path.read_bytes()
        parts = SqlitePartVectors(path)
        error = failed_with(parts.put(STORE, {"a": [X]}), ErrorCode.STORAGE_ERROR)
        assert str(path) in error.message and "memory reindex" in error.message
        assert parts.nearest(STORE, X, 5).failure().code is ErrorCode.STORAGE_ERROR
        ok(parts.rebuild(STORE, {"a": [X]}))  # what reindex does: the damaged file set aside, a new one made
        assert (tmp_path / "parts.sqlite3.damaged").read_bytes() == damaged
        assert [i for i, _ in ok(parts.nearest(STORE, X, 5))] == ["a"]


class TestInMemoryPartVectors(PartVectorsContract):
    durable = False

    @pytest.fixture
    def parts(self, tmp_path: object) -> PartVectors:
        return InMemoryPartVectors()
