"""The MCP door in-process over fakes: tool results, error texts and argument validation (fast twin of e2e)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.mcp_server import TOOL_NAMES, build_mcp_server


class Server:
    def __init__(self, service: MemoryService) -> None:
        self.server = build_mcp_server(service, default_store="default")

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        async def run() -> CallToolResult:
            result = await self.server.call_tool(name, arguments)
            assert isinstance(result, CallToolResult)
            return result

        return anyio.run(run)

    def text(self, name: str, arguments: dict[str, Any], *, error: bool) -> str:
        result = self.call(name, arguments)
        text: str = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error is error, text
        return text


@pytest.fixture
def mcp(service: MemoryService) -> Server:
    return Server(service)


def test_every_tool_is_registered_in_order(mcp: Server) -> None:
    listed = anyio.run(mcp.server.list_tools)
    assert [tool.name for tool in listed] == list(TOOL_NAMES)


def test_success_carries_json_text_and_structured_content(mcp: Server) -> None:
    result = mcp.call("add_memory", {"path": "notes/a", "content": "hello", "citations": ["x.py:1"]})
    assert not result.is_error
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    assert result.structured_content is not None and result.structured_content["citations"] == ["x.py:1"]


def test_domain_errors_read_code_message_and_hint(mcp: Server) -> None:
    text = mcp.text("get_memory", {"path_or_id": "notes/x"}, error=True)
    assert text == (
        "MEMORY_NOT_FOUND: Memory not found (path notes/x). "
        "Check the path or id: list_memories and search_memories show what exists."
    )
    by_id = mcp.text("get_memory", {"path_or_id": "3f2b0c1e-0000-4000-8000-000000000000"}, error=True)
    assert by_id.startswith("MEMORY_NOT_FOUND: Memory not found (id 3f2b0c1e-")


def test_validation_failures_are_invalid_input_tool_errors(mcp: Server) -> None:
    text = mcp.text("move_memory", {"to": "a/b"}, error=True)
    assert text.startswith("INVALID_INPUT: from: Field required")
    assert "global" in mcp.text("search_memories", {"query": "q", "global": "maybe"}, error=True)


def test_move_and_search_take_their_keyword_named_arguments(mcp: Server) -> None:
    mcp.text("add_memory", {"path": "notes/a", "content": "global fact", "store": "s"}, error=False)
    moved = json.loads(mcp.text("move_memory", {"from": "notes/a", "to": "notes/b", "store": "s"}, error=False))
    assert moved["path"] == "notes/b"
    found = json.loads(
        mcp.text("search_memories", {"query": "global fact", "global": False, "store": "s"}, error=False)
    )
    assert found["count"] == 1


def test_agent_tools_turn_configuration_errors_into_tool_errors(mcp: Server) -> None:
    assert mcp.text("manage_memory", {"content": "x"}, error=True).startswith("INVALID_INPUT: No namespace")
    bad_label = mcp.text("manage_memory", {"content": "x", "user_id": "a/b"}, error=True)
    assert bad_label.startswith("INVALID_INPUT: The resolved namespace")
    created = mcp.text("manage_memory", {"content": "x", "namespace": []}, error=False)
    assert created.startswith("created memory ")
