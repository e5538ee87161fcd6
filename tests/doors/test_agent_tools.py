"""The agent tools of spec 003 (decisions 16–18) over in-memory fakes: manage, search, namespaces, LangChain."""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from typing import Any

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.dispatch import HANDLERS
from agent_memory.domain.model import Memory
from agent_memory.domain.namespaces import ConfigurationError
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents import langmem_tools as agent_tools
from agent_memory.entrypoints.agents.langmem_tools import (
    MemoryTool,
    MemoryToolError,
    create_manage_memory_tool,
    create_search_memory_tool,
    to_langchain_tools,
)
from tests.doors.long_note import LONG, QUERY, long_service, shows_the_last_part
from tests.isolation import empty_config

U1 = {"user_id": "u-1"}
U2 = {"user_id": "u-2"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
FACT_KEYS = {"namespace", "id", "content", "metadata", "created_at", "updated_at", "score", "key", "value"}


@pytest.fixture
def manage(service: MemoryService) -> MemoryTool:
    return create_manage_memory_tool(service=service)


@pytest.fixture
def search(service: MemoryService) -> MemoryTool:
    return create_search_memory_tool(service=service)


def created_id(answer: str) -> str:
    prefix = "created memory "
    assert answer.startswith(prefix), answer
    memory_id = answer.removeprefix(prefix)
    assert UUID.match(memory_id), memory_id
    return memory_id


def stored(service: MemoryService, memory_id: str) -> Memory:
    return service.get(memory_id).unwrap().memory


# --- manage_memory -------------------------------------------------------------------------------


def test_create_returns_created_memory_with_a_fresh_id_in_the_resolved_namespace(
    manage: MemoryTool, service: MemoryService
) -> None:
    memory_id = created_id(manage(content="User prefers dark mode", action="create", config={"user_id": "u-123"}))
    memory = stored(service, memory_id)
    assert memory.content == "User prefers dark mode"
    assert memory.namespace == ("user", "u-123")
    assert created_id(manage(content="another fact", config=U1)) != memory_id  # create is the default action


def test_update_returns_updated_memory_and_changes_the_content(manage: MemoryTool, service: MemoryService) -> None:
    memory_id = created_id(manage(content="User likes tea", config=U1))
    assert (
        manage(content="User likes coffee", action="update", id=memory_id, config=U1) == f"updated memory {memory_id}"
    )
    assert stored(service, memory_id).content == "User likes coffee"


def test_delete_is_the_soft_delete(manage: MemoryTool, search: MemoryTool, service: MemoryService) -> None:
    memory_id = created_id(manage(content="temporary parking spot B7", config=U1))
    assert manage(action="delete", id=memory_id, config=U1) == f"Deleted memory {memory_id}"
    assert service.get(memory_id).failure().code.value == "MEMORY_NOT_FOUND"
    assert "B7" not in search(query="parking spot B7", config=U1)
    store = service.catalog.open("default", create=False).unwrap()
    (kept,) = store.get([memory_id]).unwrap()  # still stored, flagged (decision 13)
    assert kept.deleted and kept.deleted_at is not None
    with pytest.raises(ValueError, match="INVALID_OPERATION"):
        manage(action="delete", id=memory_id, config=U1)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"content": "x", "action": "update"}, "update needs the id"),
        ({"action": "delete"}, "delete needs the id"),
        ({"content": "x", "action": "create", "id": "3f2b0c1e-0000-4000-8000-000000000000"}, "takes no id"),
        ({"action": "create"}, "create needs content"),
        ({"action": "update", "id": "3f2b0c1e-0000-4000-8000-000000000000"}, "update needs content"),
        ({"content": "x", "action": "destroy"}, "Unknown action 'destroy'"),
        ({"content": "   ", "action": "create"}, "INVALID_INPUT: Content is empty"),
    ],
)
def test_wrong_calls_raise_value_error_with_a_code(
    manage: MemoryTool, arguments: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValueError, match=expected) as caught:
        manage(**arguments, config=U1)
    assert isinstance(caught.value, MemoryToolError)
    assert re.match(r"^[A-Z_]+: ", str(caught.value))


