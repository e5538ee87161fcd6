"""MCP over stdio answers every request: lines the SDK would drop become calls of the refusal tool (mcp_stdio.rewrite)."""

from __future__ import annotations

import json

import pytest

from agent_memory.entrypoints.mcp.stdio import REFUSED_TOOL, rewrite


@pytest.mark.parametrize(
    "request_line",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": 5},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": []},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "get_memory"},
        {"jsonrpc": "1.0", "id": 7, "method": "ping"},
        {"id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": 7, "method": 5},
    ],
)
def test_a_request_that_is_not_valid_json_rpc_is_answered_with_its_id(request_line: dict[str, object]) -> None:
    # found by bench/fuzz.py: the SDK could not validate these and left them unanswered
    rewritten = rewrite(json.dumps(request_line) + "\n")
    assert rewritten is not None
    call = json.loads(rewritten)
    assert call["id"] == 7 and call["method"] == "tools/call"
    assert call["params"]["name"] == REFUSED_TOOL
    assert "JSON-RPC 2.0" in call["params"]["arguments"]["reason"]


@pytest.mark.parametrize(
    "line",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_stores", "arguments": {}}},
        {"jsonrpc": "2.0", "id": "s-1", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},  # a client's answer to the server: never answered back
        {"jsonrpc": "2.0", "id": None, "method": "ping", "params": 5},  # no id an answer could carry
    ],
)
def test_valid_messages_and_messages_without_an_id_go_through_unchanged(line: dict[str, object]) -> None:
    text = json.dumps(line) + "\n"
    assert rewrite(text) == text
