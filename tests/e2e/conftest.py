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
            "MEMORY_CONFIG": str(home / "no-config.toml"),
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


# requests no HTTP parser accepts, sent as raw bytes (httpx would refuse to send them): a lowercase
# method, an unknown method, a request line far beyond the parser's limit, a header without a colon
UNPARSABLE_REQUESTS = {
    "lowercase method": b"get /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "unknown method": b"FETCH /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "70 KB query": b"GET /health?q=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "header without colon": b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nbroken header\r\n\r\n",
}


def raw_http(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are to a loopback port; the status, headers and body the server answered."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, body


def unparsable_answers(port: int) -> dict[str, tuple[int, str, str]]:
    """For each unparsable request: (status, content type, error code) of the answer."""
    answers = {}
    for name, request in UNPARSABLE_REQUESTS.items():
        status, headers, body = raw_http(port, request)
        answers[name] = (status, headers.get("content-type", ""), json.loads(body)["code"])
    return answers