def test_actions_permitted_limits_the_tool(service: MemoryService) -> None:
    tool = create_manage_memory_tool(actions_permitted=("create", "update"), service=service)
    memory_id = created_id(tool(content="keep me", config=U1))
    with pytest.raises(ValueError, match="not permitted"):
        tool(action="delete", id=memory_id, config=U1)
    assert stored(service, memory_id).content == "keep me"
    assert tool.args_schema["properties"]["action"]["enum"] == ["create", "update"]
    assert "Permitted actions: create, update (default create)." in tool.description
    assert "delete" not in tool.description.lower()


def test_a_call_without_action_creates_when_permitted_else_does_the_first_permitted(service: MemoryService) -> None:
    creator = create_manage_memory_tool(service=service)
    memory_id = created_id(creator(content="old", config=U1))
    updater = create_manage_memory_tool(actions_permitted=("update", "create"), service=service)

    assert updater.args_schema["required"] == [] and updater.args_schema["properties"]["action"]["default"] == "create"
    assert stored(service, created_id(updater(content="new", config=U1))).content == "new"  # LangMem: create
    only_update = create_manage_memory_tool(actions_permitted=("update", "delete"), service=service)
    assert only_update(content="newer", id=memory_id, config=U1) == f"updated memory {memory_id}"
    deleter = create_manage_memory_tool(actions_permitted=("delete",), service=service)
    assert deleter(id=memory_id, config=U1) == f"Deleted memory {memory_id}"


def test_empty_or_unknown_actions_permitted_fail_at_construction(service: MemoryService) -> None:
    with pytest.raises(ValueError, match="empty"):
        create_manage_memory_tool(actions_permitted=(), service=service)
    with pytest.raises(ValueError, match="'erase'"):
        create_manage_memory_tool(actions_permitted=("create", "erase"), service=service)


def test_the_description_states_the_permitted_actions_then_the_custom_instructions(service: MemoryService) -> None:
    tool = create_manage_memory_tool(instructions="Only store facts about cooking.", service=service)
    assert tool.name == "manage_memory"
    permitted = tool.description.index("Permitted actions: create, update, delete (default create).")
    assert tool.description.index("Only store facts about cooking.") > permitted
    assert tool.description.endswith("Only store facts about cooking.")
    assert "Proactively" not in tool.description  # the custom instructions replace the default ones
    assert "Proactively" in create_manage_memory_tool(service=service).description
    renamed = create_manage_memory_tool(name="remember", service=service)
    assert renamed.name == "remember"


def test_a_create_retried_with_its_idempotency_key_names_the_first_memory(manage: MemoryTool) -> None:
    first = created_id(manage(content="User lives in Lyon", config=U1, idempotency_key="turn-7"))
    assert created_id(manage(content="User lives in Lyon", config=U1, idempotency_key="turn-7")) == first
    with pytest.raises(MemoryToolError, match="INVALID_OPERATION"):
        manage(content="User lives in Paris", config=U1, idempotency_key="turn-7")


def test_manage_schema_is_a_json_schema(manage: MemoryTool) -> None:
    schema = manage.args_schema
    fields = {"content", "action", "id", "type", "tags", "on_duplicate", "idempotency_key"}
    assert schema["type"] == "object" and set(schema["properties"]) == fields
    assert schema["properties"]["action"]["default"] == "create"
    assert schema["properties"]["on_duplicate"]["enum"] == ["keep", "skip", "update", None]
    json.dumps(schema)


# --- search_memory -------------------------------------------------------------------------------


def test_search_returns_a_json_list_of_facts(manage: MemoryTool, search: MemoryTool) -> None:
    memory_id = created_id(manage(content="User has a preference for dark mode", config=U1))
    created_id(manage(content="User lives in Lisbon", config=U1))
    answer = search(query="preference for dark mode", limit=10, config=U1)
    assert isinstance(answer, str)
    facts = json.loads(answer)
    assert isinstance(facts, list) and len(facts) == 2
    assert all(set(fact) == FACT_KEYS for fact in facts)
    best = facts[0]
    assert best["id"] == memory_id and best["namespace"] == ["user", "u-1"]
    assert best["content"] == "User has a preference for dark mode"
    assert best["created_at"].endswith("Z") and isinstance(best["score"], float)
    assert {"type", "tags", "citations", "path", "confidence", "relevance"} <= set(best["metadata"])
    assert 0.0 <= best["metadata"]["relevance"] <= 1.0
    assert facts[0]["score"] >= facts[1]["score"]


