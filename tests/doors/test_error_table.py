"""The one ErrorCode table: total, and read by every door (REST status, CLI exit code, MCP and agent-tool hints)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from litestar.testing import TestClient
from mcp.types import CallToolResult
from returns.result import Success

from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import error_table
from agent_memory.entrypoints.agents.langmem_tools import MemoryToolError, create_manage_memory_tool
from agent_memory.entrypoints.cli.in_process import run
from agent_memory.entrypoints.error_table import ERRORS, ErrorRow, codes_with_status
from agent_memory.entrypoints.mcp.server import build_mcp_server
from agent_memory.entrypoints.rest.app import build_app
from agent_memory.entrypoints.rest.replies import MEANING
from tests.isolation import empty_config

BASE = "http://127.0.0.1:8080"
U1 = {"configurable": {"user_id": "u-1"}}


def test_every_error_code_has_a_row() -> None:
    assert set(ERRORS) == set(ErrorCode)
    assert list(ERRORS) == list(ErrorCode)  # in ErrorCode order, so the OpenAPI lists read the same way


def test_every_row_is_a_failure_in_every_door() -> None:
    for code, row in ERRORS.items():
        assert row.exit_code == 1, code  # spec 000: every failed command exits 1
        assert 400 <= row.http_status < 600, code
        for hint in (row.mcp_hint, row.python_hint):
            assert hint == "" or (hint.endswith(".") and not hint.endswith("..") and "`memory" not in hint), code


def test_the_openapi_description_of_each_status_names_the_codes_the_table_gives_it() -> None:
    for status in {row.http_status for row in ERRORS.values()}:
        for code in codes_with_status(status):
            assert code.value in MEANING[status], (status, code)


@pytest.fixture
def changed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Mapping[ErrorCode, ErrorRow]]:
    """The table with MEMORY_NOT_FOUND's row changed in every column, as a door that reads it must show."""
    rows = dict(ERRORS)
    rows[ErrorCode.MEMORY_NOT_FOUND] = attrs.evolve(
        rows[ErrorCode.MEMORY_NOT_FOUND],
        exit_code=7,
        http_status=418,
        mcp_hint="An MCP hint from the table.",
    )
    rows[ErrorCode.INVALID_INPUT] = attrs.evolve(
        rows[ErrorCode.INVALID_INPUT], python_hint="An agent hint from the table."
    )  # the agent tools answer a missing memory in their own words; a bad store name reaches the table
    monkeypatch.setattr(error_table, "ERRORS", rows)
    yield rows


@pytest.mark.parametrize(
    ("code", "method", "path", "body"),
    [
        (ErrorCode.MEMORY_NOT_FOUND, "GET", "/memories/notes/missing", None),
        (ErrorCode.STORE_NOT_FOUND, "GET", "/memories/notes/a?store=nope", None),
        (ErrorCode.CATEGORY_NOT_FOUND, "DELETE", "/categories/notes/nowhere", None),
        (ErrorCode.INVALID_INPUT, "POST", "/memories", {"content": "   "}),
        (ErrorCode.INVALID_OPERATION, "POST", "/memories/notes/stable/reinforce", None),
    ],
)
def test_rest_answers_each_code_with_the_table_status(
    service: MemoryService, code: ErrorCode, method: str, path: str, body: dict[str, Any] | None
) -> None:
    with TestClient(build_app(service), base_url=BASE) as client:
        made = client.post("/memories", json={"content": "A stable fact.", "path": "notes/stable"})
        assert made.status_code == 201, made.text
        response = client.request(method, path, json=body)
    assert response.json()["code"] == code.value, response.text
    assert response.status_code == ERRORS[code].http_status


def test_rest_status_comes_from_the_table(service: MemoryService, changed: Mapping[ErrorCode, ErrorRow]) -> None:
    with TestClient(build_app(service), base_url=BASE) as client:
        response = client.get("/memories/notes/missing")
    assert response.status_code == 418 and response.json()["code"] == "MEMORY_NOT_FOUND"


def test_cli_exit_code_comes_from_the_table(
    service: MemoryService, changed: Mapping[ErrorCode, ErrorRow], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    code = run(["get", "notes/missing"], env=env, services=lambda _settings: Success(service))

    assert code == 7
    assert json.loads(capsys.readouterr().err) == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}


def test_mcp_tool_error_carries_the_table_hint(service: MemoryService, changed: Mapping[ErrorCode, ErrorRow]) -> None:
    server = build_mcp_server(service, default_store="default")

    async def call() -> Any:
        return await server.call_tool("get_memory", {"path_or_id": "notes/missing"})

    result = anyio.run(call)
    assert isinstance(result, CallToolResult) and result.is_error
    assert result.content[0].text == (  # type: ignore[union-attr]
        "MEMORY_NOT_FOUND: Memory not found (path notes/missing). An MCP hint from the table."
    )


def test_agent_tool_errors_carry_the_table_hint(service: MemoryService, changed: Mapping[ErrorCode, ErrorRow]) -> None:
    manage = create_manage_memory_tool(service=service, store="Not A Store")

    with pytest.raises(MemoryToolError) as raised:
        manage(action="create", content="x", config=U1)

    assert str(raised.value).startswith("INVALID_INPUT: Invalid store name")
    assert str(raised.value).endswith(". An agent hint from the table.")


def test_langchain_tool_errors_carry_the_table_hint(
    service: MemoryService, changed: Mapping[ErrorCode, ErrorRow]
) -> None:
    pytest.importorskip("langchain_core")
    from agent_memory.entrypoints.agents.langmem_tools import to_langchain_tools

    (tool,) = to_langchain_tools(create_manage_memory_tool(service=service, store="Not A Store"))
    call = {"name": "manage_memory", "args": {"content": "x"}, "id": "call-1", "type": "tool_call"}
    message = tool.invoke(call, config=U1)

    assert message.status == "error" and message.content.endswith(". An agent hint from the table.")
