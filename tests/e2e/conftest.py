"""End-to-end fixtures: the installed `memory` command run as a subprocess against a temporary data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from attrs import frozen

from tests.chroma_server import chroma_server
from tests.isolation import empty_config

MEMORY = Path(sys.executable).parent / "memory"
BACKENDS = ("chroma", "files", "qdrant")
# where the CLI suite runs: every backend embedded, and Chroma as a real `chroma run` server
TARGETS = (*BACKENDS, "chroma-server")


@frozen
class Ran:
    """One finished `memory` invocation."""

    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> Any:
        return json.loads(self.stderr)


class MemoryCli:
    """Runs the installed command with an isolated HOME, config and data directory."""

    def __init__(self, home: Path, backend: str, extra_env: dict[str, str] | None = None) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "MEMORY_CONFIG": empty_config(home),
            "MEMORY_DATA_DIR": str(home / "data"),
            "MEMORY_BACKEND": backend,
            **(extra_env or {}),
        }
        self.backend = backend

    def __call__(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
        done = subprocess.run(
            [str(MEMORY), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            timeout=180,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, stdin: str | None = None) -> Any:
        ran = self(*args, stdin=stdin)
        assert ran.code == 0, ran.stderr
        assert "Traceback" not in ran.stderr
        return ran.json

    def fails(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Any:
        ran = self(*args, stdin=stdin, env=env)
        assert ran.code == 1, (ran.stdout, ran.stderr)
        assert "Traceback" not in ran.stderr
        assert ran.stdout == ""
        return ran.error


@pytest.fixture(params=TARGETS)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryCli:
    if request.param != "chroma-server":
        return MemoryCli(tmp_path, request.param)
    server = request.getfixturevalue("chroma_server")
    collection = f"e2e-{uuid.uuid4().hex[:12]}"  # one server for the session; each test its own collections
    env = {"CHROMADB_HOST": server.host, "CHROMADB_PORT": str(server.port), "MEMORY_COLLECTION": collection}
    return MemoryCli(tmp_path, "chroma", env)


__all__ = ["BACKENDS", "MEMORY", "TARGETS", "MemoryCli", "Ran", "chroma_server", "cli"]
