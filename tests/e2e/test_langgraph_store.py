"""Issue 15 point 5: the LangGraph BaseStore over the service, held to LangGraph's documented store semantics on
real backends (LangGraph ships no store conformance tests in its wheels, so this suite stands in for them)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.store import MemoryStore, item_path
from agent_memory.entrypoints.settings import load_settings
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError

BACKENDS = ["chroma", "files", "qdrant"]
U1 = ("users", "u1")
U2 = ("users", "u2")


@pytest.fixture(params=BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
    flags = {"data_dir": str(tmp_path / "data"), "backend": request.param}
    settings = load_settings(flags, {"HOME": str(tmp_path)}).unwrap()
    yield build_service(settings, embedder=HashingEmbedder()).unwrap()


@pytest.fixture
def store(service: MemoryService) -> MemoryStore:
    return MemoryStore(service)


def stored_count(service: MemoryService) -> int:
    return len(service.list().unwrap().memories)


# --- put / get / delete -------------------------------------------------------------------------------


def test_a_value_round_trips_with_its_timestamps(store: MemoryStore) -> None:
    value = {"text": "prefers dark mode ☾", "n": 3, "ratio": 0.25, "on": True, "none": None, "nested": {"a": [1, "b"]}}
    store.put(U1, "ui-pref", value)
    item = store.get(U1, "ui-pref")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (U1, "ui-pref", value)
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at


def test_a_missing_key_is_none(store: MemoryStore) -> None:
    assert store.get(U1, "nothing") is None


def test_a_put_over_a_key_replaces_its_value_and_keeps_its_birth(store: MemoryStore, service: MemoryService) -> None:
    store.put(U1, "k", {"text": "first", "old": 1})
    first = store.get(U1, "k")
    store.put(U1, "k", {"text": "second"})
    second = store.get(U1, "k")
    assert first is not None and second is not None
    assert second.value == {"text": "second"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert stored_count(service) == 1


def test_delete_removes_the_item_for_good(store: MemoryStore, service: MemoryService) -> None:
    store.put(U1, "k", {"text": "to forget"})
    store.delete(U1, "k")
    assert store.get(U1, "k") is None
    assert store.search(U1) == []
    assert stored_count(service) == 0
    store.delete(U1, "k")  # deleting what is not there is no error
    store.put(U1, "k", {"text": "back again"})
    assert store.get(U1, "k").value == {"text": "back again"}  # type: ignore[union-attr]


def test_keys_are_exact_per_namespace(store: MemoryStore) -> None:
    store.put(U1, "A b", {"v": 1})
    store.put(U1, "a-b", {"v": 2})  # slugs alike, keys differ
    store.put(U2, "A b", {"v": 3})
    store.put((*U1, "child"), "A b", {"v": 4})
    assert store.get(U1, "A b").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(U1, "a-b").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(U2, "A b").value == {"v": 3}  # type: ignore[union-attr]
    assert store.get((*U1, "child"), "A b").value == {"v": 4}  # type: ignore[union-attr]
    assert store.get(("users",), "A b") is None


def test_an_item_is_a_memory_of_the_product(store: MemoryStore, service: MemoryService) -> None:
    """The product's own doors see the item: under the langgraph category, in the item's namespace, searchable."""
    store.put(U1, "pets", {"text": "has a cat named Miso"})
    (view,) = service.list("langgraph", namespace=U1).unwrap().memories
    assert str(view.memory.path) == item_path(U1, "pets") and view.memory.namespace == U1
    hits = service.search(SearchMemories(query="cat Miso", namespace=U1)).unwrap().results
    assert [hit.memory.id for hit in hits] == [view.memory.id]


def test_memories_from_other_doors_are_items_keyed_by_their_id(store: MemoryStore, service: MemoryService) -> None:
    """Decision 25: every memory with a namespace is an item there, its key its id, its value {"content": …}; a put
    of that id updates it, a delete soft-deletes it (restorable, as every door's delete of a memory is)."""
    note = service.create(CreateMemory(content="a note made with the CLI", namespace=U1, path="langgraph/note"))
    odd = service.create(CreateMemory(content='{"key": "k", "value": {}}', namespace=U1)).unwrap().memory
    service.create(CreateMemory(content="a memory of no tenant")).unwrap()  # no namespace: LangGraph has no such item
    note_id = note.unwrap().memory.id
    assert {(item.key, item.value["content"]) for item in store.search(U1)} == {
        (note_id, "a note made with the CLI"),
        (odd.id, '{"key": "k", "value": {}}'),
    }
    assert store.get(U1, note_id).value == {"content": "a note made with the CLI"}  # type: ignore[union-attr]
    assert store.get(U2, note_id) is None and store.get((*U1, "child"), note_id) is None
    assert store.list_namespaces() == [U1]
    store.put(U1, note_id, {"content": "a note the graph rewrote"})
    assert service.get(note_id).unwrap().memory.content == "a note the graph rewrote"
    store.put(U1, odd.id, {"text": "structured now", "n": 1})
    assert store.get(U1, odd.id).value == {"text": "structured now", "n": 1}  # type: ignore[union-attr]
    assert stored_count(service) == 3
    store.delete(U1, note_id)
    assert store.get(U1, note_id) is None and note_id not in {item.key for item in store.search(U1)}
    assert service.restore(note_id).unwrap().memory.content == "a note the graph rewrote"


# --- search -----------------------------------------------------------------------------------------------


@pytest.fixture
def filled(store: MemoryStore) -> MemoryStore:
    store.put(U1, "food", {"text": "loves spicy ramen noodles", "kind": "pref", "stars": 5, "meta": {"lang": "en"}})
    store.put(U1, "ui", {"text": "prefers dark mode in editors", "kind": "pref", "stars": 3, "meta": {"lang": "fr"}})
    store.put((*U1, "work"), "job", {"text": "works as a nurse at night", "kind": "fact", "stars": 4})
    store.put(U2, "food", {"text": "allergic to peanuts and ramen", "kind": "pref", "stars": 1})
    return store


def keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


def test_search_covers_the_prefix_and_below_only(filled: MemoryStore) -> None:
    assert sorted(keys(filled.search(U1))) == ["food", "job", "ui"]
    assert sorted(keys(filled.search((*U1, "work")))) == ["job"]
    assert len(filled.search(())) == 4
    assert filled.search(("nobody",)) == []


def test_search_without_query_lists_newest_first_without_scores(filled: MemoryStore) -> None:
    found = filled.search(U1)
    assert all(item.score is None for item in found)
    assert [item.updated_at for item in found] == sorted((item.updated_at for item in found), reverse=True)


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ({"kind": "pref"}, ["food", "ui"]),
        ({"kind": "fact"}, ["job"]),
        ({"meta": {"lang": "fr"}}, ["ui"]),
        ({"stars": {"$gte": 4}}, ["food", "job"]),
        ({"stars": {"$gt": 3, "$lt": 5}}, ["job"]),
        ({"stars": {"$lte": 3}}, ["ui"]),
        ({"kind": {"$ne": "pref"}}, ["job"]),
        ({"kind": {"$eq": "pref"}, "stars": 3}, ["ui"]),
        ({"absent": "x"}, []),
    ],
)
def test_search_filters_on_the_value(filled: MemoryStore, wanted: dict[str, Any], expected: list[str]) -> None:
    assert sorted(keys(filled.search(U1, filter=wanted))) == expected
    assert sorted(keys(filled.search(U1, query="ramen noodles", filter=wanted))) == expected


