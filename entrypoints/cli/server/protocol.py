"""The memory server's wire and places, in the standard library only: where its socket, locks and log live, who it is.

One server per user (per HOME): it serves every data directory and backend the user's commands name. Its files sit
in `~/.local/state/agent-memory/server/` (`$XDG_STATE_HOME/agent-memory/server/` when that is set; 0700):
`server-<hash>.sock` (0600; in `$XDG_RUNTIME_DIR/agent-memory/`, else `/tmp/agent-memory-<uid>/` (0700), when that
path is too long for a Unix socket), `server-<hash>.start` (the lock racing clients take to start one server),
`server-<hash>.pid` (locked by the server that takes the place's new requests, until it exits or hands the place on
to a successor and drains: free means none) and `server-<hash>.log`.

The protocol is JSON lines over the socket. The client sends one request line; the server answers
`{"accepted": true}` before it runs anything, blank heartbeat lines while it works, then one result line
`{"exit_code", "stdout", "stderr"}` (base64 bytes). `{"refused": reason}` instead means nothing ran. Every future
version keeps reading `protocol` and `build` first and refusing what it does not speak.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import select
import socket
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROTOCOL = 1
LIVE_STDERR = "stderr_now"  # a line {"stderr_now": base64} while a request runs: bytes for the client's terminal now
HEARTBEAT_S = 2.0  # the server writes a blank line this often while a request runs (more often for a short silence)
SILENCE_S = 60.0  # a client gives up on a server that sent nothing for this long (setting server_timeout_seconds)
CONNECT_S = 5.0
REQUEST_S = 30.0  # a server drops a connection that sends no full request line in this long
START_LOCK_S = 90.0  # a client waits this long for another client's start of the server
READY_S = 90.0  # ... and this long for the server it started to listen
PREDECESSOR_S = 60.0  # a new server waits this long for the one it replaces to exit
MAX_SOCKET_PATH = 100  # sockaddr_un holds 108 bytes on Linux, 104 on macOS
LOG_LIMIT = 1 << 20  # the log is rotated once past 1 MiB

# The environment is no part of a server's identity: a server runs each request with that request's settings, so an
# activated virtualenv, PYTHONUNBUFFERED, TZ or a proxy variable of one shell never sends another shell's (or a live
# MCP session's) server away. Only the variables below matter to a request beyond its settings, and only to one that
# talks to a Chroma or Qdrant server: its HTTP client reads the proxy and CA variables of the process when it is made,
# so they travel with each request, and a server whose own differ retires for one with the client's
# (running.check_storage).
NETWORK_PREFIXES: tuple[str, ...] = ("SSL_CERT_", "GRPC_")
NETWORK_VARIABLES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
NETWORK_VARIABLES |= {name.lower() for name in NETWORK_VARIABLES if name.endswith("_PROXY")}


def network_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The proxy and CA variables of `env` (read by the HTTP clients of a Chroma or Qdrant server)."""
    return {k: v for k, v in env.items() if k in NETWORK_VARIABLES or k.startswith(NETWORK_PREFIXES)}


@dataclass(frozen=True)
class Place:
    """The files of this user's memory server: its directory (pid file, start lock, log) and its socket."""

    directory: Path
    socket: Path

    @property
    def name(self) -> str:
        return self.socket.stem

    @property
    def start_lock(self) -> Path:
        return self.directory / f"{self.name}.start"

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.name}.pid"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def noted(self) -> Path:
        """Made when a command first told its terminal that it started a background server (it says so once)."""
        return self.directory / "noted"


def server_directory(env: Mapping[str, str]) -> Path:
    """Where this user's server keeps its files: `$XDG_STATE_HOME/agent-memory/server`, else under `~/.local/state`."""
    state = env.get("XDG_STATE_HOME", "")
    if not state.startswith("/"):
        home = env.get("HOME") or str(Path.home())
        state = str(Path(home) / ".local" / "state")
    return Path(state) / "agent-memory" / "server"


def place_for(env: Mapping[str, str]) -> Place | None:
    """Where the server of this user (its HOME) lives; None if no socket path fits."""
    directory = server_directory(env)
    digest = hashlib.sha256(os.fsencode(directory)).hexdigest()[:12]
    name = f"server-{digest}.sock"
    candidates = [directory / name]
    if env.get("XDG_RUNTIME_DIR", "").startswith("/"):
        candidates.append(Path(env["XDG_RUNTIME_DIR"]) / "agent-memory" / name)
    # last, as tmux and ssh-agent do: a directory of this user's own in the temporary directory (0700, owner
    # checked by private_directory, so another user's directory of that name is refused, never used)
    candidates.append(Path("/tmp") / f"agent-memory-{os.getuid()}" / name)
    for candidate in candidates:
        if len(os.fsencode(candidate)) <= MAX_SOCKET_PATH:
            return Place(directory=directory, socket=candidate)
    return None


def private_directory(path: Path) -> bool:
    """Create `path` as 0700 (or make an existing one of ours 0700); False if it is not a directory of this user."""
    try:
        missing = [folder for folder in (path, *path.parents) if not folder.exists()]
        for folder in reversed(missing):  # every level it makes is 0700 (`parents=True` would follow the umask)
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=0o700)
        found = path.lstat()
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            return False
        if stat.S_IMODE(found.st_mode) != 0o700:
            path.chmod(0o700)
    except OSError:
        return False
    return True


