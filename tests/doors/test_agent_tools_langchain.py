"""Issue 15 point 4 for the agent tools: typed LangChain tools whose mistakes come back as error ToolMessages,
native async variants, LangMem's `schema=` and the runtime config read inside a langchain-core run."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from agent_memory.domain.context import Context
from agent_memory.domain.model import Memory
from agent_memory.domain.namespaces import ConfigurationError
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.langmem_tools import (
    MemoryTool,
    MemoryToolError,
    create_manage_memory_tool,
    create_search_memory_tool,
    to_langchain_tools,
)

pytest.importorskip("langchain_core")
pydantic = pytest.importorskip("pydantic")

from langchain_core.messages import ToolMessage  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

U1 = {"configurable": {"user_id": "u-1"}}


def call(name: str, args: dict[str, Any], call_id: str = "call-1") -> dict[str, Any]:
    """A tool call as a LangGraph ToolNode hands it to the tool."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def created_id(answer: str) -> str:
    assert answer.startswith("created memory "), answer
    return answer.removeprefix("created memory ")


def stored(service: MemoryService, memory_id: str) -> Memory:
    return service.get(memory_id).unwrap().memory


@pytest.fixture
def lc_manage(service: MemoryService) -> Any:
    (tool,) = to_langchain_tools(create_manage_memory_tool(service=service))
    return tool


@pytest.fixture
def lc_search(service: MemoryService) -> Any:
    (tool,) = to_langchain_tools(create_search_memory_tool(service=service))
    return tool


# --- typed schemas: a model's mistakes are error ToolMessages, never an aborted run --------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"content": "x", "expiry": "2027-01-01"}, "unknown argument 'expiry'"),
        ({"content": "x", "tag": ["ui"]}, "did you mean 'tags'"),
        ({"content": "x", "action": "upsert"}, "action"),
        ({"content": 5}, "content"),
        ({"content": "x", "tags": "ui"}, "tags"),
    ],
)
def test_a_bad_manage_call_is_an_error_tool_message(
    lc_manage: Any, service: MemoryService, args: dict[str, Any], expected: str
) -> None:
    message = lc_manage.invoke(call("manage_memory", args), config=U1)
    assert isinstance(message, ToolMessage)
    assert message.status == "error" and message.tool_call_id == "call-1"
    assert message.content.startswith("INVALID_INPUT: ") and expected in message.content
    assert service.list().unwrap().memories == ()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": "lots"}, "limit"),
        ({"query": "x", "offset": -1}, "offset"),
        ({"query": "x", "filter": ["type", "fact"]}, "filter"),
        ({"limit": 3}, "query"),
        ({"query": "x", "namespace": ["user", "u-2"]}, "unknown argument 'namespace'"),
    ],
)
def test_a_bad_search_call_is_an_error_tool_message(lc_search: Any, args: dict[str, Any], expected: str) -> None:
    message = lc_search.invoke(call("search_memory", args), config=U1)
    assert message.status == "error" and expected in message.content


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"content": "x", "action": "update"}, "INVALID_INPUT: update needs the id"),
        ({"action": "create", "content": "   "}, "INVALID_INPUT: Content is empty"),
        ({"action": "update", "id": "3f2b0c1e-0000-4000-8000-000000000000", "content": " "}, "INVALID_INPUT"),
    ],
)
def test_a_call_the_service_refuses_is_an_error_tool_message(
    lc_manage: Any, args: dict[str, Any], expected: str
) -> None:
    message = lc_manage.invoke(call("manage_memory", args), config=U1)
    assert message.status == "error" and message.content.startswith(expected)


def test_a_search_the_service_refuses_is_an_error_tool_message(service: MemoryService) -> None:
    (tool,) = to_langchain_tools(create_search_memory_tool(service=service, response_format="content_and_artifact"))
    message = tool.invoke(call("search_memory", {"query": "x", "filter": {"colour": "red"}}), config=U1)
    assert message.status == "error" and "Unknown filter field 'colour'" in message.content


def test_a_missing_tenant_key_still_stops_the_run(lc_manage: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"needs config key 'agent_id', but the config has 'org_id' \("):
        lc_manage.invoke(call("manage_memory", {"content": "x"}), config={"configurable": {"org_id": "acme"}})


