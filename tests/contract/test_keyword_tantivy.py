"""The KeywordIndex contract, and every promise of the SQLite file, against the Tantivy top-k ranking beside it."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.adapters.tantivy_keywords import CATCH_UP_ROWS, TantivyKeywordIndex
from agent_memory.domain.ports import KeywordIndex
from tests.contract import test_keyword_sqlite as sqlite_file
from tests.contract.keyword_index_contract import STORE, entry, filler, ids_of, search
from tests.contract.vector_store_contract import ok


class TestTantivyKeywords(sqlite_file.TestSqliteKeywords):
    @pytest.fixture
    def index(self, tmp_path: Path) -> KeywordIndex:
        return TantivyKeywordIndex(tmp_path / "data" / "keywords.sqlite3")

    def reopen(self, index: KeywordIndex) -> KeywordIndex:
        assert isinstance(index, TantivyKeywordIndex)
        return TantivyKeywordIndex(index.path)


# --- the two indexes kept in step ----------------------------------------------------------------


def test_rows_written_before_the_top_k_index_existed_are_found(tmp_path: Path) -> None:
    """An upgrade: a SQLite file of the FTS5-only index gets its Tantivy index on the first search."""
    path = tmp_path / "keywords.sqlite3"
    ok(SqliteKeywordIndex(path).upsert(STORE, [entry("a", "banana bread"), *filler()]))
    index = TantivyKeywordIndex(path)
    assert ids_of(search(index, "banana")) == ["a"]
    assert (index.folder / STORE / "meta.json").is_file()


def test_a_deleted_top_k_folder_is_rebuilt_from_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite3"
    index = TantivyKeywordIndex(path)
    ok(index.upsert(STORE, [entry("a", "banana bread", "t1"), entry("b", "cherry pie", "t2"), *filler()]))
    assert ids_of(search(index, "cherry")) == ["b"]
    shutil.rmtree(path.with_name(path.stem + "-topk"))
    assert ids_of(search(TantivyKeywordIndex(path), "cherry")) == ["b"]


def test_a_tantivy_commit_whose_sqlite_transaction_failed_is_undone_by_a_rebuild(tmp_path: Path) -> None:
    """A crash between the two commits leaves Tantivy ahead of SQLite: the next search rebuilds it from SQLite."""
    path = tmp_path / "keywords.sqlite3"
    index = TantivyKeywordIndex(path)
    ok(index.upsert(STORE, [entry("a", "banana bread"), *filler()]))
    assert ids_of(search(index, "banana")) == ["a"]
    writer = TantivyKeywordIndex(path)
    ok(writer.upsert(STORE, [entry("ghost", "banana split")]))
    assert set(ids_of(search(writer, "banana"))) == {"a", "ghost"}  # the search brings Tantivy up to date
    with sqlite3.connect(path) as connection:  # as if SQLite had rolled back the ghost's transaction
        connection.execute("DELETE FROM kw_default WHERE rowid = (SELECT row FROM kw_default_links WHERE id = 'ghost')")
        connection.execute("DELETE FROM kw_default_links WHERE id = 'ghost'")
        connection.execute("UPDATE kw_default_generation SET generation = generation - 1")
    assert ids_of(search(TantivyKeywordIndex(path), "banana")) == ["a"]
    assert ids_of(search(index, "banana")) == ["a"]


def test_a_write_waits_in_sqlite_until_a_search_brings_tantivy_up_to_date(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite3"
    index = TantivyKeywordIndex(path)
    ok(index.upsert(STORE, [entry("a", "banana bread", "t1"), *filler()]))
    assert not (index.folder / STORE).exists()  # no Tantivy commit on the write path
    assert ids_of(search(index, "banana")) == ["a"]
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM kw_default_pending").fetchone() == (0,)
    ok(index.upsert(STORE, [entry("a", "cherry bread", "t1")]))
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT id FROM kw_default_pending").fetchall() == [("a",)]
    assert ids_of(search(index, "banana")) == []
    assert ids_of(search(index, "cherry")) == ["a"]


def test_an_import_commits_to_tantivy_as_it_goes(tmp_path: Path) -> None:
    """CATCH_UP_ROWS rows waiting: the write commits them, so an import's first search does not index it all."""
    path = tmp_path / "keywords.sqlite3"
    index = TantivyKeywordIndex(path)
    rows = [entry(f"m{n}", f"word{n} common", f"t{n}") for n in range(CATCH_UP_ROWS)]
    ok(index.upsert(STORE, rows[:-1]))
    assert not (index.folder / STORE).exists()
    ok(index.upsert(STORE, rows[-1:]))
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM kw_default_pending").fetchone() == (0,)
    assert ids_of(search(TantivyKeywordIndex(path), f"word{CATCH_UP_ROWS - 1}")) == [f"m{CATCH_UP_ROWS - 1}"]


def test_each_process_sees_the_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "keywords.sqlite3"
    first, second = TantivyKeywordIndex(path), TantivyKeywordIndex(path)
    ok(first.upsert(STORE, [entry("a", "banana bread", "t1"), *filler()]))
    assert ids_of(search(second, "banana")) == ["a"]
    ok(second.upsert(STORE, [entry("b", "banana split", "t2")]))
    ok(second.remove(STORE, ["a"]))
    assert ids_of(search(first, "banana")) == ["b"]


def test_a_read_only_disk_without_a_top_k_index_answers_from_fts5(tmp_path: Path) -> None:
    path = tmp_path / "data" / "keywords.sqlite3"
    ok(SqliteKeywordIndex(path).upsert(STORE, [entry("a", "banana bread"), *filler()]))
    path.parent.chmod(0o500)
    try:
        if os.access(path.parent, os.W_OK):
            pytest.skip("root writes anywhere: a read-only folder cannot be made here")
        assert ids_of(search(TantivyKeywordIndex(path), "banana")) == ["a"]
    finally:
        path.parent.chmod(0o700)
