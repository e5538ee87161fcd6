"""MCP by the spec, through the official client in-process: every tool declares an output schema and answers
structured content that validates against it, bad cursors are -32602, annotations are complete, and spec 002's
argument names (get_memory / update_memory with a path) work beside path_or_id."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, Tool

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.mcp.server import TOOL_NAMES, build_mcp_server
from agent_memory.entrypoints.settings import load_settings

LONG_AGO = datetime(2001, 1, 1, tzinfo=UTC)


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


# one call of every tool, in an order where each finds what it needs; the client itself checks each answer
# against the tool's output schema, and the test checks it again with jsonschema
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("create_store", {"name": "other"}),
    (
        "add_memory",
        {
            "path": "notes/editor",
            "content": "prefers vim",
            "tags": ["tools"],
            "citations": ["a.py:1"],
            "decay_policy": "reinforceable",
        },
    ),
    ("add_memory", {"path": "notes/spare", "content": "spare"}),
    ("add_memory", {"path": "notes/later", "content": "for a while", "expires_at": "2099-01-01T00:00:00Z"}),
    ("get_memory", {"path_or_id": "notes/editor"}),
    ("update_memory", {"path_or_id": "notes/editor", "content": "prefers neovim"}),
    ("reinforce_memory", {"id": "notes/editor"}),
    ("list_memories", {}),
    ("get_recent_memories", {}),
    ("search_memories", {"query": "neovim"}),
    ("move_memory", {"from": "notes/editor", "to": "notes/ide"}),
    ("delete_memory", {"path_or_id": "notes/ide"}),
    ("list_memories", {"include_deleted": True}),
    ("restore_memory", {"path_or_id": "notes/ide"}),
    ("find_duplicates", {"path_or_id": "notes/ide"}),
    ("remove_memory", {"path_or_id": "notes/spare"}),
    ("prune_memories", {"dry_run": True}),
    ("reindex_store", {}),
    ("list_stores", {}),
    ("create_category", {"path": "projects/web", "description": "work"}),
    ("set_category_description", {"path": "projects/web", "description": "my work"}),
    ("delete_category", {"path": "projects/web"}),
    ("manage_memory", {"content": "likes tea", "user_id": "u1"}),
    ("search_memory", {"query": "tea", "user_id": "u1"}),
]


def test_every_tool_declares_an_output_schema_and_answers_structured_content_that_fits_it(
    files_service: MemoryService,
) -> None:
    async def scenario(client: Client) -> tuple[list[Tool], list[tuple[str, CallToolResult]]]:
        tools = (await client.list_tools()).tools
        answers = [(name, await client.call_tool(name, arguments)) for name, arguments in CALLS]
        return tools, answers

    stale = Memory(id=str(uuid.uuid4()), content="stale", created_at=LONG_AGO, updated_at=LONG_AGO, expires_at=LONG_AGO)
    files_service.import_memories([stale]).unwrap()  # expired already: prune lists it (no door creates one so)
    tools, answers = with_client(files_service, scenario)
    schemas = {tool.name: tool.output_schema for tool in tools}
    assert sorted(schemas) == sorted(TOOL_NAMES) and len(schemas) == 21
    assert all(schema is not None and schema["type"] == "object" for schema in schemas.values())
    assert {name for name, _ in CALLS} == set(TOOL_NAMES)
    for name, answer in answers:
        text = answer.content[0].text  # type: ignore[union-attr]
        assert not answer.is_error, (name, text)
        assert isinstance(answer.structured_content, dict), name
        jsonschema.validate(answer.structured_content, schemas[name])  # type: ignore[arg-type]
    by_name = dict(answers)
    assert by_name["prune_memories"].structured_content["count"] == 1  # type: ignore[index]
    with_deleted = answers[CALLS.index(("list_memories", {"include_deleted": True}))][1].structured_content
    assert (
        with_deleted is not None
        and {"path": "notes/ide", "deleted": True}.items() <= with_deleted["memories"][0].items()
    )
    manage = by_name["manage_memory"].structured_content
    assert manage is not None and manage["action"] == "create" and manage["result"].endswith(manage["id"])
    search = by_name["search_memory"]
    assert search.structured_content == {"results": json.loads(search.content[0].text), "count": 1}  # type: ignore[union-attr]


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


def test_tools_list_carries_no_pydantic_titles(files_service: MemoryService) -> None:
    tools = with_client(files_service, lambda client: client.list_tools()).tools
    listed = json.dumps([tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools])
    assert '"title": "Path Or Id"' not in listed and "anyOf" not in listed


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