def test_the_argument_schemas_are_pydantic_models_that_follow_actions_permitted(service: MemoryService) -> None:
    (tool,) = to_langchain_tools(create_manage_memory_tool(actions_permitted=("create", "update"), service=service))
    assert issubclass(tool.args_schema, pydantic.BaseModel)
    schema = tool.tool_call_schema.model_json_schema()
    assert schema["properties"]["action"]["enum"] == ["create", "update"]
    assert schema["properties"]["action"]["default"] == "create"
    assert set(schema["properties"]) == {"content", "action", "id", "type", "tags", "on_duplicate"}
    assert "config" not in schema["properties"] and schema.get("required", []) == []
    assert "delete" not in tool.description.lower()
    message = tool.invoke(call("manage_memory", {"content": "x", "action": "delete"}), config=U1)
    assert message.status == "error" and "'create' or 'update'" in message.content


def test_a_typed_call_without_action_does_the_first_permitted_action(service: MemoryService) -> None:
    memory_id = created_id(create_manage_memory_tool(service=service)(content="old", config=U1))
    (updater,) = to_langchain_tools(create_manage_memory_tool(actions_permitted=("update",), service=service))
    message = updater.invoke(call("manage_memory", {"content": "new", "id": memory_id}), config=U1)
    assert message.status == "success" and message.content == f"updated memory {memory_id}"
    assert stored(service, memory_id).content == "new"


def test_a_good_typed_call_sets_type_and_tags(lc_manage: Any, lc_search: Any, service: MemoryService) -> None:
    args = {"content": "User prefers dark mode", "type": "preference", "tags": ["ui"]}
    message = lc_manage.invoke(call("manage_memory", args), config=U1)
    assert message.status == "success"
    memory = stored(service, created_id(message.content))
    assert (memory.type, memory.tags, memory.namespace) == ("preference", ("ui",), ("user", "u-1"))
    found = lc_search.invoke(call("search_memory", {"query": "dark", "filter": {"category": "preference"}}), config=U1)
    assert [hit["id"] for hit in json.loads(found.content)] == [memory.id]


# --- async -----------------------------------------------------------------------------------------------


class ThreadSpy:
    """Records the thread each command is dispatched on (dispatch reads the service's context there), then runs it
    on the real service."""

    def __init__(self, service: MemoryService) -> None:
        self.service = service
        self.threads: list[threading.Thread] = []

    @property
    def context(self) -> Context:
        self.threads.append(threading.current_thread())
        return self.service.context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.service, name)


def test_async_variants_run_the_service_in_a_worker_thread(service: MemoryService) -> None:
    spy = ThreadSpy(service)
    manage = create_manage_memory_tool(service=spy)  # type: ignore[arg-type]
    search = create_search_memory_tool(service=spy)  # type: ignore[arg-type]
    assert manage.coroutine.__name__ == "amanage_memory" and search.coroutine.__name__ == "asearch_memory"

    async def scenario() -> tuple[str, str]:
        made = await manage.acall(content="async fact about tea", config=U1)
        found = await search.ainvoke({"query": "tea"}, U1)
        return made, found

    made, found = asyncio.run(scenario())
    assert [hit["id"] for hit in json.loads(found)] == [created_id(made)]
    assert len(spy.threads) == 2 and threading.main_thread() not in spy.threads


def test_async_variants_raise_the_same_errors(service: MemoryService) -> None:
    manage = create_manage_memory_tool(service=service)
    with pytest.raises(MemoryToolError, match="update needs the id"):
        asyncio.run(manage.acall(content="x", action="update", config=U1))
    with pytest.raises(ConfigurationError):
        asyncio.run(manage.acall(content="x", config={}))


def test_langchain_tools_have_a_native_coroutine(service: MemoryService) -> None:
    spy = ThreadSpy(service)
    lc_manage, lc_search = to_langchain_tools(
        create_manage_memory_tool(service=spy),  # type: ignore[arg-type]
        create_search_memory_tool(service=spy, response_format="content_and_artifact"),  # type: ignore[arg-type]
    )
    assert lc_manage.coroutine is not None and lc_search.coroutine is not None

    async def scenario() -> tuple[Any, Any, Any]:
        made = await lc_manage.ainvoke(call("manage_memory", {"content": "async lc fact"}), config=U1)
        bad = await lc_manage.ainvoke(call("manage_memory", {"content": "x", "expiry": "soon"}), config=U1)
        found = await lc_search.ainvoke(call("search_memory", {"query": "async lc fact"}), config=U1)
        return made, bad, found

    made, bad, found = asyncio.run(scenario())
    assert made.status == "success" and bad.status == "error" and "expiry" in bad.content
    assert [m.id for m in found.artifact] == [created_id(made.content)]
    assert threading.main_thread() not in spy.threads and len(spy.threads) == 2


