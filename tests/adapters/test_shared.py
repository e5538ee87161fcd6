"""What the backends share: the error boundary, store names, batching, durable writes and keyword words."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from returns.result import Failure, Success

from agent_memory.adapters.shared import durable
from agent_memory.adapters.shared.batching import chunks
from agent_memory.adapters.shared.boundary import Abort, abort_if, as_result, value_of
from agent_memory.adapters.shared.durable import fsync_directory, temporary_prefix, write_atomically
from agent_memory.adapters.shared.embeddings import count_mismatch, dimension_mismatch, mixed_dimensions
from agent_memory.adapters.shared.names import collection_of, is_store_name, store_not_found, store_of
from agent_memory.adapters.shared.prefixes import NAMESPACE_JOIN, namespace_prefixes, path_prefixes
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.search.tokens import STOP_WORDS, content_words, query_terms

REFUSED = DomainError(ErrorCode.STORAGE_ERROR, "refused")


# --- the boundary -----------------------------------------------------------------------------


def _raise(error: Exception) -> None:
    raise error


def test_plain_code_becomes_one_result() -> None:
    assert as_result(lambda: 3) == Success(3)
    assert as_result(lambda: _raise(Abort(REFUSED))) == Failure(REFUSED)


def test_library_errors_are_translated_and_unknown_ones_propagate() -> None:
    def translate(error: Exception) -> DomainError | None:
        return None if isinstance(error, KeyError) else DomainError(ErrorCode.STORAGE_ERROR, str(error))

    translated = as_result(lambda: _raise(ValueError("bad")), (ValueError, KeyError), translate)
    assert translated == Failure(DomainError(ErrorCode.STORAGE_ERROR, "bad"))
    with pytest.raises(KeyError):  # translate said "not ours": a bug is not hidden as a storage failure
        as_result(lambda: _raise(KeyError("k")), (ValueError, KeyError), translate)
    with pytest.raises(TypeError):  # not in `catch`
        as_result(lambda: _raise(TypeError("t")), (ValueError,), translate)


def test_a_failed_result_inside_plain_code_aborts_with_its_error() -> None:
    assert value_of(Success(5)) == 5
    with pytest.raises(Abort) as raised:
        value_of(Failure(REFUSED))
    assert raised.value.error == REFUSED
    assert as_result(lambda: value_of(Failure(REFUSED))) == Failure(REFUSED)
    assert as_result(lambda: abort_if(None)) == Success(None)
    assert as_result(lambda: abort_if(REFUSED)) == Failure(REFUSED)


# --- embedding checks -------------------------------------------------------------------------


def test_embedding_checks_refuse_what_a_store_cannot_hold() -> None:
    assert count_mismatch([1, 2], [[0.0], [1.0]]) is None
    assert count_mismatch([1, 2], [[0.0]]).code is ErrorCode.STORAGE_ERROR  # type: ignore[union-attr]
    assert dimension_mismatch(None, [[0.0], [0.0, 1.0]]) is None  # a store whose dimension is not known yet
    assert dimension_mismatch(2, [[0.0, 1.0]]) is None
    mismatch = dimension_mismatch(2, [[0.0, 1.0], [0.0, 1.0, 2.0]])
    assert mismatch is not None and mismatch.code is ErrorCode.EMBEDDING_MISMATCH
    assert "holds 2-dimensional embeddings but got 3" in mismatch.message and "memory reindex" in mismatch.message
    assert mixed_dimensions([]) is None and mixed_dimensions([[0.0], [1.0]]) is None
    mixed = mixed_dimensions([[0.0], [0.0, 1.0]])
    assert mixed is not None and mixed.code is ErrorCode.EMBEDDING_MISMATCH and "[1, 2]" in mixed.message


# --- store names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("work", True), ("work-notes", True), (" work", False), ("a--b", False), ("Work", False), ("", False)],
)
def test_store_names_are_taken_exactly_as_written(text: str, expected: bool) -> None:
    assert is_store_name(text) is expected


def test_a_store_and_its_collection_name_round_trip() -> None:
    assert collection_of("memories", "default") == "memories"
    assert collection_of("memories", "work") == "memories--work"
    for store in ("default", "work", "a-b"):
        assert store_of("memories", collection_of("memories", store)) == store
    assert store_of("memories", "memories.categories") is None  # internal: "." is never in a store name
    assert store_of("memories", "other--work") is None  # another catalog's
    assert store_of("memories", "memories--Bad") is None


def test_a_missing_store_says_how_to_make_it() -> None:
    error = store_not_found("work")
    assert error.code is ErrorCode.STORE_NOT_FOUND
    assert "`memory store create work`" in error.message


# --- batching and prefixes --------------------------------------------------------------------


def test_chunks_cut_in_order_and_never_drop_an_item() -> None:
    assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert chunks([], 3) == []
    assert chunks([1, 2], 0) == [[1], [2]]  # a size below one still makes progress


def test_prefixes_name_every_ancestor() -> None:
    assert namespace_prefixes(("user", "a")) == ["user", f"user{NAMESPACE_JOIN}a"]
    assert namespace_prefixes(()) == []
    assert path_prefixes(MemoryPath(("work", "notes", "x"))) == ["work", "work/notes", "work/notes/x"]


# --- durable writes ---------------------------------------------------------------------------


def test_an_atomic_write_replaces_the_contents_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "file.md"
    write_atomically(target, b"first")
    assert target.read_bytes() == b"first"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # new files are private
    target.chmod(0o644)
    write_atomically(target, b"second")
    assert target.read_bytes() == b"second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    fsync_directory(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.md"]


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file.md"
    write_atomically(target, b"old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.md"]
    assert temporary_prefix(target) == ".file.md.tmp-"


# --- keyword words ----------------------------------------------------------------------------


def test_content_words_drop_stop_words_and_one_letter_tokens_but_keep_repeats() -> None:
    assert content_words("The cat and the cat's hat, a b") == ["cat", "cat", "hat"]
    assert query_terms("The cat and the cat's hat") == ["cat", "hat"]
    assert {"the", "and", "what"} <= STOP_WORDS
