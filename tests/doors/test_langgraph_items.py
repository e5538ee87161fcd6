"""Decision 25's mapping, function by function: how an item's value is kept as content and how any memory reads
as an item (key, value), including the texts that only look like the JSON an item is kept as."""

from __future__ import annotations

import json
import uuid

import attrs
import pytest

from agent_memory.domain.model import Memory
from agent_memory.domain.paths import memory_path
from agent_memory.entrypoints.tooling.items import (
    STRUCTURED_SOURCE,
    encoded,
    item_path,
    key_and_value,
    put_key,
    readable_key,
)
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError
from tests.unit.conftest import T0

NS = ("memories", "u-1")
KEY = "e0edc8fc-d8c5-4e88-b6c4-904605d84497"  # a LangMem-style key, fixed: test ids must match across xdist workers


def memory(content: str, *, path: str | None = None, namespace: tuple[str, ...] = NS, source: str = "") -> Memory:
    where = None if path is None else memory_path(path)
    return Memory(
        id=str(uuid.uuid4()),
        content=content,
        created_at=T0,
        updated_at=T0,
        namespace=namespace,
        path=where,
        source=source,
    )


@pytest.mark.parametrize(
    ("key", "readable"), [(KEY, True), ("editor", True), ("A b", False), ("a/b", False), ("", False)]
)
def test_a_key_is_readable_from_its_path_when_it_is_its_own_slug(key: str, readable: bool) -> None:
    assert readable_key(key) is readable


def test_langmems_value_is_kept_as_its_text_and_read_back_with_its_key() -> None:
    content = encoded(KEY, {"content": "User prefers dark mode"}, plain=True)
    assert content == "User prefers dark mode"
    kept = memory(content, path=item_path(NS, KEY))
    assert put_key(kept) == KEY
    assert key_and_value(kept) == (KEY, {"content": "User prefers dark mode"})


@pytest.mark.parametrize(
    ("value", "extras"),
    [
        ({"content": "t", "kind": "note"}, None),  # more than LangMem's shape
        ({"content": {"name": "Ana"}}, None),  # structured content
        ({"content": "t"}, {"ttl": 5}),  # a TTL rides in the JSON
        ({"content": json.dumps({"key": "editor", "value": {"x": 1}})}, None),  # text that looks like the JSON
    ],
)
def test_any_other_value_is_kept_as_json_and_read_back_exactly(value: dict[str, object], extras: dict | None) -> None:
    content = encoded("editor", value, extras, plain=True)
    assert json.loads(content)["value"] == value
    assert key_and_value(memory(content, path=item_path(NS, "editor"))) == ("editor", value)


def test_a_key_that_is_not_its_own_slug_is_read_from_the_json() -> None:
    content = encoded("A b", {"content": "t"}, plain=False)
    assert key_and_value(memory(content, path=item_path(NS, "A b"))) == ("A b", {"content": "t"})


def test_any_other_memory_reads_as_content_keyed_by_its_id() -> None:
    plain = memory("a note from the CLI", path="notes/a")
    assert key_and_value(plain) == (plain.id, {"content": "a note from the CLI"})
    lookalike = memory(json.dumps({"key": "k", "value": {}}))  # another key's JSON: just text
    assert key_and_value(lookalike) == (lookalike.id, {"content": lookalike.content})
    structured = memory('{"topic": "tea"}', source=STRUCTURED_SOURCE)
    assert key_and_value(structured) == (structured.id, {"content": {"topic": "tea"}})


def test_a_put_of_a_memorys_id_keeps_a_value_as_json_keyed_by_that_id() -> None:
    kept = memory("first")
    rewritten = attrs.evolve(kept, content=encoded(kept.id, {"text": "t", "n": 1}, plain=True))
    assert key_and_value(rewritten) == (kept.id, {"text": "t", "n": 1})


def test_a_path_in_the_items_category_under_another_namespace_is_not_that_key() -> None:
    elsewhere = memory("t", path=item_path(("other",), KEY))  # the digest names another namespace
    assert put_key(elsewhere) is None and key_and_value(elsewhere) == (elsewhere.id, {"content": "t"})


def test_a_value_that_is_not_a_json_object_is_refused() -> None:
    with pytest.raises(MemoryToolError, match="must be a dict"):
        encoded("k", ["not", "a", "dict"])
