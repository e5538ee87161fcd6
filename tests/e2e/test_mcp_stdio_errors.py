"""`memory mcp` over stdio answers every malformed line with the JSON-RPC error the spec names, and an unknown tool
with -32602: a real subprocess, raw lines on its stdin, its answers read from its stdout."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_types import LATEST_PROTOCOL_VERSION

from tests.e2e.conftest import MEMORY
from tests.isolation import empty_config

pytestmark = [pytest.mark.slow]

ANSWER_SECONDS = 120  # a bound on a hung server, not a timing: the first answer waits for the service to start


class Session:
    """A `memory mcp` process: send raw lines, read its answers one JSON line at a time."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self.lines.get(timeout=ANSWER_SECONDS))
        return answer


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    home = tmp_path_factory.mktemp("mcp-stdio-home")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": empty_config(home),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_SERVER": "off",
        "ANONYMIZED_TELEMETRY": "False",
    }
    log = (Path(home) / "stderr.log").open("wb")
    process = subprocess.Popen([str(MEMORY), "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    try:
        yield Session(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"this is not json", -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700),  # cut short
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),  # a batch
        (b"[]", -32600),
        (b'{"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}', -32600),  # an id that is an object
        (b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600),
        (b"42", -32600),
    ],
)
def test_a_malformed_line_gets_its_json_rpc_error_with_id_null(session: Session, line: bytes, code: int) -> None:
    session.send(line)
    answer = session.answer()
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == code and answer["error"]["message"]
    session.send(b'{"jsonrpc": "2.0", "id": "after", "method": "ping"}')  # the session goes on
    assert session.answer() == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_an_unknown_tool_is_a_json_rpc_invalid_params_error(session: Session) -> None:
    hello = {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    session.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": hello}).encode())
    assert session.answer()["id"] == "init"
    session.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    call = {"name": "no_such_tool", "arguments": {}}
    session.send(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": call}).encode())
    answer = session.answer()
    assert answer["id"] == 9 and "result" not in answer
    assert answer["error"]["code"] == -32602
    assert "no_such_tool" in answer["error"]["message"]


def test_a_session_that_cannot_start_through_the_server_says_why_in_json(tmp_path: Path) -> None:
    """`memory mcp` through the background server, with a setting the service cannot be built from: the server's
    answer carries the error instead of a session, and the client prints it (it once raised KeyError: 'connection')."""
    home = tmp_path / "home"
    home.mkdir()
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": empty_config(home),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_EMBEDDER": str(broken),
        "ANONYMIZED_TELEMETRY": "False",
    }
    try:
        run = subprocess.run(
            [str(MEMORY), "mcp"], env=env, input=b"", capture_output=True, timeout=ANSWER_SECONDS, check=False
        )
    finally:
        subprocess.run([str(MEMORY), "server", "stop"], env=env, capture_output=True, timeout=ANSWER_SECONDS)
    assert run.returncode == 1
    assert b"Traceback" not in run.stderr, run.stderr.decode()
    error = json.loads(run.stderr.decode().strip().splitlines()[-1])
    assert error["code"] == "INVALID_INPUT" and "model.onnx" in error["error"], error
