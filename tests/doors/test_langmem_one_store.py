"""Issue 41 item 3 (decision 25): over one MemoryStore, LangMem's own tools (from the `langmem` package, called
without a model), the product's agent tools and LangGraph's store.put/get/search/delete write, read, update and
delete each other's memories by their own ids and keys: every write is seen by every reader, every update and
delete by every reader, and nothing is duplicated on the way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langmem")

from langmem import create_manage_memory_tool as langmem_manage_tool
from langmem import create_search_memory_tool as langmem_search_tool

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.langmem_tools import create_manage_memory_tool, create_search_memory_tool
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.settings import load_settings

NS = ("memories", "u-1")
NO_CONFIG: dict[str, Any] = {"configurable": {}}
Reader = Callable[[], dict[str, Any]]


@pytest.fixture(params=["files", "qdrant", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStore:
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
    # no relevance floor: every reader is asked for the whole namespace, so each write must show in each
    flags = {"data_dir": str(tmp_path / "data"), "backend": request.param, "min_similarity": 0.0}
    service = build_service(load_settings(flags, {"HOME": str(tmp_path)}).unwrap(), embedder=HashingEmbedder())
    return MemoryStore(service.unwrap())


def readers(store: MemoryStore) -> dict[str, Reader]:
    """Each door's view of the namespace: key -> value."""
    langmem_search = langmem_search_tool(NS, store=store)
    ours = create_search_memory_tool(NS, store=store)

    def by_langmem() -> dict[str, Any]:
        return {hit["key"]: hit["value"] for hit in json.loads(langmem_search.invoke({"query": "user", "limit": 50}))}

    def by_our_tool() -> dict[str, Any]:
        hits = json.loads(ours(query="user", limit=50, config=NO_CONFIG))  # type: ignore[arg-type]
        for hit in hits:  # the product shows the item's content, never its stored JSON
            assert hit["content"] == hit["value"].get("content", hit["content"])
        return {hit["key"]: hit["value"] for hit in hits}

    def by_store_search() -> dict[str, Any]:
        return {item.key: item.value for item in store.search(NS, limit=50)}

    def by_store_query() -> dict[str, Any]:
        return {item.key: item.value for item in store.search(NS, query="user", limit=50)}

    return {"langmem": by_langmem, "tools": by_our_tool, "search": by_store_search, "query": by_store_query}


def seen_everywhere(store: MemoryStore, expected: dict[str, Any]) -> None:
    for door, read in readers(store).items():
        assert read() == expected, door
    for key, value in expected.items():
        assert store.get(NS, key).value == value  # type: ignore[union-attr]


def live_count(service: MemoryService) -> int:
    return len(service.list(namespace=NS).unwrap().memories)


def test_every_door_sees_updates_and_deletes_every_others_writes(store: MemoryStore) -> None:
    langmem = langmem_manage_tool(NS, store=store)
    ours = create_manage_memory_tool(NS, store=store)

    # writes, one by each writer
    langmem_key = langmem.invoke({"content": "User prefers dark mode"}).removeprefix("created memory ")
    our_id = ours(content="User lives in Lisbon", config=NO_CONFIG).removeprefix("created memory ")
    store.put(NS, "tea", {"content": "User drinks green tea"})
    store.put(NS, "profile", {"name": "Ana", "age": 41})  # not LangMem's shape: kept as it is
    async_key = asyncio.run(langmem.ainvoke({"content": "User speaks Portuguese"})).removeprefix("created memory ")
    expected = {
        langmem_key: {"content": "User prefers dark mode"},
        our_id: {"content": "User lives in Lisbon"},
        "tea": {"content": "User drinks green tea"},
        "profile": {"name": "Ana", "age": 41},
        async_key: {"content": "User speaks Portuguese"},
    }
    seen_everywhere(store, expected)
    assert live_count(store.service) == 5
    assert asyncio.run(langmem.ainvoke({"action": "delete", "id": async_key})) == f"Deleted memory {async_key}"
    del expected[async_key]

    # updates: each writer's memory changed by another, by the id or key that writer gave
    assert langmem.invoke({"action": "update", "id": our_id, "content": "User lives in Porto"}).endswith(our_id)
    assert ours(content="User prefers light mode", action="update", id=langmem_key, config=NO_CONFIG) == (
        f"updated memory {langmem_key}"
    )
    assert ours(content="User drinks black tea", action="update", id="tea", config=NO_CONFIG).endswith("tea")
    store.put(NS, langmem_key, {"content": "User prefers light mode, always"})
    ours(content="User Ana, 42", action="update", id="profile", config=NO_CONFIG)
    expected = {
        langmem_key: {"content": "User prefers light mode, always"},
        our_id: {"content": "User lives in Porto"},
        "tea": {"content": "User drinks black tea"},
        "profile": {"content": "User Ana, 42"},
    }
    seen_everywhere(store, expected)
    assert live_count(store.service) == 4  # no update made a second memory

    # deletes: each writer's memory deleted by another
    assert langmem.invoke({"action": "delete", "id": our_id}) == f"Deleted memory {our_id}"
    assert ours(action="delete", id=langmem_key, config=NO_CONFIG) == f"Deleted memory {langmem_key}"
    assert ours(action="delete", id="profile", config=NO_CONFIG) == "Deleted memory profile"
    store.delete(NS, "tea")
    seen_everywhere(store, {})
    for key in (langmem_key, our_id, "tea", "profile"):
        assert store.get(NS, key) is None
    assert live_count(store.service) == 0

    # the product's deletes are soft (restorable); a put of a deleted key writes a new item
    restored = store.service.restore(our_id).unwrap().memory
    assert store.get(NS, our_id).value == {"content": restored.content}  # type: ignore[union-attr]
    store.put(NS, "profile", {"name": "Ana"})
    assert store.get(NS, "profile").value == {"name": "Ana"}  # type: ignore[union-attr]
