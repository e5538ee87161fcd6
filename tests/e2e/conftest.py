"""End-to-end fixtures: the installed `memory` command run as a subprocess against a temporary data dir, in-process
and through its local memory server (every `cli` test runs both ways)."""

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
# how: each command in its own process ("direct", MEMORY_SERVER=off) or through the local memory server ("served")
MODES = ("direct", "served")
# the CLI suite's variants: through the server on every target, and in-process once, on the default backend.
# An in-process run differs from a served one in the door, not in the adapter (every adapter's own behaviour is
# the contract suites', and several processes sharing one store is tests/e2e/test_cli_races.py's and the
# multi-process adapter tests'), so in-process runs on the other targets repeated what these five cover.
CLI_VARIANTS = (*((target, "served") for target in TARGETS), ("chroma", "direct"))
SERVER_MODULE = "agent_memory.entrypoints.cli.server.process"


def server_directory(home: Path) -> Path:
    """Where the memory server of the user with this HOME keeps its files (one server per HOME)."""
    return home / ".local" / "state" / "agent-memory" / "server"


def server_processes(data_dir: Path) -> list[int]:
    """Pids of the memory servers of the user whose MemoryCli has this data directory (`HOME/data`: one server per
    HOME serves all its data directories), found in /proc."""
    directory = os.fsencode(server_directory(data_dir.parent))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if SERVER_MODULE.encode() in argv and directory in argv:
            found.append(int(entry.name))
    return found


PAST = "2001-01-01T00:00:00Z"


def expired_line(path: str | None, content: str, *, expires_at: str = PAST, **fields: Any) -> str:
    """One memory already expired, as `memory export` writes it, with the id and times a test names: a test that
    needs an expired memory of its own making imports it: `cli.ok("import", stdin=expired_line(…))`."""
    record = {
        "id": str(uuid.uuid4()),
        "content": content,
        "path": path,
        "created_at": "2000-01-01T00:00:00Z",
        "updated_at": "2000-01-01T00:00:00Z",
        "expires_at": expires_at,
        **fields,
    }
    return json.dumps(record) + "\n"


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

    def __init__(
        self, home: Path, backend: str, extra_env: dict[str, str] | None = None, *, mode: str = "direct"
    ) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "MEMORY_CONFIG": empty_config(home),
            "MEMORY_DATA_DIR": str(home / "data"),
            "MEMORY_BACKEND": backend,
            "MEMORY_SERVER": "auto" if mode == "served" else "off",
            **(extra_env or {}),
        }
        self.backend = backend
        self.mode = mode
        self.data_dir = home / "data"

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

    def stop_servers(self) -> None:
        """Stop the memory server of this HOME (and any draining one) and check that no server process is left."""
        # with a config of its own: a test may have broken the one it ran with (the server's place does not depend on it)
        ran = self("server", "stop", "--all", env={"MEMORY_CONFIG": empty_config(self.data_dir.parent / "teardown")})
        assert ran.code == 0, ran.stderr
        assert all(server["exited"] for server in json.loads(ran.stdout)["stopped"]), ran.stdout
        assert server_processes(self.data_dir) == []


@pytest.fixture(params=CLI_VARIANTS, ids="-".join)
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryCli:
    target, mode = request.param
    env = {}
    if target == "chroma-server":
        server = request.getfixturevalue("chroma_server")
        collection = f"e2e-{uuid.uuid4().hex[:12]}"  # one server for the session; each test its own collections
        env = {"CHROMADB_HOST": server.host, "CHROMADB_PORT": str(server.port), "MEMORY_COLLECTION": collection}
    made = MemoryCli(tmp_path, "chroma" if target == "chroma-server" else target, env, mode=mode)
    if mode == "served":
        request.addfinalizer(made.stop_servers)
    return made


__all__ = [
    "BACKENDS",
    "CLI_VARIANTS",
    "MEMORY",
    "MODES",
    "PAST",
    "TARGETS",
    "MemoryCli",
    "Ran",
    "chroma_server",
    "cli",
    "expired_line",
    "server_directory",
    "server_processes",
]