def test_a_fact_found_by_a_part_of_a_long_memory_shows_that_part(clock: FixedClock) -> None:
    """Issue 48: the part of a long memory that answered is in the fact's metadata (None for a short memory)."""
    search = create_search_memory_tool(service=long_service(clock, ("user", "u-1")))
    facts = json.loads(search(query=QUERY, limit=10, config=U1))
    assert facts[0]["content"] == LONG and shows_the_last_part(facts[0]["metadata"]["matched_part"])
    assert all(fact["metadata"]["matched_part"] is None for fact in facts[1:])


def test_search_limit_and_offset_page_through_results(manage: MemoryTool, search: MemoryTool) -> None:
    for n in range(5):
        manage(content=f"note number {n} about gardening", config=U1)
    everything = [f["id"] for f in json.loads(search(query="gardening note", limit=5, config=U1))]
    assert len(everything) == 5
    page = [f["id"] for f in json.loads(search(query="gardening note", limit=2, offset=1, config=U1))]
    assert page == everything[1:3]
    assert json.loads(search(query="gardening note", limit=2, offset=10, config=U1)) == []


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (-1, 0), (2, -1), (1000, 1), ("5", 0), (True, 0)])
def test_bad_limit_or_offset_is_a_value_error(search: MemoryTool, limit: Any, offset: Any) -> None:
    with pytest.raises(ValueError, match="INVALID_INPUT"):
        search(query="x", limit=limit, offset=offset, config=U1)


def test_an_empty_query_is_a_value_error(search: MemoryTool) -> None:
    with pytest.raises(ValueError, match="INVALID_INPUT: The search query is empty"):
        search(query="  ", config=U1)


def test_content_and_artifact_returns_the_json_and_the_domain_memories(
    service: MemoryService, manage: MemoryTool
) -> None:
    memory_id = created_id(manage(content="User prefers tabs", config=U1))
    tool = create_search_memory_tool(response_format="content_and_artifact", service=service)
    assert tool.response_format == "content_and_artifact"
    content, artifact = tool(query="tabs", config=U1)
    assert [fact["id"] for fact in json.loads(content)] == [memory_id]
    assert len(artifact) == 1 and isinstance(artifact[0], Memory) and artifact[0].id == memory_id


def test_unknown_response_format_fails_at_construction(service: MemoryService) -> None:
    with pytest.raises(ValueError, match="response_format"):
        create_search_memory_tool(response_format="artifact", service=service)


def test_search_description_and_schema(service: MemoryService) -> None:
    tool = create_search_memory_tool(instructions="Search before answering.", service=service, name="recall")
    assert tool.name == "recall" and "Search before answering." in tool.description
    assert "before answering." not in tool.description.replace("Search before answering.", "")
    assert tool.args_schema["required"] == ["query"]
    assert set(tool.args_schema["properties"]) == {"query", "limit", "offset", "filter"}


# --- filters -------------------------------------------------------------------------------------


@pytest.fixture
def facts(service: MemoryService, clock: FixedClock) -> dict[str, str]:
    """Four memories in ("user", "u-1") with different types, tags, projects and ages."""
    made = {}
    for name, fields in {
        "dark": {"type": "preference", "tags": ("ui",), "project": "app"},
        "tabs": {"type": "preference", "tags": ("code", "style"), "project": "lib"},
        "lisbon": {"type": "fact", "tags": ("home",), "project": "app"},
        "deadline": {"type": "task", "tags": ("work", "code"), "project": "lib", "global_": True},
    }.items():
        command = CreateMemory(content=f"user memory about {name}", namespace=("user", "u-1"), **fields)  # type: ignore[arg-type]
        made[name] = service.create(command).unwrap().memory.id
        clock.advance(hours=1)
    return made


def found(search: MemoryTool, filter: dict[str, Any]) -> set[str]:
    return {fact["id"] for fact in json.loads(search(query="user memory about", filter=filter, config=U1))}


def test_category_filters_on_the_memory_type(search: MemoryTool, facts: dict[str, str]) -> None:
    assert found(search, {"category": "preference"}) == {facts["dark"], facts["tabs"]}
    assert found(search, {"type": "fact"}) == {facts["lisbon"]}
    assert found(search, {"category": "preference", "type": "fact"}) == set()


