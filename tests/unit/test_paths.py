"""Slug-path normalisation and the INVALID_PATH rules of decision 10."""

import pytest
from returns.result import Failure, Success

from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.paths import CategoryPath, MemoryPath, parse_category_path, parse_memory_path


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("category/memory", ("category", "memory")),
        ("category/subcategory/nested/memory", ("category", "subcategory", "nested", "memory")),
        ("  Projects / My_Project / Build Notes ", ("projects", "my-project", "build-notes")),
        ("a--b/c__d", ("a-b", "c-d")),
        ("Café/Résumé!", ("cafe", "resume")),
        ("global/-x-", ("global", "x")),
    ],
)
def test_paths_are_normalised_to_slugs(raw: str, expected: tuple[str, ...]) -> None:
    assert parse_memory_path(raw) == Success(MemoryPath(expected))


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "single",
        "/etc/passwd",
        "../secret/x",
        "a/../b",
        "a/./b",
        "a\\b/c",
        "a//b",
        "a/b/",
        "a/!!!/c",
        "C:/x/y",
        "a/%2e%2e/b" + "/" + "..",
        "x/" + "a" * 200,
    ],
)
def test_bad_paths_are_invalid_path_errors(raw: str) -> None:
    result = parse_memory_path(raw)
    assert isinstance(result, Failure)
    assert result.failure().code is ErrorCode.INVALID_PATH
    assert result.failure().message


def test_encoded_separators_cannot_escape_the_store() -> None:
    # '%2F' is not a separator: its characters are dropped, so the path stays inside its category
    assert parse_memory_path("notes/..%2F..%2Fetc") == Success(MemoryPath(("notes", "2f2fetc")))


def test_category_paths_take_one_segment_or_more_and_contain_memories() -> None:
    category = parse_category_path("Projects").unwrap()
    assert category == CategoryPath(("projects",))
    assert category.contains(MemoryPath(("projects", "x", "y")))
    assert not category.contains(MemoryPath(("projectsx", "y")))
    assert str(MemoryPath(("a", "b")).category) == "a"


def test_a_path_type_cannot_be_built_unnormalised() -> None:
    with pytest.raises(ValueError):
        MemoryPath(("A B", "c"))
    with pytest.raises(ValueError):
        MemoryPath(("only",))