# --- schema= (LangMem's structured memories) -------------------------------------------------------------


class Preference(pydantic.BaseModel):  # type: ignore[name-defined,misc]
    topic: str
    value: str


def test_schema_validates_content_and_stores_it_as_json(service: MemoryService) -> None:
    manage = create_manage_memory_tool(schema=Preference, service=service)
    memory_id = created_id(manage(content={"topic": "ui", "value": "dark"}, config=U1))
    assert json.loads(stored(service, memory_id).content) == {"topic": "ui", "value": "dark"}
    manage(action="update", id=memory_id, content=Preference(topic="ui", value="light"), config=U1)
    assert json.loads(stored(service, memory_id).content) == {"topic": "ui", "value": "light"}
    with pytest.raises(MemoryToolError, match=r"INVALID_INPUT: content does not match Preference.*value"):
        manage(content={"topic": "ui"}, config=U1)


def test_a_typed_tool_with_a_schema_asks_for_the_structure(service: MemoryService) -> None:
    (tool,) = to_langchain_tools(create_manage_memory_tool(schema=Preference, service=service))
    schema = json.dumps(tool.tool_call_schema.model_json_schema())
    assert '"topic"' in schema and '"value"' in schema
    good = tool.invoke(call("manage_memory", {"content": {"topic": "tabs", "value": "spaces"}}), config=U1)
    assert json.loads(stored(service, created_id(good.content)).content) == {"topic": "tabs", "value": "spaces"}
    bad = tool.invoke(call("manage_memory", {"content": "just text"}), config=U1)
    assert bad.status == "error" and "content" in bad.content


def test_the_default_schema_is_plain_text(service: MemoryService) -> None:
    manage = create_manage_memory_tool(schema=str, service=service)
    assert stored(service, created_id(manage(content="plain", config=U1))).content == "plain"


# --- the runtime config of the run the tool is called in (LangGraph's get_config()) -----------------------


def test_a_plain_tool_called_inside_a_run_reads_its_config(service: MemoryService) -> None:
    manage = create_manage_memory_tool(namespace=("{user_id}", "memories"), service=service)
    search = create_search_memory_tool(namespace=("{user_id}", "memories"), service=service)
    remember = RunnableLambda(lambda text: manage(content=text))
    memory_id = created_id(remember.invoke("inside a graph node", config={"configurable": {"user_id": "u-9"}}))
    assert stored(service, memory_id).namespace == ("u-9", "memories")
    recall = RunnableLambda(lambda query: asyncio.run(search.acall(query=query)))
    found = recall.invoke("graph node", config={"configurable": {"user_id": "u-9"}})
    assert [hit["id"] for hit in json.loads(found)] == [memory_id]
    with pytest.raises(ConfigurationError):
        manage(content="outside any run")  # no config given and none around: still an error


def test_an_explicit_config_wins_over_the_run_config(service: MemoryService) -> None:
    manage = create_manage_memory_tool(service=service)
    node = RunnableLambda(lambda text: manage(content=text, config={"user_id": "explicit"}))
    memory_id = created_id(node.invoke("x", config={"configurable": {"user_id": "ambient"}}))
    assert stored(service, memory_id).namespace == ("user", "explicit")


def test_the_plain_tool_objects_stay_plain(service: MemoryService) -> None:
    tool = create_manage_memory_tool(service=service)
    assert isinstance(tool, MemoryTool) and isinstance(tool.args_schema, dict)


def test_the_plain_tools_load_neither_langchain_nor_pydantic() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; from agent_memory.entrypoints.agents.langmem_tools import create_manage_memory_tool as m, "
        "create_search_memory_tool as s; m(); s();"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('langchain_core', 'pydantic')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