def test_tags_filter_is_list_membership(search: MemoryTool, facts: dict[str, str]) -> None:
    assert found(search, {"tags": "code"}) == {facts["tabs"], facts["deadline"]}
    assert found(search, {"tags": ["code", "style"]}) == {facts["tabs"]}
    assert found(search, {"tags": {"$in": ["ui", "home"]}}) == {facts["dark"], facts["lisbon"]}
    assert found(search, {"tags": {"$ne": "code"}}) == {facts["dark"], facts["lisbon"]}


def test_scalar_operators(search: MemoryTool, facts: dict[str, str]) -> None:
    assert found(search, {"project": {"$eq": "lib"}}) == {facts["tabs"], facts["deadline"]}
    assert found(search, {"project": {"$ne": "lib"}}) == {facts["dark"], facts["lisbon"]}
    assert found(search, {"type": {"$in": ["fact", "task"]}}) == {facts["lisbon"], facts["deadline"]}
    assert found(search, {"global": True}) == {facts["deadline"]}
    assert found(search, {"created_at": {"$gte": "2026-01-01T01:00:00Z"}}) == {
        facts["tabs"],
        facts["lisbon"],
        facts["deadline"],
    }
    assert found(search, {"created_at": {"$gt": "2026-01-01T01:00:00Z", "$lt": "2026-01-01T03:00:00Z"}}) == {
        facts["lisbon"]
    }
    assert found(search, {"created_at": {"$lte": "2026-01-01T00:00:00Z"}}) == {facts["dark"]}
    assert found(search, {"confidence": {"$gte": 1}}) == set(facts.values())
    assert found(search, {"path": None}) == set(facts.values())


def test_filters_still_fill_the_limit(service: MemoryService, search: MemoryTool) -> None:
    for n in range(30):
        kind = "rare" if n % 10 == 0 else "common"
        service.create(CreateMemory(content=f"shared words {n}", type=kind, namespace=("user", "u-1"), tags=(kind,)))
    hits = json.loads(search(query="shared words", limit=3, filter={"tags": {"$in": ["rare"]}}, config=U1))
    assert len(hits) == 3 and all(h["metadata"]["type"] == "rare" for h in hits)


