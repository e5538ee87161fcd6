"""Issue 30: the flows of LangMem's own tool examples (the docstrings of langmem's create_manage_memory_tool and
create_search_memory_tool, the parts that need no LLM) run with this product's tools in LangMem's place, inside
a LangGraph `@entrypoint` whose store is LangGraph's InMemoryStore or this product's MemoryStore. Where the
example has an LLM choose a tool call, the test makes that call itself; the embeddings are a tiny local function
instead of OpenAI's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.func")

from langgraph.config import get_config, get_store
from langgraph.func import entrypoint
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from pydantic import BaseModel

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.agents.langmem_tools import create_manage_memory_tool, create_search_memory_tool
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.settings import load_settings

USER = "123e4567-e89b-12d3-a456-426614174000"
CONFIG = {"configurable": {"langgraph_user_id": USER}}


def letters(texts: list[str]) -> list[list[float]]:
    """Embeddings small enough to check by eye: how often each letter a–z occurs."""
    return [[float(text.lower().count(chr(ord("a") + n))) for n in range(26)] for text in texts]


@pytest.fixture(params=["in-memory", "memory-store"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BaseStore:
    if request.param == "in-memory":
        return InMemoryStore(index={"dims": 26, "embed": letters})
    flags = {"data_dir": str(tmp_path / "data"), "backend": "files"}
    service = build_service(load_settings(flags, {"HOME": str(tmp_path)}).unwrap(), embedder=HashingEmbedder())
    return MemoryStore(service.unwrap())


def test_the_manage_example_creates_then_updates_in_the_graphs_store(store: BaseStore) -> None:
    memory_tool = create_manage_memory_tool(namespace=("project_memories", "{langgraph_user_id}"))

    @entrypoint(store=store)
    async def workflow(state: dict[str, Any], *, previous: Any = None) -> Any:
        result = await memory_tool.ainvoke(state)
        return entrypoint.final(value=result, save={})

    created = asyncio.run(
        workflow.ainvoke({"content": "Team prefers to use Python for backend development"}, config=CONFIG)
    )
    assert created.startswith("created memory ")
    memory_id = created.removeprefix("created memory ")
    update = {
        "id": memory_id,
        "content": "Team uses Python for backend and TypeScript for frontend",
        "action": "update",
    }
    assert asyncio.run(workflow.ainvoke(update, config=CONFIG)) == f"updated memory {memory_id}"

    search_tool = create_search_memory_tool(
        namespace=("project_memories", "{langgraph_user_id}"), response_format="content_and_artifact"
    )

    @entrypoint(store=store)
    async def recall(state: dict[str, Any], *, previous: Any = None) -> Any:
        memories, _ = await search_tool.ainvoke({"query": "Python preferences", "limit": 5})
        return entrypoint.final(value=memories, save={})

    (hit,) = json.loads(asyncio.run(recall.ainvoke({}, config=CONFIG)))
    assert hit["key"] == memory_id and hit["namespace"] == ["project_memories", USER]
    assert hit["value"] == {"content": "Team uses Python for backend and TypeScript for frontend"}
    other_user = {"configurable": {"langgraph_user_id": "someone-else"}}
    assert json.loads(asyncio.run(recall.ainvoke({}, config=other_user))) == []


def read_back(store: BaseStore, namespace: tuple[str, ...]) -> list[Any]:
    """What LangMem's example prompt lists with store.search(namespace): on a MemoryStore too, the memories the
    tools wrote are its items (decision 25)."""
    return [item.value for item in store.search(namespace)]


def test_the_agent_prompt_reads_what_the_tool_wrote_through_the_graphs_store(store: BaseStore) -> None:
    """The create_react_agent example: the tool writes, the prompt lists the namespace with get_store().search."""
    tool = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    def prompt() -> list[str]:
        config = get_config()
        memories = get_store().search(("memories", config["configurable"]["langgraph_user_id"]))
        return [item.value["content"] for item in memories]

    @entrypoint(store=store)
    def turn(content: str, *, previous: Any = None) -> Any:
        tool.invoke({"content": content})  # the call the model makes in the example
        return entrypoint.final(value=prompt(), save={})

    liked = "We've decided we like golang more than python for backend work"
    assert turn.invoke(liked, config=CONFIG) == [liked]


class UserProfile(BaseModel):
    name: str
    age: int | None = None
    recent_memories: list[str] = []
    preferences: dict[str, Any] | None = None


def test_the_profile_example_keeps_one_structured_item_updated(store: BaseStore) -> None:
    namespace = ("memories", "{langgraph_user_id}", "user_profile")
    tool = create_manage_memory_tool(namespace=namespace, schema=UserProfile, actions_permitted=["create", "update"])

    @entrypoint(store=store)
    def turn(call: dict[str, Any], *, previous: Any = None) -> Any:
        return entrypoint.final(value=tool.invoke(call), save={})

    first = {"name": "User", "age": 60, "recent_memories": ["Started programming 5 days ago"]}
    memory_id = turn.invoke({"content": first}, config=CONFIG).removeprefix("created memory ")
    birthday = {**first, "age": 61, "preferences": {"programming_experience": "5 days"}}
    assert turn.invoke({"content": birthday, "action": "update", "id": memory_id}, config=CONFIG).endswith(memory_id)
    with pytest.raises(Exception, match="delete"):
        turn.invoke({"action": "delete", "id": memory_id}, config=CONFIG)

    (value,) = read_back(store, ("memories", USER, "user_profile"))
    assert UserProfile.model_validate(value["content"]) == UserProfile.model_validate(birthday)
