"""MCP over stdio answers every request: lines the SDK would drop become calls of the refusal tool (mcp_stdio.rewrite)."""

from __future__ import annotations

import json

import pytest
from mcp.types import INVALID_REQUEST, PARSE_ERROR

from agent_memory.entrypoints.mcp.stdio import REFUSED_TOOL, protocol_error, rewrite


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


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("not json", PARSE_ERROR),
        ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE_ERROR),
        ('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST),
        ("[]", INVALID_REQUEST),
        ('"ping"', INVALID_REQUEST),
        ('{"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}', INVALID_REQUEST),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', INVALID_REQUEST),
        ('{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST),
    ],
)
def test_a_line_with_no_readable_request_gets_the_json_rpc_error_with_id_null(line: str, code: int) -> None:
    error = protocol_error(line + "\n")
    assert error is not None and error.id is None and error.error.code == code


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        '{"jsonrpc": "2.0", "id": 7, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": 5}',  # answered through the refusal tool
        '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
    ],
)
def test_blank_lines_requests_and_refused_requests_get_no_protocol_error(line: str) -> None:
    assert protocol_error(line + "\n") is None
