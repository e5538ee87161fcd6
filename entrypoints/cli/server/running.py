"""What one request runs inside the memory server: a `memory` command or an MCP session, on the client's streams.

A command runs with the same code as the in-process one (cli.run_guarded), on the client's arguments, environment,
cwd, umask and stdin, and its answer carries the exact bytes of stdout and stderr and the exit code (a terminal's
stderr is sent as it is written: a progress bar moves). Before anything runs, a request for a storage this process
must not serve is refused (`Refusal`). The server (process.py) owns what is shared between requests (the socket,
the lock, the sessions, the idle clock) and calls these with its lock held; the storages they run on are storages.py's.
"""

from __future__ import annotations

import base64
import io
import os
import threading
from typing import Any

from agent_memory.entrypoints.cli.server import protocol as wire
from agent_memory.entrypoints.cli.server import streams as routed
from agent_memory.entrypoints.cli.server.storages import Storages
from agent_memory.entrypoints.cli.server.streams import Sender


class Refusal(Exception):
    """A request this server must not run: nothing ran; `replace` means the server stops for a successor."""

    def __init__(self, reason: str, message: str, *, replace: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.replace = replace


def arguments(request: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """A request's `memory` arguments and the client's environment, as strings."""
    env = request.get("env")
    return [str(a) for a in request.get("argv") or []], {str(k): str(v) for k, v in (env or {}).items()}


def check_storage(argv: list[str], env: dict[str, str]) -> None:
    """Refuse, before anything runs, a request for a storage server behind other proxy or CA variables than this
    process has."""
    from returns.result import Success

    from agent_memory.entrypoints.cli.in_process import settings_of

    loaded = settings_of(argv, env)
    if not isinstance(loaded, Success):
        return  # the run reports the bad arguments or settings itself, as in-process
    settings = loaded.unwrap()
    # a Chroma or Qdrant server's HTTP client reads the proxy and CA variables of this process when it is made:
    # a client with others truly needs another server (this one retires, keeping its live sessions)
    remote = bool(settings.chroma_host or settings.qdrant_url)
    if remote and wire.network_environment(env) != wire.network_environment(os.environ):
        raise Refusal("settings", "the request's proxy or CA variables differ from this server's", replace=True)


def run_command(request: dict[str, Any], send_line: Sender, storages: Storages, lock: threading.Lock) -> dict[str, Any]:
    """Run a request's `memory` command as the in-process one runs, holding `lock` (one request at a time on the
    service, the cwd and the umask): the answer with its exit code and output, or the refusal of a cwd it cannot
    enter. Raises `Refusal` (nothing ran) for a storage this process must not serve."""
    from agent_memory.entrypoints.cli.in_process import run_guarded

    found = request.get("streams")
    streams: dict[str, Any] = found if isinstance(found, dict) else {}
    raw_in = request.get("stdin")
    stdin_tty = raw_in is None and bool((streams.get("stdin") or [0, 0, True])[2])
    stdin = routed.client_text(
        routed.ClientBytes(base64.b64decode(raw_in or ""), tty=stdin_tty), streams.get("stdin"), "strict"
    )
    out_bytes = routed.ClientBytes()
    err_bytes = routed.client_stderr(bool((streams.get("stderr") or [0, 0, False])[2]), send_line)
    stdout = routed.client_text(out_bytes, streams.get("stdout"), "strict")
    stderr = routed.client_text(err_bytes, streams.get("stderr"), "backslashreplace")
    argv, env = arguments(request)
    with lock:
        try:
            os.chdir(str(request.get("cwd")))
            os.umask(int(request.get("umask", 0o022)) | 0o077)  # the data stays the user's alone
        except (OSError, TypeError, ValueError):
            return {"refused": "cwd", "message": "cannot enter the client's working directory"}
        check_storage(argv, env)
        routed.bind(stdin, stdout, stderr)
        storages.touched.clear()
        try:
            code = run_guarded(argv, env=env, services=storages.service)
            stdout.flush()
            stderr.flush()
        finally:
            routed.unbind()
            os.chdir("/")
            storages.used(storages.touched)
    return _answer(code, out_bytes, err_bytes)


def run_session(argv: list[str], env: dict[str, str], session: Any) -> dict[str, Any]:
    """Serve an MCP session (`memory mcp`) on its connection until the client ends it: the answer its client gets
    if it never started (a startup failure, reported as the in-process run reports it)."""
    from agent_memory.entrypoints.cli.in_process import serve_mcp_session

    out_bytes, err_bytes = routed.ClientBytes(), routed.ClientBytes()
    stdout, stderr = io.TextIOWrapper(out_bytes, encoding="utf-8"), io.TextIOWrapper(err_bytes, encoding="utf-8")
    routed.bind(io.StringIO(), stdout, stderr)
    try:
        code = serve_mcp_session(argv, env, session)
        stdout.flush()
        stderr.flush()
    finally:
        routed.unbind()
    return _answer(code, out_bytes, err_bytes)


def _answer(code: int, out_bytes: routed.ClientBytes, err_bytes: routed.ClientBytes) -> dict[str, Any]:
    return {
        "exit_code": code,
        "stdout": base64.b64encode(out_bytes.getvalue()).decode("ascii"),
        "stderr": base64.b64encode(err_bytes.getvalue()).decode("ascii"),
    }
