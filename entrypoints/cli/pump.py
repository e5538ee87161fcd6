"""The thin client's longer conversations with the memory server: an MCP stdio session, `server status`, `list`, `stop`.

Standard library only, like cli/client.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_memory.entrypoints.cli.server import protocol as wire


def pump(connection: socket.socket, reader: Any, place: wire.Place) -> int:
    """Relay stdin to the server's MCP session and its answers to stdout until either side ends. The session waits
    on its MCP client as the in-process `memory mcp` does, so no timeout here."""
    connection.settimeout(None)
    input_done = threading.Event()

    def forward_input() -> None:
        try:
            while chunk := os.read(0, 65536):
                connection.sendall(chunk)
        except OSError:
            pass
        finally:
            input_done.set()
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_WR)

    threading.Thread(target=forward_input, daemon=True).start()
    try:
        while chunk := reader.read1(65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    except OSError:
        pass
    finally:
        connection.close()
    if input_done.is_set():
        return 0
    body = {
        "error": f"The memory server ended the MCP session before its client did; the server's log is {place.log}.",
        "code": "SERVER_LOST",
    }
    sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    return 1


def _ask(place: wire.Place, op: str, silence: float) -> dict[str, Any] | None:
    """One management request (status, stop) and its answer; None if the server does not answer in `silence` s."""
    try:
        connection = wire.connect(place)
    except OSError:
        return None
    if connection is None:
        return None
    try:
        connection.settimeout(silence)
        wire.send(connection, {"protocol": wire.PROTOCOL, "op": op})
        answer = json.loads(connection.makefile("rb").readline() or b"null")
    except (OSError, ValueError):
        return None
    finally:
        connection.close()
    return answer if isinstance(answer, dict) else None


def server_status(place: wire.Place, silence: float) -> dict[str, Any]:
    """`memory server status`: running (with what the server says of itself and the stores it holds open), stopped,
    or not answering."""
    where = {"directory": str(place.directory), "socket": str(place.socket)}
    if not wire.server_alive(place):
        return {"status": "stopped", **where}
    answer = _ask(place, "status", silence)
    if answer is None:
        facts = wire.server_facts(place)
        return {"status": "not answering", **where, "pid": facts.get("pid"), "log": str(place.log)}
    return {"status": "running", **where, **answer}


def _exits_within(place: wire.Place, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while wire.server_alive(place) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not wire.server_alive(place)


def _rss_mb(pid: int) -> float | None:
    """The resident memory of a process in MB (Linux /proc), else None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def _place_of(facts: dict[str, Any]) -> wire.Place | None:
    if not all(isinstance(facts.get(key), str) for key in ("directory", "socket")):
        return None
    return wire.Place(Path(facts["directory"]), Path(facts["socket"]))


def server_list(silence: float, directory: Path) -> list[dict[str, Any]]:
    """`memory server list`: every live memory server of this user (one, or two while a newer build takes over):
    pid, state (serving, or draining for a successor), RSS, clients (commands and MCP sessions), idle time and
    each store it holds open (data directory, backend, the sessions holding it, its idle time). This user is its
    server directory (its HOME's, or XDG_STATE_HOME's): the servers of other HOMEs of the same uid, which the
    registry also holds (`stop --everywhere` stops them), are not listed."""
    listed = []
    for facts in wire.registered():
        if facts.get("directory") != str(directory):
            continue
        pid = facts["pid"]
        entry: dict[str, Any] = {key: facts.get(key) for key in ("directory", "pid", "state", "started_at")}
        entry["rss_mb"] = _rss_mb(pid)
        place = _place_of(facts)
        answer = None
        if place is not None and facts.get("state") == "serving" and wire.server_facts(place).get("pid") == pid:
            answer = _ask(place, "status", silence)
        if answer is not None and answer.get("pid") == pid:
            entry["clients"] = answer.get("requests_active", 0)  # an MCP session is one too
            entry["sessions"] = answer.get("sessions", 0)
            entry["idle_for_seconds"] = answer.get("idle_for_seconds")
            entry["stores"] = answer.get("stores", [])
        else:
            entry["sessions"] = facts.get("sessions")
            entry["stores"] = facts.get("stores", [])
        entry["log"] = facts.get("log")
        listed.append(entry)
    return listed


def _draining(directory: Path | None) -> list[dict[str, Any]]:
    """Registered servers that hand their place on and drain (of one server directory, or of any)."""
    return [
        facts
        for facts in wire.registered()
        if facts.get("state") == "draining" and (directory is None or facts.get("directory") == str(directory))
    ]


def _terminate(
    pid: int, entry: dict[str, Any], exits_within: Callable[[float], bool], silence: float, signals: tuple[int, ...]
) -> bool:
    """Send `signals`, wait up to `silence` (at most PREDECESSOR_S) for the exit, then SIGKILL (said in `entry`)."""
    for sent in signals:
        with contextlib.suppress(OSError):
            os.kill(pid, sent)
    if exits_within(min(silence, wire.PREDECESSOR_S)):
        return True
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    entry["killed"] = True
    return exits_within(wire.PREDECESSOR_S)


def _gone(pid: int, seconds: float) -> bool:
    """Whether the registered server `pid` has exited within `seconds` (its entry's lock is free)."""
    deadline = time.monotonic() + seconds
    while any(facts["pid"] == pid for facts in wire.registered()):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _stop_draining(facts: dict[str, Any], silence: float) -> dict[str, Any]:
    """A draining server takes no connection: SIGTERM ends it (its sessions are ended, as `stop` ends them)."""
    pid = facts["pid"]
    entry: dict[str, Any] = {"pid": pid, "draining": True}
    exited = _terminate(pid, entry, partial(_gone, pid), silence, (signal.SIGTERM,))
    return entry | {"exited": exited}


def stop_everywhere(silence: float) -> list[dict[str, Any]]:
    """`memory server stop --everywhere`: every server of this user, each as `stop` stops it."""
    stopped: list[dict[str, Any]] = []
    places = {}
    for facts in wire.registered():
        place = _place_of(facts)
        if place is not None and facts.get("state") == "serving":
            places[place.directory] = place
    for place in places.values():
        stopped += [
            entry | {"directory": str(place.directory)} for entry in stop_servers(place, silence, everyone=False)
        ]
    stopped += [_stop_draining(facts, silence) | {"directory": facts.get("directory")} for facts in _draining(None)]
    return stopped


def stop_servers(place: wire.Place, silence: float, *, everyone: bool) -> list[dict[str, Any]]:
    """`memory server stop [--all]`: ask this user's server to stop and wait for it to exit (requests in flight
    finish; `--all`: the servers draining for a successor too). One that does not answer in `silence` s (stopped or hung) gets SIGTERM and SIGCONT, and SIGKILL if it
    has not exited `silence` s later: every write it acknowledged is on disk, as after any SIGKILL. One entry per
    server that was running, `exited` false if it still ran after the wait, `killed` true if it took SIGKILL."""
    stopped = []
    if wire.server_alive(place):
        pid = wire.server_facts(place).get("pid")
        entry: dict[str, Any] = {"pid": pid}
        if _ask(place, "stop", silence) is not None or not isinstance(pid, int):
            exited = _exits_within(place, wire.PREDECESSOR_S)
        else:
            exited = _terminate(pid, entry, partial(_exits_within, place), silence, (signal.SIGTERM, signal.SIGCONT))
        stopped.append(entry | {"exited": exited})
    if everyone:  # and the servers of this place that drain for a successor
        stopped += [_stop_draining(facts, silence) for facts in _draining(place.directory)]
    return stopped
