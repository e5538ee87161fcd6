"""A `memory` install whose argument manifest is missing or damaged answers with a JSON error, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.entrypoints.cli import in_process as cli
from agent_memory.entrypoints.cli import parser as cli_parser


@pytest.mark.parametrize(
    ("content", "why"),
    [(None, "FileNotFoundError"), ("{not json", "JSONDecodeError"), ('{"subcommands": 3}', "no subcommand table")],
)
def test_a_damaged_manifest_is_a_json_error_that_says_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], content: str | None, why: str
) -> None:
    manifest = tmp_path / "cli_manifest.json"
    if content is not None:
        manifest.write_text(content, encoding="utf-8")
    monkeypatch.setattr(cli_parser, "MANIFEST", str(manifest))
    monkeypatch.setattr(cli_parser, "_SHIPPED", {})

    code = cli.run(["get", "some-id"], env={"HOME": str(tmp_path)})

    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    error = json.loads(captured.err)
    assert error["code"] == "INVALID_INPUT"
    assert "install is damaged" in error["error"]
    assert why in error["error"]
    assert "pip install --force-reinstall agent-memory" in error["error"]


def test_the_shipped_manifest_still_loads() -> None:
    assert {entry["name"] for entry in cli_parser.load_manifest()["subcommands"]} >= {"create", "search", "get"}
