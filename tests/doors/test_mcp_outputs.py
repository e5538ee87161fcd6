"""MCP by the spec, through the official client in-process: every tool declares an output schema and answers
structured content that validates against it, bad cursors are -32602, annotations are complete, and spec 002's
argument names (get_memory / update_memory with a path) work beside path_or_id."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, Tool

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.mcp.command_tools import tool_names, tool_specs
from agent_memory.entrypoints.mcp.server import build_mcp_server
from agent_memory.entrypoints.settings import load_settings
from tests.doors.examples import door_arguments, example, seeded
from tests.doors.long_note import LONG, QUERY, long_service, shows_the_last_part


@pytest.fixture
def files_service(tmp_path: Path) -> MemoryService:
    flags = {"data_dir": str(tmp_path / "data"), "backend": "files"}
    settings = load_settings(flags, {"HOME": str(tmp_path)}).unwrap()
    return build_service(settings, embedder=HashingEmbedder()).unwrap()


def with_client(service: MemoryService, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with Client(build_mcp_server(service, default_store="default")) as client:
            return await scenario(client)

    return anyio.run(run)


# the hand-written agent tools run no command of the table, so they have no example: their calls are here
AGENT_CALLS: dict[str, dict[str, Any]] = {
    "manage_memory": {"content": "likes tea", "user_id": "u1"},
    "search_memory": {"query": "tea", "user_id": "u1"},
}


def tool_call(name: str) -> dict[str, Any]:
    """The arguments of one call of a tool: its command's example (tests/doors/examples.py) by the tool's names."""
    if name in AGENT_CALLS:
        return AGENT_CALLS[name]
    spec = next(spec for spec in tool_specs() if spec.name == name)
    arguments = door_arguments(spec, example(spec.command))
    assert arguments is not None, f"the example of {spec.command.__name__} sets a field {name} leaves out"
    return arguments


def test_the_server_lists_every_tool_with_an_object_output_schema(service: MemoryService) -> None:
    tools = with_client(service, lambda client: client.list_tools()).tools
    schemas = {tool.name: tool.output_schema for tool in tools}
    assert [tool.name for tool in tools] == list(tool_names())
    assert all(schema is not None and schema["type"] == "object" for schema in schemas.values())


@pytest.mark.parametrize("name", tool_names())
def test_every_tool_answers_structured_content_that_fits_its_output_schema(name: str, service: MemoryService) -> None:
    """One call of each tool, its command's example on a seeded store; the client itself checks each answer
    against the tool's output schema, and the test checks it again with jsonschema."""

    async def scenario(client: Client) -> tuple[list[Tool], CallToolResult]:
        return (await client.list_tools()).tools, await client.call_tool(name, tool_call(name))

    tools, answer = with_client(seeded(service), scenario)
    schema = next(tool.output_schema for tool in tools if tool.name == name)
    text = answer.content[0].text  # type: ignore[union-attr]
    assert not answer.is_error, (name, text)
    assert isinstance(answer.structured_content, dict), name
    jsonschema.validate(answer.structured_content, schema)  # type: ignore[arg-type]
    assert [block.type for block in answer.content] == ["text"]
    assert json.loads(text) == answer.structured_content, name  # the MCP spec's SHOULD: the text is the same JSON
    if name == "prune_memories":
        assert answer.structured_content["count"] == 1
    if name == "list_memories":
        deleted = [memory for memory in answer.structured_content["memories"] if memory.get("deleted")]
        assert [memory["path"] for memory in deleted] == ["notes/old"]


def test_a_hit_found_by_a_part_of_a_long_memory_shows_that_part_in_structured_content(clock: FixedClock) -> None:
    """Issue 48: search_memories' matched_part (the part of a long memory that answered) fits the output schema."""

    async def scenario(client: Client) -> tuple[list[Tool], CallToolResult]:
        return (await client.list_tools()).tools, await client.call_tool("search_memories", {"query": QUERY})

    tools, answer = with_client(long_service(clock), scenario)
    schema = next(tool.output_schema for tool in tools if tool.name == "search_memories")
    assert isinstance(answer.structured_content, dict) and not answer.is_error
    jsonschema.validate(answer.structured_content, schema)  # type: ignore[arg-type]
    hits = answer.structured_content["results"]
    assert hits[0]["content"] == LONG and shows_the_last_part(hits[0]["matched_part"])
    assert all(hit["matched_part"] is None for hit in hits[1:])


def test_the_agent_tools_answer_structured_content(files_service: MemoryService) -> None:
    async def scenario(client: Client) -> list[CallToolResult]:
        return [await client.call_tool(name, arguments) for name, arguments in AGENT_CALLS.items()]

    manage, search = with_client(files_service, scenario)
    assert manage.structured_content is not None and manage.structured_content["action"] == "create"
    assert manage.structured_content["result"] == f"created memory {manage.structured_content['id']}"  # spec 003's
    assert json.loads(manage.content[0].text) == manage.structured_content  # type: ignore[union-attr]
    assert search.structured_content is not None and search.structured_content["count"] == 1
    assert json.loads(search.content[0].text) == search.structured_content  # type: ignore[union-attr]