@pytest.mark.parametrize(
    ("bad_filter", "expected"),
    [
        ({"colour": "red"}, "Unknown filter field 'colour'"),
        ({"type": {"$regex": "p.*"}}, "Unknown filter operator '\\$regex'"),
        ({"created_at": {"$gt": "yesterday"}}, "filter value 'yesterday' is not an ISO 8601 timestamp in the years"),
        ({"global": {"$gt": True}}, "compares text, numbers or timestamps"),
        ({"tags": {"$gt": "a"}}, "is a list"),
        ({"type": {"$in": "fact"}}, "needs a list"),
        ({"confidence": "high"}, "needs a number"),
        ({"type": {}}, "empty object"),
        (["type", "fact"], "filter must be an object"),
    ],
)
def test_bad_filters_are_value_errors(search: MemoryTool, bad_filter: Any, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        search(query="anything", filter=bad_filter, config=U1)


def test_plain_equalities_are_pushed_to_the_service_and_search_is_hybrid(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search commands the tool sends are recorded on their way to the real handler."""
    sent: list[SearchMemories] = []
    handler = HANDLERS[SearchMemories]
    monkeypatch.setitem(
        HANDLERS, SearchMemories, lambda context, command: sent.append(command) or handler(context, command)
    )
    tool = create_search_memory_tool(service=service)
    tool(query="anything", filter={"category": "preference", "tags": "ui", "global": False}, config=U1)
    command = sent[0]
    assert (command.type, command.tags, command.global_) == ("preference", ("ui",), False)
    assert command.namespace == ("user", "u-1")
    assert command.mode == "hybrid"


# --- namespaces: resolution at call time, templating, isolation -----------------------------------


def test_org_and_agent_config_resolve_to_the_org_namespace(manage: MemoryTool, service: MemoryService) -> None:
    memory_id = created_id(manage(content="team fact", config={"org_id": "acme", "agent_id": "alpha"}))
    assert stored(service, memory_id).namespace == ("org", "acme", "alpha")


def test_a_namespace_template_is_filled_per_call(service: MemoryService) -> None:
    tool = create_manage_memory_tool(namespace=("{user_id}", "memories"), service=service)
    first = created_id(tool(content="a", config={"user_id": "u-123"}))
    second = created_id(tool(content="b", config={"configurable": {"user_id": "u-456"}}))
    assert stored(service, first).namespace == ("u-123", "memories")
    assert stored(service, second).namespace == ("u-456", "memories")


def test_a_missing_config_key_raises_configuration_error_that_except_exception_misses(service: MemoryService) -> None:
    manage = create_manage_memory_tool(namespace=("{user_id}", "memories"), service=service)
    search = create_search_memory_tool(service=service)
    with pytest.raises(ConfigurationError, match=r"'user_id'.*'org_id'"):
        try:
            manage(content="x", config={"org_id": "acme"})
        except Exception:
            pytest.fail("ConfigurationError was caught by `except Exception`")
    with pytest.raises(ConfigurationError):
        search(query="x")
    assert service.list().unwrap().memories == ()


def test_tenants_never_see_each_others_memories(manage: MemoryTool, search: MemoryTool) -> None:
    mine = created_id(manage(content="my secret preference for tea", config=U1))
    theirs = created_id(manage(content="their secret preference for tea", config=U2))
    assert [f["id"] for f in json.loads(search(query="secret preference for tea", config=U1))] == [mine]
    assert [f["id"] for f in json.loads(search(query="secret preference for tea", config=U2))] == [theirs]


def test_a_tenant_can_filter_by_another_tenants_id_and_still_sees_nothing(
    manage: MemoryTool, search: MemoryTool
) -> None:
    theirs = created_id(manage(content="their secret", config=U2))
    assert json.loads(search(query="their secret", filter={"id": theirs}, config=U1)) == []


def test_a_tenant_cannot_update_or_delete_another_tenants_memory(manage: MemoryTool, service: MemoryService) -> None:
    theirs = created_id(manage(content="their fact", config=U2))
    # as in LangMem, an id the namespace does not hold is unknown: update creates, delete does nothing
    mine = created_id(manage(content="overwritten", action="update", id=theirs, config=U1))
    assert mine != theirs and stored(service, mine).namespace == ("user", "u-1")
    assert manage(action="delete", id=theirs, config=U1) == f"Deleted memory {theirs}"
    assert stored(service, theirs).content == "their fact" and not stored(service, theirs).deleted


def test_a_parent_namespace_search_includes_its_children(service: MemoryService) -> None:
    agent_tool = create_manage_memory_tool(service=service)
    alpha = created_id(
        agent_tool(content="alpha knows the deploy key rotation", config={"org_id": "acme", "agent_id": "a"})
    )
    beta = created_id(agent_tool(content="beta knows the deploy schedule", config={"org_id": "acme", "agent_id": "b"}))
    created_id(agent_tool(content="other org knows the deploy plan", config={"org_id": "other", "agent_id": "a"}))
    org_search = create_search_memory_tool(namespace=("org", "{org_id}"), service=service)
    hits = {f["id"] for f in json.loads(org_search(query="deploy", config={"org_id": "acme"}))}
    assert hits == {alpha, beta}
    org_manage = create_manage_memory_tool(namespace=("org", "{org_id}"), service=service)
    assert org_manage(content="updated by the org", action="update", id=alpha, config={"org_id": "acme"}).startswith(
        "updated memory"
    )


def test_expired_memories_are_not_found(service: MemoryService, clock: FixedClock, search: MemoryTool) -> None:
    service.create(
        CreateMemory(content="short lived note", namespace=("user", "u-1"), expires_at=clock.now() + timedelta(hours=1))
    )
    assert len(json.loads(search(query="short lived note", config=U1))) == 1
    clock.advance(hours=2)
    assert json.loads(search(query="short lived note", config=U1)) == []


def test_invoke_takes_the_arguments_and_the_config(manage: MemoryTool) -> None:
    assert manage.invoke({"content": "via invoke"}, {"user_id": "u-1"}).startswith("created memory ")


# --- the service built lazily from the settings ------------------------------------------------------


@pytest.fixture
def fresh_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_tools._Services, "_shared", None)


def test_without_a_service_the_tools_build_one_on_first_call(
    monkeypatch: pytest.MonkeyPatch, service: MemoryService, fresh_shared: None
) -> None:
    built: list[MemoryService] = []

    def build() -> MemoryService:
        built.append(service)
        return service

    monkeypatch.setattr(agent_tools, "_build_default_service", build)
    manage = create_manage_memory_tool()
    search = create_search_memory_tool()
    assert built == []
    created_id(manage(content="lazy", config=U1))
    assert len(json.loads(search(query="lazy", config=U1))) == 1
    assert len(built) == 1  # one service, shared by both tools


def test_bad_settings_raise_configuration_error_on_first_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, fresh_shared: None
) -> None:
    monkeypatch.setenv("MEMORY_CONFIG", empty_config(tmp_path))
    monkeypatch.setenv("MEMORY_BACKEND", "punched-cards")
    tool = create_manage_memory_tool()
    with pytest.raises(ConfigurationError, match="INVALID_INPUT: Unknown backend"):
        tool(content="x", config=U1)


# --- LangChain ---------------------------------------------------------------------------------------


def test_to_langchain_tools_without_langchain_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, manage: MemoryTool
) -> None:
    for module in ("langchain_core", "langchain_core.tools", "langchain_core.runnables"):
        monkeypatch.setitem(sys.modules, module, None)
    from agent_memory.entrypoints.extras import install_command

    with pytest.raises(ImportError, match=re.escape(install_command("langchain"))):  # right for this install
        to_langchain_tools(manage)


def test_to_langchain_tools_makes_structured_tools_that_receive_the_config(
    manage: MemoryTool, service: MemoryService
) -> None:
    pytest.importorskip("langchain_core")
    search = create_search_memory_tool(response_format="content_and_artifact", service=service)
    lc_manage, lc_search = to_langchain_tools(manage, search)
    assert (lc_manage.name, lc_search.name) == ("manage_memory", "search_memory")
    assert lc_manage.description == manage.description
    config = {"configurable": {"user_id": "u-7"}}
    memory_id = created_id(lc_manage.invoke({"content": "langchain fact", "action": "create"}, config=config))
    assert stored(service, memory_id).namespace == ("user", "u-7")
    call = {"name": "search_memory", "args": {"query": "langchain fact"}, "id": "call-1", "type": "tool_call"}
    message = lc_search.invoke(call, config=config)
    assert [f["id"] for f in json.loads(message.content)] == [memory_id]
    assert [m.id for m in message.artifact] == [memory_id]
    refused = lc_manage.invoke({"content": "x", "action": "explode"}, config=config)  # text, not a crash
    assert refused.startswith("INVALID_INPUT: action: Input should be 'create', 'update' or 'delete'")


# --- issue 15: manage_memory sets type and tags, so the README's filter example matches -----------------


def test_the_readme_example_finds_a_preference_made_with_manage_memory(service: MemoryService) -> None:
    manage = create_manage_memory_tool(namespace=("{user_id}", "memories"), service=service)
    search = create_search_memory_tool(namespace=("{user_id}", "memories"), service=service)
    config = {"configurable": {"user_id": "u-123"}}

    made = manage(content="User prefers dark mode", action="create", type="preference", tags=["ui"], config=config)
    found = json.loads(search(query="ui preferences", filter={"category": "preference"}, config=config))

    assert [hit["id"] for hit in found] == [created_id(made)]
    assert found[0]["metadata"]["type"] == "preference" and found[0]["metadata"]["tags"] == ["ui"]
    manage(action="update", id=created_id(made), content="User prefers light mode", tags=[], config=config)
    assert stored(service, created_id(made)).tags == () and stored(service, created_id(made)).type == "preference"


def test_non_string_content_is_a_type_error_not_empty_content(manage: MemoryTool) -> None:
    with pytest.raises(MemoryToolError, match="content must be a string, got int"):
        manage(content=5, config=U1)
    with pytest.raises(MemoryToolError, match="tags must be a list of strings"):
        manage(content="x", tags="ui", config=U1)


def test_manage_refuses_an_empty_namespace_as_search_does(service: MemoryService) -> None:
    for call in (
        lambda: agent_tools.run_manage(service, (), content="a memory of no tenant"),
        lambda: agent_tools.run_search(service, (), query="anything"),
    ):
        with pytest.raises(ValueError, match="empty namespace"):
            call()
    assert service.list().unwrap().memories == ()  # type: ignore[attr-defined]
