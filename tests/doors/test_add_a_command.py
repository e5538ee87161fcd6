"""A command registered in the table (here, inside this test) reaches the CLI, MCP and REST with no edit to a door."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from attrs import field, frozen
from litestar.testing import TestClient
from mcp.types import CallToolResult
from returns.result import Result, Success

from agent_memory.domain import commands as c
from agent_memory.domain.context import Context
from agent_memory.domain.dispatch import HANDLERS, commands
from agent_memory.domain.errors import DomainError
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli.in_process import run
from agent_memory.entrypoints.cli.parser import build_parser
from agent_memory.entrypoints.mcp.server import build_mcp_server
from agent_memory.entrypoints.rest.app import build_app
from tests.isolation import empty_config

BASE = "http://127.0.0.1"
TOKEN = "s3cret-token"


@frozen
class Tally:
    """How many live memories a store holds (the caller's namespace's, under one)."""

    store: str
    live: int


@frozen(kw_only=True)
class CountMemories(c.Asks[Tally]):
    """Count the live memories of a store."""

    store: str | None = field(default=None, metadata=c.doc("The store to count; omit for the default store."))
    at_least: int = field(default=0, metadata=c.doc("Report no fewer than this.", least=0))


def count_memories(context: Context, command: CountMemories) -> Result[Tally, DomainError]:
    name = command.store or context.policy.default_store
    return (
        context.open(name, create=False)
        .bind(lambda opened: context.census(opened, context.tenant))
        .map(lambda census: Tally(name, max(census.live, command.at_least)))
    )


@pytest.fixture
def registered(service: MemoryService, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryService]:
    monkeypatch.setitem(HANDLERS, CountMemories, count_memories)
    for text in ("tabs over spaces", "deploys on Fridays"):
        service.create(c.CreateMemory(content=text)).unwrap()
    yield service
    assert CountMemories in commands()


def test_the_cli_offers_and_runs_it(
    registered: MemoryService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "count-memories" in build_parser().format_help()
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    assert run(["count-memories", "--at-least", "1"], env=env, services=lambda _settings: Success(registered)) == 0
    assert json.loads(capsys.readouterr().out) == {"store": "default", "live": 2}


def test_mcp_lists_and_calls_it(registered: MemoryService) -> None:
    server = build_mcp_server(registered, default_store="default")
    listed = {tool.name: tool for tool in anyio.run(server.list_tools)}
    tool = listed["count_memories"]
    assert tool.description is not None and tool.description.startswith("Count the live memories of a store.")
    assert tool.input_schema["properties"]["at_least"]["description"] == "Report no fewer than this."

    async def call(arguments: dict[str, Any]) -> CallToolResult:
        result = await server.call_tool("count_memories", arguments)
        assert isinstance(result, CallToolResult)
        return result

    answered = anyio.run(call, {"at_least": 5})
    assert not answered.is_error and answered.structured_content == {"store": "default", "live": 5}


def test_rest_serves_it_under_the_same_token(registered: MemoryService) -> None:
    with TestClient(build_app(registered, api_token=TOKEN), base_url=BASE) as client:
        assert client.post("/commands/count-memories", json={}).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        answered = client.post("/commands/count-memories", json={}, headers=bearer)
        assert answered.status_code == 200 and answered.json() == {"store": "default", "live": 2}
        unknown = client.post("/commands/no-such-command", json={}, headers=bearer)
        assert unknown.status_code == 404 and unknown.json()["code"] == "NOT_FOUND"
        wrong = client.post("/commands/count-memories", json={"at_least": "many"}, headers=bearer)
        assert wrong.status_code == 422 and wrong.json()["code"] == "INVALID_INPUT"
        document = client.get("/openapi.json").json()
    assert "/commands/{name}" in document["paths"]