def test_an_output_schema_refuses_an_answer_of_another_shape(files_service: MemoryService) -> None:
    tools = with_client(files_service, lambda client: client.list_tools()).tools
    schema = next(tool.output_schema for tool in tools if tool.name == "get_memory")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "x", "deleted": True}, schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["list_tools", "list_prompts", "list_resources", "list_resource_templates"])
def test_a_cursor_the_server_never_gave_is_invalid_params(files_service: MemoryService, method: str) -> None:
    async def scenario(client: Client) -> MCPError:
        await getattr(client, method)()  # without a cursor: the one page
        with pytest.raises(MCPError) as raised:
            await getattr(client, method)(cursor="not-a-cursor")
        return raised.value

    refused = with_client(files_service, scenario)
    assert refused.error.code == INVALID_PARAMS and "cursor" in refused.error.message


def test_every_tool_carries_every_hint(files_service: MemoryService) -> None:
    tools = {tool.name: tool for tool in with_client(files_service, lambda client: client.list_tools()).tools}
    for tool in tools.values():
        hints = tool.annotations
        assert hints is not None and hints.title
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
        assert hints.open_world_hint is False
        assert not (hints.read_only_hint and hints.destructive_hint), tool.name
    assert tools["search_memories"].annotations.idempotent_hint is True  # type: ignore[union-attr]
    assert tools["add_memory"].annotations.idempotent_hint is False  # type: ignore[union-attr]


def type_lists(node: Any, where: str = "") -> list[str]:
    """Where a schema says `"type": [X, "null"]` (a list of types) instead of an `anyOf`."""
    if isinstance(node, list):
        return [found for n, item in enumerate(node) for found in type_lists(item, f"{where}[{n}]")]
    if not isinstance(node, dict):
        return []
    here = [where] if isinstance(node.get("type"), list) else []
    return here + [found for key, value in node.items() for found in type_lists(value, f"{where}.{key}")]


def test_tools_list_carries_no_pydantic_titles_and_no_type_lists(files_service: MemoryService) -> None:
    tools = with_client(files_service, lambda client: client.list_tools()).tools
    dumped = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
    assert '"title": "Path Or Id"' not in json.dumps(dumped)
    assert type_lists(dumped) == []  # nullable types are anyOf [X, null], which every client reads
    assert type_lists({"t": [{"type": ["string", "null"]}]}) == [".t[0]"]  # the check finds one
    update = next(tool for tool in dumped if tool["name"] == "update_memory")
    content = update["inputSchema"]["properties"]["content"]["anyOf"]
    assert [option["type"] for option in content] == ["string", "null"] and content[0]["maxLength"] > 0


@pytest.mark.parametrize("name", ["manage_memory", "search_memory"])
def test_the_agent_tools_state_their_namespace_rule_as_the_server_applies_it(
    name: str, files_service: MemoryService
) -> None:
    """namespace, or user_id, or org_id and agent_id: a call the schema admits is served, one it refuses is refused."""
    tools = with_client(files_service, lambda client: client.list_tools()).tools
    schema = next(tool.input_schema for tool in tools if tool.name == name)
    base = AGENT_CALLS[name] | {"user_id": None}
    calls = [
        ({"namespace": ["team", "t1"]}, True),
        ({"user_id": "u2"}, True),
        ({"org_id": "acme", "agent_id": "a1"}, True),
        ({}, False),
        ({"org_id": "acme"}, False),
        ({"agent_id": "a1"}, False),
        ({"user_id": None}, False),
    ]
    for extra, admitted in calls:
        arguments = {key: value for key, value in (base | extra).items() if key in extra or value is not None}
        valid = jsonschema.Draft202012Validator(schema).is_valid(arguments)
        answer = with_client(files_service, lambda client, a=arguments: client.call_tool(name, a))
        assert (valid, not answer.is_error) == (admitted, admitted), (arguments, answer.content)


def test_get_and_update_take_a_path_or_an_id_as_spec_002_calls_them(files_service: MemoryService) -> None:
    async def scenario(client: Client) -> list[CallToolResult]:
        added = await client.call_tool("add_memory", {"path": "notes/a", "content": "one"})
        memory_id = added.structured_content["id"]  # type: ignore[index]
        return [
            await client.call_tool("get_memory", {"path": "notes/a"}),
            await client.call_tool("update_memory", {"path": "notes/a", "content": "two"}),
            await client.call_tool("get_memory", {"id": memory_id}),
            await client.call_tool("get_memory", {"path_or_id": "notes/a"}),
            await client.call_tool("get_memory", {}),
            await client.call_tool("get_memory", {"path": "notes/a", "id": "other"}),
            await client.call_tool("delete_memory", {"id": memory_id}),
        ]

    got, updated, by_id, by_either, neither, both, deleted = with_client(files_service, scenario)
    assert got.structured_content["content"] == "one"  # type: ignore[index]
    assert updated.structured_content["content"] == "two"  # type: ignore[index]
    assert by_id.structured_content["content"] == by_either.structured_content["content"] == "two"  # type: ignore[index]
    for refused in (neither, both):
        assert refused.is_error and "exactly one of path_or_id or path or id" in refused.content[0].text  # type: ignore[union-attr]
    assert deleted.structured_content["deleted"] is True  # type: ignore[index]