def _source_stamp() -> str:
    """The newest modification time of the package's modules: an upgrade or an edited checkout changes it."""
    import importlib.util

    newest = 0
    for package in ("agent_memory", "agent_memory.entrypoints", "agent_memory.domain", "agent_memory.adapters"):
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".py"):
                        newest = max(newest, entry.stat().st_mtime_ns)
    return str(newest)


def build_identity() -> str:
    """Who a server is: its protocol, version and code (where the package is, its modules' newest change, the
    interpreter, the file-system encoding). A client of another identity gets a server of its own beside this one,
    which drains (process.MemoryServer.retire); nothing in the environment is part of it (see NETWORK_VARIABLES).

    The interpreter is the build, not the name it was started by: `memory`, `python -m agent_memory`, `python3 -m
    agent_memory` and the venv's `python3.11` are one program (the binary the names lead to, in one environment:
    sys.prefix is the venv whichever of its names started it, and another venv's libraries are another build)."""
    import agent_memory
    from agent_memory._version import __version__

    # the locale's lasting effect on a process: how it turns str paths into bytes (set once, at its start)
    encodings = [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]
    where = os.path.dirname(os.path.abspath(agent_memory.__file__))
    interpreter = [os.path.realpath(sys.executable), os.path.realpath(sys.prefix), sys.version]
    facts = json.dumps([PROTOCOL, __version__, _source_stamp(), where, interpreter, encodings])
    return f"{__version__}+{hashlib.sha256(facts.encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


def heartbeat_for(silence: object) -> float:
    """How often to send a heartbeat to a client that gives up after `silence` s: four beats fit in its wait."""
    if not isinstance(silence, int | float) or not 0 < silence < float("inf"):
        return HEARTBEAT_S
    return max(0.01, min(HEARTBEAT_S, silence / 4))


def encode(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"


def send(connection: socket.socket, message: Mapping[str, Any]) -> None:
    connection.sendall(encode(message))


@contextlib.contextmanager
def flocked(path: Path, timeout: float) -> Iterator[bool]:
    """Hold an exclusive flock on `path` (created 0600) for the block; yields False if it stayed taken `timeout` s."""
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.02)
        yield True
    finally:
        os.close(handle)


def hold_for_life(path: Path, timeout: float) -> int | None:
    """Take an exclusive flock on `path` and keep it: the kernel frees it when this process has exited (or when the
    returned descriptor is closed: a draining server hands its place on), so a free lock means no process holds the
    place. None if it stayed taken `timeout` s."""
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(handle)
                return None
            time.sleep(0.02)


def server_alive(place: Place) -> bool:
    """Whether a server holds the pid file's lock (it does for its whole life; the kernel frees it at exit)."""
    try:
        handle = os.open(place.pid_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(handle)
    return False


def server_facts(place: Place) -> dict[str, Any]:
    """What the live server wrote in its pid file (pid, socket, version, start time); {} if unreadable."""
    try:
        facts = json.loads(place.pid_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return facts if isinstance(facts, dict) else {}


def connect(place: Place) -> socket.socket | None:
    """A connection to the server, or None when nothing listens there (no socket file, or a stale one)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(CONNECT_S)
    try:
        connection.connect(os.fspath(place.socket))
    except OSError as error:
        connection.close()
        if error.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK, errno.EAGAIN):
            return None
        raise
    return connection


# --- every server of this user ------------------------------------------------------------------------------------


def registry() -> Path:
    """Where each live server of this user, whatever its data directory, keeps `<pid>.json` (0600, locked for its
    life): a directory of this user's own in the temporary directory (0700, owner checked), as the sockets' last
    resort is, so that no environment variable of a client changes where `memory server list` looks."""
    return Path("/tmp") / f"agent-memory-{os.getuid()}" / "servers"


def register(facts: Mapping[str, Any]) -> int | None:
    """Write this server's entry and lock it for the process's life; its descriptor (None if it cannot be made)."""
    folder = registry()
    if not private_directory(folder):
        return None
    staged = folder / f"{os.getpid()}.json.new"  # locked before it takes its name: a lister never sees it free
    try:
        handle = os.open(staged, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(handle, json.dumps(dict(facts)).encode("utf-8"))
        staged.rename(folder / f"{os.getpid()}.json")
    except OSError:
        os.close(handle)
        return None
    return handle


def update_entry(handle: int | None, facts: Mapping[str, Any]) -> None:
    """Rewrite this server's entry in place (its state changed: draining)."""
    if handle is None:
        return
    with contextlib.suppress(OSError):
        os.ftruncate(handle, 0)
        os.pwrite(handle, json.dumps(dict(facts)).encode("utf-8"), 0)


def registered() -> list[dict[str, Any]]:
    """The entries of this user's live servers; an entry whose lock is free (its server is gone) is removed."""
    folder = registry()
    found: list[dict[str, Any]] = []
    try:
        entries = sorted(folder.glob("*.json"))
    except OSError:
        return found
    for entry in entries:
        try:
            handle = os.open(entry, os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # held: a live server
                facts = json.loads(entry.read_text(encoding="utf-8") or "{}")
                if isinstance(facts, dict) and isinstance(facts.get("pid"), int):
                    found.append(facts)
                continue
            with contextlib.suppress(OSError):
                entry.unlink()  # nobody holds it: a server that is gone
        except (OSError, ValueError):
            continue
        finally:
            os.close(handle)
    return found


def still_connected(connection: socket.socket) -> bool:
    """Whether the peer of a connection whose request was read whole is still there (it sends nothing more)."""
    try:
        ready, _, _ = select.select([connection], [], [], 0)
        return not ready or connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except (OSError, ValueError):  # reset, or closed on this side
        return False
