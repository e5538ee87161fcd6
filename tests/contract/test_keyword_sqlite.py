"""The KeywordIndex contract against SQLite FTS5 on a real file, plus the tokenizer's and the file's own promises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.sqlite_keywords import ID_BATCH, TOKENIZER, SqliteKeywordIndex
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import KeywordIndex
from agent_memory.domain.search.tokens import STOP_WORDS, query_terms
from tests.contract.keyword_index_contract import (
    MANY_IDS,
    STORE,
    RankingKeywordIndexContract,
    entry,
    filler,
    found,
    ids_of,
    search,
)
from tests.contract.vector_store_contract import failed_with, ok


class TestSqliteKeywords(RankingKeywordIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> KeywordIndex:
        return SqliteKeywordIndex(tmp_path / "data" / "keywords.sqlite3")

    def reopen(self, index: KeywordIndex) -> KeywordIndex:
        assert isinstance(index, SqliteKeywordIndex)
        return SqliteKeywordIndex(index.path)

    # --- the tokenizer: porter unicode61 remove_diacritics 2

    def test_the_tokenizer_is_the_documented_one(self) -> None:
        assert TOKENIZER == "porter unicode61 remove_diacritics 2"

    def test_letters_with_several_diacritics_are_folded_too(self, index: KeywordIndex) -> None:
        """What `remove_diacritics 2` adds over 1: "ệ" (circumflex and dot below) folds to "e"."""
        ok(index.upsert(STORE, [entry("vn", "Việt Nam trip", "t1"), entry("u", "ǖber cool", "t2"), *filler()]))
        assert ids_of(search(index, "viet")) == ["vn"]
        assert ids_of(search(index, "VIỆT")) == ["vn"]
        assert ids_of(search(index, "uber")) == ["u"]

    def test_query_terms_drop_stop_words(self) -> None:
        assert query_terms("What IS the cat's name?") == ["cat", "name"]
        assert {"the", "and", "or", "not", "what"} <= STOP_WORDS

    def test_neighbours_work_past_the_id_batch(self) -> None:
        assert MANY_IDS > 2 * ID_BATCH

    # --- the file

    def test_parent_folders_are_made_at_the_first_call(self, tmp_path: Path) -> None:
        path = tmp_path / "a" / "b" / "keywords.sqlite3"
        index = SqliteKeywordIndex(path)
        assert not path.parent.exists()
        ok(index.upsert(STORE, [entry("a", "banana")]))
        assert path.is_file()

    def test_a_fresh_index_on_the_same_file_sees_prior_writes(self, tmp_path: Path) -> None:
        path = tmp_path / "keywords.sqlite3"
        first = SqliteKeywordIndex(path)
        ok(first.upsert(STORE, [entry("a", "banana"), entry("b", "cherry")]))
        second = SqliteKeywordIndex(path)
        assert found(second, "banana") == {"a", "b"}
        ok(second.remove(STORE, ["a"]))
        assert found(first, "banana") == set()  # and the first sees the second's writes
        assert ok(first.neighbours(STORE, ["a", "b"])) == {"b": (None, None)}


CALLS: dict[str, Callable[[SqliteKeywordIndex], object]] = {
    "upsert": lambda index: index.upsert(STORE, [entry("a", "banana")]),
    "remove": lambda index: index.remove(STORE, ["a"]),
    "search": lambda index: index.search(STORE, "banana", 5),
    "search-prefix": lambda index: index.search(STORE, "banana", 5, thread_prefix="user"),
    "neighbours": lambda index: index.neighbours(STORE, ["a"]),
    "rebuild": lambda index: index.rebuild(STORE, [entry("a", "banana")]),
}


def unwritable_parent(tmp_path: Path) -> Path:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return blocker / "keywords.sqlite3"


def a_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    return folder


def corrupt(tmp_path: Path) -> Path:
    path = tmp_path / "keywords.sqlite3"
    path.write_bytes(b"this is not an SQLite database " * 200)
    return path


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize(
    "bad_path", [unwritable_parent, a_folder, corrupt], ids=["parent-is-a-file", "folder", "corrupt"]
)
def test_a_bad_file_is_a_storage_error_not_an_exception(
    tmp_path: Path, bad_path: Callable[[Path], Path], call: str
) -> None:
    if (bad_path, call) == (corrupt, "rebuild"):
        pytest.skip("rebuild repairs a damaged file: see the test below")
    path = bad_path(tmp_path)
    result = CALLS[call](SqliteKeywordIndex(path))
    error = failed_with(result, ErrorCode.STORAGE_ERROR)  # type: ignore[arg-type]
    assert str(path) in error.message and "memory reindex" in error.message
    assert error.cause


def test_rebuild_sets_a_damaged_file_aside_and_starts_a_new_one(tmp_path: Path) -> None:
    path = corrupt(tmp_path)
    damaged = path.read_bytes()
    index = SqliteKeywordIndex(path)
    assert index.count(STORE).failure().code is ErrorCode.STORAGE_ERROR
    assert index.rebuild(STORE, [entry("a", "the platypus lays eggs")]) == Success(None)
    assert (tmp_path / "keywords.sqlite3.damaged").read_bytes() == damaged
    assert index.count(STORE) == Success(1)
    assert [hit for hit, _ in index.search(STORE, "platypus", 5).unwrap()] == ["a"]


def test_rebuild_of_an_unwritable_location_is_still_an_error(tmp_path: Path) -> None:
    index = SqliteKeywordIndex(a_folder(tmp_path))
    assert index.rebuild(STORE, [entry("a", "text")]).failure().code is ErrorCode.STORAGE_ERROR
    assert not list(tmp_path.glob("*.damaged"))
