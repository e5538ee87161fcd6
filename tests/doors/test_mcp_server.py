"""The MCP door in-process over fakes: tool results, error texts and argument validation (fast twin of e2e)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult
from returns.result import Failure
from starlette.testclient import TestClient

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.adapters.shared.names import store_not_found
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.mcp.command_tools import tool_names
from agent_memory.entrypoints.mcp.http_gate import build_mcp_http_app
from agent_memory.entrypoints.mcp.server import build_mcp_server, run_mcp
from agent_memory.entrypoints.settings import load_settings
from tests.isolation import empty_config


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
    assert [tool.name for tool in listed] == list(tool_names())


def test_success_carries_json_text_and_structured_content(mcp: Server) -> None:
    result = mcp.call("add_memory", {"path": "notes/a", "content": "hello", "citations": ["x.py:1"]})
    assert not result.is_error
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    assert result.structured_content is not None and result.structured_content["citations"] == ["x.py:1"]


def test_add_memory_retried_with_its_idempotency_key_answers_the_first_memory(mcp: Server) -> None:
    arguments = {"path": "notes/retried", "content": "hello", "idempotency_key": "call-42"}
    first = mcp.call("add_memory", arguments)
    again = mcp.call("add_memory", arguments)
    assert not first.is_error and not again.is_error
    assert again.structured_content == first.structured_content
    refused = mcp.text("add_memory", {**arguments, "content": "goodbye"}, error=True)
    assert refused.startswith("INVALID_OPERATION: The idempotency key 'call-42' was already used")


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


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(mcp: Server) -> None:
    with pytest.raises(MCPError) as raised:
        mcp.call("list_store", {})
    assert raised.value.error.code == INVALID_PARAMS
    assert raised.value.error.message == "INVALID_INPUT: no tool is called 'list_store'; tools/list names every tool."


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
    empty = mcp.text("manage_memory", {"content": "x", "namespace": []}, error=True)  # as search_memory refuses it
    assert empty.startswith("INVALID_INPUT: An empty namespace")


# --- over HTTP: the same callers as the REST door, and an optional bearer token (issue 12) ------------------

TOKEN = "mcp-s3cret"
BASE = "http://127.0.0.1:8765"
STREAM = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


@contextmanager
def http(service: MemoryService, **options: Any) -> Iterator[TestClient]:
    app = build_mcp_http_app(build_mcp_server(service, default_store="default"), **options)
    with TestClient(app, base_url=BASE) as client:
        yield client


def refused(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["error"]
    return body


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {TOKEN}", TOKEN])
def test_with_a_token_every_http_request_needs_it(service: MemoryService, authorization: str | None) -> None:
    headers = STREAM | ({} if authorization is None else {"Authorization": authorization})
    with http(service, api_token=TOKEN) as client:
        for method in ("POST", "GET", "DELETE"):
            response = client.request(method, "/mcp", json=INITIALIZE if method == "POST" else None, headers=headers)
            refused(response, 401, "UNAUTHORIZED")
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_with_the_token_an_http_session_starts(service: MemoryService) -> None:
    with http(service, api_token=TOKEN) as client:
        response = client.post("/mcp", json=INITIALIZE, headers=STREAM | {"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    assert "serverInfo" in response.text


def test_without_a_token_loopback_http_needs_none(service: MemoryService) -> None:
    with http(service) as client:
        assert client.post("/mcp", json=INITIALIZE, headers=STREAM).status_code == 200


def test_foreign_hosts_origins_and_non_json_bodies_are_json_refusals(service: MemoryService) -> None:
    with http(service, api_token=TOKEN) as client:
        auth = STREAM | {"Authorization": f"Bearer {TOKEN}"}
        refused(
            client.post("/mcp", json=INITIALIZE, headers=auth | {"Host": "attacker.example"}),
            421,
            "MISDIRECTED_REQUEST",
        )
        refused(
            client.post("/mcp", json=INITIALIZE, headers=auth | {"Origin": "http://evil.example"}),
            403,
            "FORBIDDEN_ORIGIN",
        )
        plain = auth | {"Content-Type": "text/plain"}
        refused(client.post("/mcp", content=json.dumps(INITIALIZE), headers=plain), 415, "INVALID_INPUT")
        refused(client.post("/mcp", headers=auth), 415, "INVALID_INPUT")


def test_listed_hosts_and_origins_are_served(service: MemoryService) -> None:
    options = {"host": "0.0.0.0", "api_token": TOKEN, "allowed_hosts": ("memory.internal",)}
    with http(service, allowed_origins=("https://app.example",), **options) as client:
        headers = STREAM | {"Authorization": f"Bearer {TOKEN}", "Host": "memory.internal:8765"}
        assert (
            client.post("/mcp", json=INITIALIZE, headers=headers | {"Origin": "https://app.example"}).status_code == 200
        )


def test_the_sdks_own_host_check_stays_on_behind_the_gate(service: MemoryService) -> None:
    app = build_mcp_http_app(build_mcp_server(service, default_store="default"), host="0.0.0.0", api_token=TOKEN)
    with TestClient(app.app, base_url=BASE) as client:  # the SDK's app alone, without our gate in front
        response = client.post("/mcp", json=INITIALIZE, headers=STREAM | {"Host": "attacker.example"})
    assert response.status_code == 421


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.7"])
def test_http_beyond_loopback_without_a_token_is_refused_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path, host: str
) -> None:
    import agent_memory.entrypoints.bootstrap

    def never(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the service must not be built")

    monkeypatch.setattr(agent_memory.entrypoints.bootstrap, "build_service", never)
    settings = load_settings({"data_dir": str(tmp_path)}, {"HOME": str(tmp_path)}).unwrap()

    assert run_mcp(settings, transport="http", host=host, port=9) == 1
    assert "MEMORY_API_TOKEN" in json.loads(capsys.readouterr().err)["error"]


def test_mcp_takes_the_token_from_the_flag_or_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import agent_memory.entrypoints.mcp.server
    from agent_memory.entrypoints.cli.in_process import run

    seen: dict[str, Any] = {}

    def fake_run_mcp(settings: Any, **options: Any) -> int:
        seen.update(options)
        return 0

    monkeypatch.setattr(agent_memory.entrypoints.mcp.server, "run_mcp", fake_run_mcp)
    monkeypatch.setenv("MEMORY_CONFIG", empty_config(tmp_path))
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMORY_API_TOKEN", "from-env")

    assert run(["mcp", "--transport", "http"]) == 0
    assert seen["api_token"] == "from-env"
    assert run(["mcp", "--transport", "http", "--api-token", "from-flag"]) == 0
    assert seen["api_token"] == "from-flag"


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_a_timestamp_outside_utc_years_is_invalid_input_not_an_sdk_error(mcp: Server, moment: str) -> None:
    # found by bench/fuzz.py: the OverflowError left the tool and the SDK answered "Error executing tool add_memory"
    added = mcp.text("add_memory", {"path": "notes/late", "content": "x", "expires_at": moment}, error=True)
    assert added.startswith("INVALID_INPUT: expires_at")
    mcp.text("add_memory", {"path": "notes/late", "content": "x"}, error=False)
    updated = mcp.text("update_memory", {"path_or_id": "notes/late", "expires_at": moment}, error=True)
    assert updated.startswith("INVALID_INPUT: expires_at")


# --- issue 15: paging, compact listings, annotations, version --------------------------------------


def test_list_memories_is_a_compact_page_with_a_total(mcp: Server) -> None:
    for n in range(5):
        mcp.text("add_memory", {"path": f"notes/n{n}", "content": "x" * 400}, error=False)

    page = json.loads(mcp.text("list_memories", {"category": "notes", "limit": 2, "offset": 1}, error=False))

    assert (page["total"], page["count"], page["limit"], page["offset"]) == (5, 2, 2, 1)
    first = page["memories"][0]
    assert set(first) == {"path", "id", "tokens", "updated_at"} and first["tokens"] == 100
    assert "content" not in json.dumps(page["memories"])
    full = json.loads(mcp.text("get_memory", {"path_or_id": first["id"]}, error=False))
    assert full["content"] == "x" * 400


def test_four_hundred_memories_list_in_a_bounded_text(mcp: Server) -> None:
    for n in range(400):
        mcp.text("add_memory", {"path": f"notes/n{n}", "content": f"memory {n} " + "y" * 500}, error=False)

    text = mcp.text("list_memories", {}, error=False)

    assert json.loads(text)["total"] == 400 and len(text) < 20_000


def test_search_memories_pages_with_offset(mcp: Server) -> None:
    for n in range(5):
        mcp.text("add_memory", {"path": f"notes/n{n}", "content": f"vim note number {n}"}, error=False)

    whole = json.loads(mcp.text("search_memories", {"query": "vim note", "limit": 5}, error=False))
    page = json.loads(mcp.text("search_memories", {"query": "vim note", "limit": 2, "offset": 2}, error=False))

    assert (page["count"], page["limit"], page["offset"], page["has_more"]) == (2, 2, 2, True)
    assert [hit["id"] for hit in page["results"]] == [hit["id"] for hit in whole["results"]][2:4]
    assert whole["has_more"] is False
    assert mcp.text("search_memories", {"query": "x", "offset": -1}, error=True).startswith("INVALID_INPUT: offset")


def test_tools_have_titles_and_update_is_destructive(mcp: Server) -> None:
    listed = {tool.name: tool for tool in anyio.run(mcp.server.list_tools)}

    assert all(tool.title for tool in listed.values())
    update = listed["update_memory"].annotations
    assert update is not None and update.destructive_hint is True and update.read_only_hint is False
    assert listed["get_memory"].annotations.read_only_hint is True  # type: ignore[union-attr]


def test_initialize_reports_the_package_version(service: MemoryService) -> None:
    from agent_memory._version import __version__

    with http(service) as client:
        response = client.post("/mcp", json=INITIALIZE, headers=STREAM)
    line = next(part for part in response.text.splitlines() if part.startswith("data:"))
    assert json.loads(line[5:])["result"]["serverInfo"] == {"name": "agent-memory", "version": __version__}


# --- issue 15: error advice worded for MCP, never for the CLI ----------------------------------------------


class CliWordedCatalog(InMemoryCatalog):
    """A catalog whose missing stores fail with the backends' own CLI-worded STORE_NOT_FOUND."""

    def open(self, name: str, *, create: bool) -> Any:
        if create or name in self.stores:
            return super().open(name, create=create)
        return Failure(store_not_found(name))


