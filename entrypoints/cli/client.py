"""The `memory` command's entry point: a thin client of the local memory server, in the standard library only.

It parses the arguments, finds (or starts) this user's server (one for every data directory and backend), sends it
the arguments,
the settings' environment and stdin, and writes back the server's stdout, stderr and exit code byte for byte (a
terminal's stderr as the server sends it, while the command runs: progress bars). It
runs the command in this process instead (cli/in_process.py) when told to (--no-server, MEMORY_SERVER=off), for the
long-running doors (`memory serve`, `memory mcp --transport http`), and whenever the server cannot be reached or
started: then nothing is said, the command just takes its in-process time. A server that is alive but sends nothing
for server_timeout_seconds (stopped or hung) is an error, SERVER_UNRESPONSIVE, never a longer wait (_unresponsive).
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.entrypoints.cli.places import (
    InProcess,
    idle_seconds,
    resolve_place,
    silence_seconds,
    store_idle_seconds,
)
from agent_memory.entrypoints.cli.server import protocol as wire
from agent_memory.entrypoints.locations import ENVIRONMENT, PLACES

# commands whose rerun after a server died mid-way changes nothing: the client may retry them on a new server
READ_ONLY = {"get", "search", "list", "recent", "status", "export"}
TRAVELLING = {variable for variables in ENVIRONMENT.values() for variable in variables} | set(PLACES)


@dataclass
class Outcome:
    """How one exchange with the server ended."""

    kind: str  # done | absent | refused | lost | silent | unusable
    accepted: bool = False
    message: dict[str, Any] = field(default_factory=dict)


def _parse(argv: Sequence[str]) -> Any:
    """The arguments as the in-process run parses them; InProcess for usage errors, --help and --version (the
    in-process run prints those itself)."""
    from agent_memory.entrypoints.cli.parser import UsageError, build_parser

    if any("\udc80" <= char <= "\udcff" for arg in argv for char in arg):
        raise InProcess("bytes that are not UTF-8: the in-process run reports them")
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            return build_parser().parse_args(list(argv))
    except (UsageError, SystemExit):
        raise InProcess("usage, help or version") from None


def reads_stdin(args: Any) -> bool:
    """Whether the command reads its input from stdin (cli_handlers._read_stdin)."""
    if args.command == "create":
        return bool(args.jsonl == "-" or (args.jsonl is None and args.content in (None, "-")))
    if args.command == "add":
        return args.content in (None, "-")
    return bool(args.command == "import" and args.input == "-")


def _stream_facts(stream: Any, default_errors: str) -> list[Any]:
    if stream is None:
        return ["utf-8", default_errors, True]
    try:
        tty = stream.isatty()
    except (OSError, ValueError):
        tty = False
    return [stream.encoding, stream.errors or default_errors, tty]


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or str(Path.home())


def build_request(op: str, argv: Sequence[str], args: Any, place: wire.Place, env: Mapping[str, str]) -> dict[str, Any]:
    """The one request line: arguments, the settings' environment, cwd, umask, stdin and the streams' encodings."""
    umask = os.umask(0o022)
    os.umask(umask)
    request: dict[str, Any] = {
        "protocol": wire.PROTOCOL,
        "build": wire.build_identity(),
        "op": op,
        "argv": list(argv),
        "env": {k: v for k, v in env.items() if k in TRAVELLING or k.startswith("MEMORY_")}
        | wire.network_environment(env)
        | {"HOME": _home(env)},
        "cwd": os.getcwd(),
        "umask": umask,
        "streams": {
            "stdin": _stream_facts(sys.stdin, "strict"),
            "stdout": _stream_facts(sys.stdout, "strict"),
            "stderr": _stream_facts(sys.stderr, "backslashreplace"),
        },
        "stdin": None,
        "silence_s": silence_seconds(env),  # the server beats often enough for this client's patience
    }
    if op == "run" and reads_stdin(args) and sys.stdin is not None and not request["streams"]["stdin"][2]:
        content = sys.stdin.buffer.read()
        request["stdin"] = base64.b64encode(content).decode("ascii")
        # should the command run in-process after all, it reads the same text
        sys.stdin = io.TextIOWrapper(
            io.BytesIO(content), encoding=sys.stdin.encoding, errors=sys.stdin.errors, newline="\n"
        )
    return request


def _exchange(place: wire.Place, request: Mapping[str, Any], *, until_stream: bool = False) -> Outcome:
    """Send the request and read the answer, every wait bounded; the connection is closed on return unless the
    server switched to streaming (then `message["connection"]` and `message["reader"]` carry it on)."""
    try:
        connection = wire.connect(place)
    except OSError:
        return Outcome("unusable")
    if connection is None:
        return Outcome("absent")
    keep = False
    accepted = False
    try:
        try:
            connection.settimeout(min(wire.REQUEST_S, request["silence_s"]))
            connection.sendall(wire.encode(request))
            connection.settimeout(request["silence_s"])
            reader = connection.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return Outcome("lost", accepted)
                if not line.strip():
                    continue  # a heartbeat: the server is still working
                message = json.loads(line)
                if not isinstance(message, dict):
                    return Outcome("unusable", accepted)
                if "refused" in message:
                    return Outcome("refused", accepted, message)
                if message.get("accepted") is True:
                    accepted = True
                elif wire.LIVE_STDERR in message:  # the terminal's stderr as the command writes it (a progress bar)
                    _write(sys.stderr, message[wire.LIVE_STDERR])
                elif until_stream and message.get("stream") is True:
                    keep = True
                    return Outcome("done", accepted, {"connection": connection, "reader": reader})
                elif "exit_code" in message:
                    return Outcome("done", accepted, message)
                else:
                    return Outcome("unusable", accepted)
        except TimeoutError:  # alive (it holds its pid lock) but silent: stopped, hung, or starved
            return Outcome("silent", accepted)
        except (OSError, ValueError):  # resets, broken pipes, lines that are not JSON
            return Outcome("lost" if accepted else "unusable", accepted)
    finally:
        if not keep:
            connection.close()


def start_server(place: wire.Place, env: Mapping[str, str], backend: str | None = None) -> bool:
    """Start the place's server (one, however many clients race here) and wait until it listens; False if not.
    `backend`: the first command's, whose library the server imports while it waits for the request."""
    import subprocess
    import threading
    import time

    if not wire.private_directory(place.directory) or not wire.private_directory(place.socket.parent):
        return False
    idle, store_idle = idle_seconds(env), store_idle_seconds(env)
    try:
        with wire.flocked(place.start_lock, wire.START_LOCK_S) as held:
            if not held:
                return False
            if _listening(place):  # another client started it while this one waited
                return True
            if place.log.exists() and place.log.stat().st_size > wire.LOG_LIMIT:
                place.log.replace(place.log.with_suffix(".log.1"))
            with open(os.open(place.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as log:
                command = [sys.executable, "-m", "agent_memory.entrypoints.cli.server.process"]
                options = ["--directory", str(place.directory), "--socket", str(place.socket)]
                options += ["--idle-seconds", repr(idle), "--store-idle-seconds", repr(store_idle)]
                options += ["--warm-backend", backend] if backend else []
                process = subprocess.Popen(
                    [*command, *options],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    cwd="/",
                    start_new_session=True,
                )
            threading.Thread(target=process.wait, daemon=True).start()  # a long-lived client reaps it
            deadline = time.monotonic() + wire.READY_S
            while time.monotonic() < deadline and process.poll() is None:
                if _listening(place):
                    return _noted(place, idle)
                time.sleep(0.01)
            return _listening(place) and _noted(place, idle)
    except OSError:
        return False


NOTE = (
    "memory: a background server now keeps the model loaded for your commands (it stops after {idle} idle; "
    "`memory server stop` ends it, --no-server runs without it)"
)


def _noted(place: wire.Place, idle: float) -> bool:
    """Say once, on a terminal, that a background server now runs and how to stop it (the quick start's first
    command starts it); True (the server listens)."""
    try:
        tty = sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        tty = False
    if not tty or place.noted.exists():
        return True
    with contextlib.suppress(OSError):
        place.noted.touch(mode=0o600)
        said = f"{idle / 60:g} min" if idle >= 60 else f"{idle:g} s"
        sys.stderr.write(NOTE.format(idle=said) + "\n")
        sys.stderr.flush()
    return True


def _listening(place: wire.Place) -> bool:
    """Whether a live server of ours (it holds the pid file's lock) listens at the socket: a listener without the
    lock is a stranger (another program, or a server too old to take it) that the next start replaces."""
    try:
        probe = wire.connect(place)
    except OSError:
        return False
    if probe is None:
        return False
    probe.close()
    return wire.server_alive(place)


def _ask(
    place: wire.Place, request: Mapping[str, Any], read_only: bool, env: Mapping[str, str], backend: str | None
) -> Outcome:
    """The exchange, starting or replacing the server as needed; InProcess when no server can answer."""
    for _attempt in range(3):
        outcome = _exchange(place, request, until_stream=request["op"] == "mcp")
        if outcome.kind in ("done", "silent"):
            return outcome  # silent: neither a retry nor an in-process run can help (see _unresponsive)
        if outcome.kind == "refused" and outcome.message.get("refused") not in ("protocol", "build", "settings"):
            raise InProcess(f"refused: {outcome.message.get('refused')}")
        if outcome.kind == "lost" and outcome.accepted and not read_only:
            return outcome  # it may have run: only the user can tell whether to run it again
        if not start_server(place, env, backend):
            raise InProcess("no server could be started")
    raise InProcess("the server kept refusing")


def _write(stream: Any, encoded: str) -> None:
    data = base64.b64decode(encoded)
    if stream is None or not data:
        return
    stream.flush()
    stream.buffer.write(data)
    stream.flush()


def _lost(place: wire.Place) -> int:
    body = {
        "error": (
            "The memory server stopped while running this command, so it may or may not have taken effect (a create "
            "or import it had not finished is taken back out by the next command). Check with `memory get` or "
            f"`memory search` before running it again; the server's log is {place.log}."
        ),
        "code": "SERVER_LOST",
    }
    sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    return 1


def _unresponsive(place: wire.Place, outcome: Outcome, read_only: bool, silence: float) -> int:
    """A server that sent nothing for `silence` s. It is not replaced and the command does not fall back to this
    process: the server still holds its place and maybe a store's write lock (Qdrant local mode: the whole store),
    so an in-process run would wait on it or fail; a write it accepted may still finish if it wakes (a batch, not:
    it commits only while its client is connected), so running it again could do it twice; and whether to kill a process that may be mid-write is the user's call."""
    pid = wire.server_facts(place).get("pid")
    who = f"The memory server (pid {pid})" if isinstance(pid, int) else "The memory server"
    if not outcome.accepted:
        what = f"{who} sent nothing for {silence:g} s, so this command did not run."
    elif read_only:
        what = f"{who} stopped answering for {silence:g} s while running this command, which changes nothing."
    else:
        what = (
            f"{who} stopped answering for {silence:g} s while running this command, so it may or may not have taken "
            "effect (a create or import it finishes after this command has ended is taken back out; another change may "
            "still finish if the server resumes). Check with `memory get` or `memory search` before running it again."
        )
    body = {
        "error": f"{what} The server looks stopped or hung: `memory server stop` ends it (the next command starts a "
        f"new one), or run the command with --no-server. Its log is {place.log}; server_timeout_seconds "
        "(MEMORY_SERVER_TIMEOUT_SECONDS) sets how long to wait.",
        "code": "SERVER_UNRESPONSIVE",
    }
    sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    return 1


def _through_server(argv: Sequence[str], args: Any, env: Mapping[str, str]) -> int:
    if args.command in ("serve", "ui") or (args.command == "mcp" and args.transport != "stdio"):
        raise InProcess("a long-running door of its own")
    if args.command == "server":
        from agent_memory.entrypoints.cli.server.manage import manage_server

        return manage_server(args, env)
    place = resolve_place(args, env)
    if not wire.private_directory(place.directory) or not wire.private_directory(place.socket.parent):
        raise InProcess("no private directory for the socket")
    op = "mcp" if args.command == "mcp" else "run"
    request = build_request(op, argv, args, place, env)
    hint = getattr(args, "backend", None) or env.get("MEMORY_BACKEND")
    outcome = _ask(place, request, args.command in READ_ONLY, env, hint)
    if outcome.kind == "lost":
        return _lost(place)
    if outcome.kind == "silent":
        return _unresponsive(place, outcome, args.command in READ_ONLY, request["silence_s"])
    if op == "mcp" and "connection" in outcome.message:  # else the session could not start: its error follows
        from agent_memory.entrypoints.cli.pump import pump

        return pump(outcome.message["connection"], outcome.message["reader"], place)
    _write(sys.stdout, outcome.message.get("stdout", ""))
    _write(sys.stderr, outcome.message.get("stderr", ""))
    code = outcome.message["exit_code"]
    return code if isinstance(code, int) else 1


def main() -> None:
    """Console entry point: through the server when it can, else the in-process `memory` (cli.main)."""
    argv = sys.argv[1:]
    try:
        args = _parse(argv)
        code = _through_server(argv, args, os.environ)
    except InProcess:
        from agent_memory.entrypoints.cli.in_process import main as in_process

        in_process()
        return
    except KeyboardInterrupt:
        sys.stderr.write(json.dumps({"error": "Interrupted.", "code": "INTERRUPTED"}) + "\n")
        code = 1
    sys.stdout.flush()
    sys.exit(code)