def test_a_query_ranks_by_hybrid_search_with_scores(filled: MemoryStore) -> None:
    found = filled.search(U1, query="spicy ramen")
    assert found[0].key == "food" and found[0].namespace == U1
    assert all(isinstance(item.score, float) for item in found)
    assert [item.score for item in found] == sorted((item.score for item in found), reverse=True)  # type: ignore[type-var]
    assert "u2" not in {item.namespace[1] for item in found}


def test_a_query_ranks_every_item_of_the_prefix_however_unrelated(filled: MemoryStore) -> None:
    """LangGraph's rule, not the product's relevance floor (on by default in these settings)."""
    assert sorted(keys(filled.search(U1, query="quantum chromodynamics lecture"))) == ["food", "job", "ui"]


def test_search_pages_with_limit_and_offset(filled: MemoryStore) -> None:
    for query in (None, "ramen"):
        everything = keys(filled.search(U1, query=query, limit=10))
        pages = [keys(filled.search(U1, query=query, limit=1, offset=offset)) for offset in range(4)]
        assert pages == [[everything[0]], [everything[1]], [everything[2]], []]
        assert keys(filled.search(U1, query=query, limit=2, offset=1)) == everything[1:3]
        assert filled.search(U1, query=query, limit=0) == []


# --- list namespaces -----------------------------------------------------------------------------------------