def test_mcp_errors_give_mcp_advice_not_cli_advice(clock: FixedClock) -> None:
    mcp = Server(
        MemoryService(catalog=CliWordedCatalog(embedder_name="hashing-bow"), embedder=HashingEmbedder(), clock=clock)
    )
    missing = mcp.text("get_memory", {"path_or_id": "notes/a", "store": "nope"}, error=True)
    mcp.text("add_memory", {"path": "notes/c", "content": "x", "decay_policy": "contextual"}, error=False)
    contextual = mcp.text("reinforce_memory", {"id": "notes/c"}, error=True)

    assert missing == (
        "STORE_NOT_FOUND: Store 'nope' does not exist. "
        "list_stores shows the stores; create_store or add_memory creates one."
    )
    assert "decay_policy 'reinforceable'" in contextual
    for text in (missing, contextual):
        assert "`memory" not in text and "--" not in text and ".." not in text


def test_the_agent_tools_over_mcp_give_mcp_advice_not_python_advice(mcp: Server, catalog: Any) -> None:
    """manage_memory and search_memory word a failure as every other MCP tool does (not 'Run reindex()')."""
    mcp.text("manage_memory", {"content": "x", "user_id": "u-1"}, error=False)
    catalog.stores["default"].model = "some-other-model"

    mismatch = mcp.text("search_memory", {"query": "x", "user_id": "u-1"}, error=True)

    assert mismatch == mcp.text("search_memories", {"query": "x"}, error=True)
    assert "reindex_store" in mismatch and "reindex()" not in mismatch


