"""Issue 30: the agent tools accept what LangMem's create_manage_memory_tool / create_search_memory_tool accept —
a LangGraph BaseStore (LangMem's semantics on it), a MemoryStore (the product itself) — and answer in LangMem's
shapes (key, value) beside spec 003's; structured `schema=` content comes back as an object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.langmem_tools import create_manage_memory_tool, create_search_memory_tool
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.settings import load_settings

CONFIG = {"configurable": {"user_id": "u-1"}}
NAMESPACE = ("memories", "{user_id}")


class Preference(BaseModel):
    topic: str
    liked: bool


@pytest.fixture
def files_service(tmp_path: Path) -> MemoryService:
    flags = {"data_dir": str(tmp_path / "data"), "backend": "files"}
    return build_service(load_settings(flags, {"HOME": str(tmp_path)}).unwrap(), embedder=HashingEmbedder()).unwrap()


def test_on_a_langgraph_base_store_the_tools_follow_langmem() -> None:
    store = InMemoryStore()
    manage = create_manage_memory_tool(NAMESPACE, store=store)
    search = create_search_memory_tool(NAMESPACE, store=store)
    key = manage(content="likes tea", config=CONFIG).removeprefix("created memory ")
    assert store.get(("memories", "u-1"), key).value == {"content": "likes tea"}  # type: ignore[union-attr]
    assert manage(content="likes green tea", action="update", id=key, config=CONFIG) == f"updated memory {key}"
    (hit,) = json.loads(search(query="tea", config=CONFIG))
    assert (hit["key"], hit["value"], hit["namespace"]) == (key, {"content": "likes green tea"}, ["memories", "u-1"])
    assert manage(content="new", action="update", id="unknown", config=CONFIG) == "updated memory unknown"  # upsert
    assert manage(action="delete", id="never-was", config=CONFIG) == "Deleted memory never-was"  # a no-op
    assert manage(action="delete", id=key, config=CONFIG) == f"Deleted memory {key}"
    assert store.get(("memories", "u-1"), key) is None


def test_a_memory_store_given_as_the_store_is_the_product_itself(files_service: MemoryService) -> None:
    store = MemoryStore(files_service)
    manage = create_manage_memory_tool(NAMESPACE, store=store)
    search = create_search_memory_tool(NAMESPACE, store=store)
    memory_id = manage(content="prefers dark mode", type="preference", config=CONFIG).removeprefix("created memory ")
    assert files_service.get(memory_id).unwrap().memory.namespace == ("memories", "u-1")
    (hit,) = json.loads(search(query="dark mode", filter={"category": "preference"}, config=CONFIG))
    assert hit["id"] == hit["key"] == memory_id and hit["value"] == {"content": "prefers dark mode"}


def test_structured_content_comes_back_as_an_object(files_service: MemoryService) -> None:
    manage = create_manage_memory_tool(NAMESPACE, service=files_service, schema=Preference)
    search = create_search_memory_tool(NAMESPACE, service=files_service)
    manage(content={"topic": "tea", "liked": True}, config=CONFIG)
    (hit,) = json.loads(search(query="tea", config=CONFIG))
    assert hit["value"] == {"content": {"topic": "tea", "liked": True}}
    on_store = create_manage_memory_tool(NAMESPACE, store=InMemoryStore(), schema=Preference)
    assert on_store(content='{"topic": "tea", "liked": false}', config=CONFIG).startswith("created memory ")


def test_a_store_that_is_neither_a_name_nor_a_base_store_is_refused() -> None:
    with pytest.raises(TypeError, match="BaseStore"):
        create_manage_memory_tool(store=42)