def test_list_namespaces_with_prefix_suffix_depth_and_paging(filled: MemoryStore) -> None:
    all_three = [U1, (*U1, "work"), U2]
    assert filled.list_namespaces() == all_three
    assert filled.list_namespaces(prefix=U1) == [U1, (*U1, "work")]
    assert filled.list_namespaces(prefix=("users", "*")) == all_three
    assert filled.list_namespaces(suffix=("work",)) == [(*U1, "work")]
    assert filled.list_namespaces(suffix=("users", "*")) == [U1, U2]
    assert filled.list_namespaces(prefix=("users",), suffix=("u2",)) == [U2]
    assert filled.list_namespaces(max_depth=1) == [("users",)]
    assert filled.list_namespaces(max_depth=2) == [U1, U2]
    assert filled.list_namespaces(limit=1, offset=1) == [(*U1, "work")]
    assert filled.list_namespaces(prefix=("nobody",)) == []


def test_an_emptied_namespace_is_no_longer_listed(filled: MemoryStore) -> None:
    filled.delete((*U1, "work"), "job")
    assert filled.list_namespaces() == [U1, U2]


# --- batch and async -----------------------------------------------------------------------------------------


def test_a_batch_answers_each_operation_in_order(store: MemoryStore) -> None:
    results = store.batch(
        [
            PutOp(U1, "a", {"text": "alpha"}),
            GetOp(U1, "a"),
            PutOp(U1, "a", None),
            GetOp(U1, "a"),
            PutOp(U2, "b", {"text": "beta"}),
            SearchOp(("users",)),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[1].value == {"text": "alpha"}  # type: ignore[union-attr]
    assert results[2] is None and results[3] is None
    assert keys(results[5]) == ["b"] and results[6] == [U2]  # type: ignore[arg-type]


def test_the_async_variants(store: MemoryStore) -> None:
    async def scenario() -> None:
        await store.aput(U1, "k", {"text": "async ramen"})
        assert (await store.aget(U1, "k")).value == {"text": "async ramen"}  # type: ignore[union-attr]
        assert keys(await store.asearch(U1, query="ramen")) == ["k"]
        assert await store.alist_namespaces(prefix=("users",)) == [U1]
        answers = await store.abatch([GetOp(U1, "k"), SearchOp(U1, filter={"text": "async ramen"})])
        assert answers[0].key == "k" and keys(answers[1]) == ["k"]  # type: ignore[union-attr, arg-type]
        await store.adelete(U1, "k")
        assert await store.aget(U1, "k") is None

    asyncio.run(scenario())


# --- bad input: a clear exception, storage untouched --------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda s: s.put(U1, "k", "not a dict"), MemoryToolError, "must be a dict"),
        (lambda s: s.put(U1, "k", {"s": {1, 2}}), MemoryToolError, "JSON-serialisable"),
        (lambda s: s.put(U1, "k", {"x": float("nan")}), MemoryToolError, "JSON-serialisable"),
        (lambda s: s.put(U1, "k", {1: "int key"}), MemoryToolError, "string keys"),
        (lambda s: s.put(U1, "k", {"text": "x" * 100_001}), MemoryToolError, "limit"),
        (lambda s: s.put((), "k", {"v": 1}), InvalidNamespaceError, "empty"),
        (lambda s: s.put(("a.b",), "k", {"v": 1}), InvalidNamespaceError, "'.'"),
        (lambda s: s.put(("a", ""), "k", {"v": 1}), InvalidNamespaceError, "empty"),
        (lambda s: s.put(("a", "x" * 300), "k", {"v": 1}), InvalidNamespaceError, "longer than 256"),
        (lambda s: s.put(("langgraph",), "k", {"v": 1}), InvalidNamespaceError, "langgraph"),
        (lambda s: s.put(tuple("abcdefghijklmnopq"), "k", {"v": 1}), InvalidNamespaceError, "at most 16"),
        (lambda s: s.put(U1, "k", {"v": 1}, ttl=-5), MemoryToolError, "ttl is minutes"),
        (lambda s: s.put(U1, "k", {"v": 1}, index="v"), MemoryToolError, "index must be False or a list"),
        (lambda s: s.batch([PutOp(U1, 7, {"v": 1})]), MemoryToolError, "key must be a string"),
        (lambda s: s.search(U1, filter={"n": {"$in": [1]}}), MemoryToolError, "Unknown filter operator"),
        (lambda s: s.search(U1, filter=["kind"]), MemoryToolError, "filter must be a dict"),
        (lambda s: s.search(U1, limit=-1), MemoryToolError, "limit"),
        (lambda s: s.search(U1, query="x", limit=900, offset=200), MemoryToolError, "at most 1000"),
        (lambda s: s.list_namespaces(max_depth=0), MemoryToolError, "max_depth"),
        (lambda s: s.batch([PutOp(U1, "a", {"v": 1}), PutOp(U1, "b", "bad")]), MemoryToolError, "must be a dict"),
    ],
    ids=[
        "value-not-dict",
        "value-set",
        "value-nan",
        "value-int-key",
        "value-too-long",
        "namespace-empty",
        "label-dot",
        "label-empty",
        "label-too-long",  # a '/' or a newline is a label LangGraph takes, kept escaped (langgraph/labels.py)
        "root-langgraph",
        "namespace-too-deep",
        "ttl-negative",
        "index-not-list",
        "key-not-str",
        "filter-operator",
        "filter-not-dict",
        "limit-negative",
        "window-too-deep",
        "max-depth-zero",
        "batch-half-bad",
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    store: MemoryStore, service: MemoryService, call: Any, error: type[BaseException], words: str
) -> None:
    store.put(U1, "kept", {"v": 0})
    with pytest.raises(error) as raised:
        call(store)
    assert words in str(raised.value)
    assert [m.memory.path for m in service.list().unwrap().memories] == [
        m.memory.path for m in service.list("langgraph").unwrap().memories
    ]
    assert keys(store.search(())) == ["kept"] and store.get(U1, "kept").value == {"v": 0}  # type: ignore[union-attr]


# --- built from the settings, imported only when used --------------------------------------------------------


def test_built_from_the_settings_like_every_door(tmp_path: Path) -> None:
    built = MemoryStore.from_settings({"data_dir": str(tmp_path / "data"), "backend": "files"}, {"HOME": str(tmp_path)})
    assert built.get(U1, "k") is None and built.list_namespaces() == []
    with pytest.raises(MemoryToolError, match="INVALID_INPUT"):
        MemoryStore.from_settings({"backend": "nope"}, {"HOME": str(tmp_path)})


def test_agent_memory_does_not_import_langgraph() -> None:
    probe = "import sys, agent_memory; agent_memory.build_service; print('langgraph' in sys.modules)"
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == "False"


def test_without_the_extra_the_import_error_names_it() -> None:
    probe = (
        "import sys; sys.modules['langgraph'] = None\n"
        "try:\n    import agent_memory.entrypoints.langgraph.store\nexcept ImportError as error:\n    print(error)"
    )
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    from agent_memory.entrypoints.extras import install_command

    assert install_command("langgraph") in answer.stdout  # the pip command right for this install


@pytest.mark.slow
def test_the_readme_example_runs_on_the_real_embedder(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## LangGraph store") :]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]
    mine = ("MEMORY_", "CHROMADB_", "QDRANT_", "COLLECTION_NAME", "DECAY_", "MIN_CONFIDENCE")
    env = {name: value for name, value in os.environ.items() if not name.startswith(mine)}
    env |= {"HOME": str(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data"), "MEMORY_BACKEND": "files"}
    answer = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, env=env, check=False)
    assert answer.returncode == 0, answer.stderr
    lines = answer.stdout.splitlines()
    assert lines[0].startswith("editor Prefers dark mode in every editor ")
    assert lines[-1] == "[('users', 'u-123')]"


# --- a put is an upsert: it never fails because a concurrent delete won ------------------------------------


def test_a_put_racing_a_delete_of_the_same_key_always_succeeds(store: MemoryStore) -> None:
    keys_ = [f"k{n}" for n in range(3)]

    async def scenario() -> list[BaseException]:
        calls = []
        for round_ in range(8):
            for key in keys_:
                calls.append(store.aput(U1, key, {"n": round_}))
                calls.append(store.adelete(U1, key))
        answers = await asyncio.gather(*calls, return_exceptions=True)
        return [answer for answer in answers if isinstance(answer, BaseException)]

    assert asyncio.run(scenario()) == []
    for key in keys_:  # after the storm each key is either a whole item or absent, never half-kept
        item = store.get(U1, key)
        assert item is None or set(item.value) == {"n"}