def test_an_embedding_mismatch_names_the_reindex_tool(mcp: Server, catalog: Any) -> None:
    mcp.text("add_memory", {"path": "notes/a", "content": "x"}, error=False)
    catalog.stores["default"].model = "some-other-model"

    text = mcp.text("search_memories", {"query": "x"}, error=True)

    assert text.startswith("EMBEDDING_MISMATCH:") and "reindex_store" in text and "`memory" not in text


def test_add_and_update_memory_set_the_scopes_search_filters_on(mcp: Server) -> None:
    """The README's filter by type must match a memory an MCP agent saved (add_memory could not set scopes)."""
    added = json.loads(
        mcp.text(
            "add_memory",
            {"path": "prefs/editor", "content": "The user likes Helix", "type": "preference", "project": "p1"},
            error=False,
        )
    )
    assert (added["type"], added["project"], added["agent"]) == ("preference", "p1", "")
    found = json.loads(mcp.text("search_memories", {"query": "editor", "type": "preference"}, error=False))
    assert [hit["id"] for hit in found["results"]] == [added["id"]]
    updated = json.loads(
        mcp.text("update_memory", {"path_or_id": "prefs/editor", "type": "decision", "agent": "a1"}, error=False)
    )
    assert (updated["type"], updated["agent"], updated["project"]) == ("decision", "a1", "p1")
    assert json.loads(mcp.text("search_memories", {"query": "editor", "type": "preference"}, error=False))["count"] == 0


def test_delete_memory_is_the_soft_delete(mcp: Server) -> None:
    added = json.loads(mcp.text("add_memory", {"path": "notes/soft", "content": "kept but hidden"}, error=False))
    assert json.loads(mcp.text("delete_memory", {"path_or_id": "notes/soft"}, error=False)) == {
        "id": added["id"],
        "deleted": True,
    }
    assert mcp.text("get_memory", {"path_or_id": added["id"]}, error=True).startswith("MEMORY_NOT_FOUND")
    assert mcp.text("delete_memory", {"path_or_id": added["id"]}, error=True).startswith("INVALID_OPERATION")
    assert json.loads(mcp.text("remove_memory", {"path_or_id": added["id"]}, error=False))["removed"] is True
