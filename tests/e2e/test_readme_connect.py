"""Issue 30: the README's one-step client setups (Claude Desktop, Claude Code, Cursor) start a server that answers
the official MCP client's initialize: each snippet is parsed from README.md and its exact command is run."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.e2e.conftest import MEMORY
from tests.isolation import empty_config

pytestmark = [pytest.mark.slow, pytest.mark.server]

README = Path(__file__).resolve().parents[2] / "README.md"


def snippet(heading: str, language: str) -> str:
    """The first `language` code block after the line starting with `heading` in the README's "Connect an agent" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Connect an agent") :]
    after = section[section.index("\n" + heading) :]
    found = re.search(rf"```{language}\n(.*?)```", after, re.DOTALL)
    assert found is not None, f"no {language} block after {heading!r}"
    return found.group(1)


def from_json(heading: str) -> tuple[str, list[str], dict[str, str]]:
    server = json.loads(snippet(heading, "json"))["mcpServers"]["memory"]
    return server["command"], server.get("args", []), server.get("env", {})


def from_claude_code() -> tuple[str, list[str], dict[str, str]]:
    words = shlex.split(snippet("Claude Code", "sh").strip())
    assert words[:4] == ["claude", "mcp", "add", "memory"] and "--" in words
    command = words[words.index("--") + 1 :]
    return command[0], command[1:], {}


@pytest.mark.parametrize(
    "setup",
    [lambda: from_json("Claude Desktop"), from_claude_code, lambda: from_json("Cursor")],
    ids=["claude-desktop", "claude-code", "cursor"],
)
def test_the_readme_snippet_starts_a_server_that_answers_initialize(setup: object, tmp_path: Path) -> None:
    command, args, env = setup()  # type: ignore[operator]
    isolated = {
        "PATH": f"{MEMORY.parent}{os.pathsep}{os.environ.get('PATH', '')}",  # `memory` on the client's PATH
        "HOME": str(tmp_path),
        "MEMORY_CONFIG": empty_config(tmp_path),
        "MEMORY_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_BACKEND": "files",
        "MEMORY_SERVER": "off",
        **env,
    }
    params = StdioServerParameters(command=command, args=args, env=isolated)

    async def initialize() -> str:
        with (tmp_path / "server.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                answer = await session.initialize()
                return answer.server_info.name

    assert anyio.run(initialize) == "agent-memory"
