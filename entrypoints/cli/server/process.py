"""The local memory server: the `memory` command's handlers behind a Unix socket, one process per user (per HOME).

Started detached by the thin client (cli/client.py), it takes each connection on a thread of its own and runs its
request (running.py: a command on the client's streams, or an MCP session) one at a time (the doors' rule:
read-check-write steps never interleave), so status, heartbeats and new clients are answered meanwhile. This module is
the server's life: its socket and place, the lock requests take turns on, the live sessions and the idle clock. It
serves every data directory and backend its requests name: each storage is opened at its first request and kept
warm, and one unused for `store_idle_seconds` is closed (storages.py). It stops after an idle time, on `memory server
stop` or SIGTERM. A client of another build (an upgrade, another interpreter) makes it retire: it hands its place to
the successor that client starts and drains, keeping every live session (an MCP stdio session, a long command) until
it ends, then exits (on Qdrant local mode it runs the other build's commands while a session holds the data, and
leaves when the sessions end). The environment of a client never replaces it (protocol.build_identity).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_memory.entrypoints.cli.server import protocol as wire
from agent_memory.entrypoints.cli.server import running
from agent_memory.entrypoints.cli.server import streams as routed
from agent_memory.entrypoints.cli.server.running import Refusal
from agent_memory.entrypoints.cli.server.storages import Storages, warm_up
from agent_memory.entrypoints.cli.server.streams import Sender

SWEEP_S = 0.2  # how often the accept loop looks for storages idle past store_idle_seconds


class MemoryServer:
    """One server process: its socket, its storage, its requests."""

    def __init__(self, place: wire.Place, idle_seconds: float, store_idle_seconds: float) -> None:
        self.place = place
        self.idle_seconds = idle_seconds
        self.store_idle_seconds = store_idle_seconds
        self.build = wire.build_identity()
        self.started_at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self.lock = threading.Lock()  # one request at a time on the service (and on cwd and umask)
        self._state = threading.Lock()
        self._active = 0
        self._served = 0
        self._last = time.monotonic()
        self._last_work = self._last  # the end of the last command or MCP session (status requests aside)
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._sessions: set[socket.socket] = set()
        self._inode: int | None = None
        self._place_lock: int | None = None  # the pid file's descriptor, locked while this server takes the place
        self._retiring = False
        self._successor_wanted = False  # another build asked while this one could not hand its storage on
        self._entry: int | None = None  # this server's locked entry among the user's servers (protocol.py)
        self._facts: dict[str, Any] = {}
        self._caller = threading.local()  # the connection of the command this thread runs (its batches' gate)
        self.storages = Storages(self._caller_there)  # used under self.lock

    # --- life -----------------------------------------------------------------------------------------------

    def serve(self, warm_backend: str | None = None) -> int:
        """Listen until idle, stopped or replaced; the exit code."""
        if not wire.private_directory(self.place.directory) or not wire.private_directory(self.place.socket.parent):
            routed.log(f"cannot make the private directory for {self.place.socket}")
            return 1
        self._place_lock = wire.hold_for_life(self.place.pid_file, wire.PREDECESSOR_S)
        if self._place_lock is None:
            routed.log("another server still holds this place: not starting")
            return 1
        facts = {"pid": os.getpid(), "socket": str(self.place.socket), "directory": str(self.place.directory)}
        facts |= {"build": self.build, "started_at": self.started_at}
        self.place.pid_file.write_text(json.dumps(facts), encoding="utf-8")
        self._facts = facts | {"log": str(self.place.log), "state": "serving"}
        self._entry = wire.register(self._facts)
        self._listen()
        routed.log(f"serving on {self.place.socket} as pid {os.getpid()}")
        routed.log_library_events()
        threading.Thread(target=warm_up, args=(warm_backend,), daemon=True).start()
        try:
            self._accept_until_done()
        finally:
            self._close()
            self._drain()
            # its entry among the user's servers stays locked until the process has exited (the kernel frees it):
            # `memory server stop` waits on that, and the next lister removes the entry
        routed.log("stopped")
        return 0

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.place.socket.unlink()  # stale: no live server holds the pid file, this one does
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        previous = os.umask(0o177)
        try:
            listener.bind(os.fspath(self.place.socket))
        finally:
            os.umask(previous)
        self.place.socket.chmod(0o600)
        self._inode = self.place.socket.stat().st_ino
        listener.listen(64)
        listener.settimeout(0.2)
        self._listener = listener

    def _accept_until_done(self) -> None:
        assert self._listener is not None
        swept = time.monotonic()
        while not self._stopping.is_set():
            # idle storages close on a clock of their own: a server that never waits 0.2 s for a client (an agent
            # calling it all the time, status polls) still gives back the stores nothing uses
            if time.monotonic() - swept >= SWEEP_S:
                self._close_idle_storages(self.store_idle_seconds)
                swept = time.monotonic()
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                with self._state:
                    idle = self._active == 0 and time.monotonic() - self._last > self.idle_seconds
                    handed_on = self._active == 0 and self._successor_wanted
                if idle or handed_on:
                    routed.log(
                        "sessions ended: over to the newer build" if handed_on else f"idle for {self.idle_seconds:g} s"
                    )
                    return
                continue
            except OSError as error:
                routed.log(f"accept failed: {error}")
                return
            with self._state:
                self._active += 1
                self._last = time.monotonic()
            threading.Thread(target=self._connection, args=(connection,), daemon=True).start()

    def stop(self) -> None:
        """Stop (`memory server stop`, SIGTERM, idle): no new connection, the socket file goes at once (a successor
        may bind), requests in flight end, MCP sessions are ended (a retiring server's too)."""
        self._retiring = False
        self._stop_listening()

    def _stop_listening(self) -> None:
        self._stopping.set()
        self._unlink()

    def retire(self) -> None:
        """Hand the place on to a successor (another build) and drain: no new request comes here, the socket and the
        pid file's lock are freed at once (the successor binds and takes them), and every live session and command
        goes on to its end; then the server exits. Both servers' writes hold across processes (the store's locks)."""
        self._retiring = True
        self._stop_listening()
        handle, self._place_lock = self._place_lock, None
        if handle is not None:
            with contextlib.suppress(OSError):
                os.close(handle)  # the kernel frees the flock: the successor may start
        with self._state:
            live = len(self._sessions)
        facts = {"state": "draining", "sessions": live, "stores": self.storages.held()}
        wire.update_entry(self._entry, self._facts | facts)
        routed.log(f"handing the place on to a successor; draining {live} live session(s)")

    def _unlink(self) -> None:
        with contextlib.suppress(OSError):
            if self._inode is not None and self.place.socket.stat().st_ino == self._inode:
                self.place.socket.unlink()

    def _close(self) -> None:
        self._unlink()
        if self._listener is not None:
            self._listener.close()

    def _drain(self) -> None:
        """Let requests in flight finish (a write the client waits for is never cut). Stopped, end MCP sessions
        (their clients see the end of the stream, as when an in-process `memory mcp` is stopped); retiring, keep
        them until their clients end them, or until a stop (SIGTERM) ends them after all."""
        ended: set[socket.socket] = set()
        while True:
            self._close_idle_storages(0.0)  # a successor may need them now (Qdrant local mode admits one process)
            with self._state:
                if self._active == 0:
                    return
                sessions = [] if self._retiring else [c for c in self._sessions if c not in ended]
            for connection in sessions:
                ended.add(connection)
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
            time.sleep(0.05)

    # --- one connection -------------------------------------------------------------------------------------

    def _connection(self, connection: socket.socket) -> None:
        try:
            connection.settimeout(wire.REQUEST_S)
            reader = connection.makefile("rb")
            line = reader.readline()
            request = json.loads(line) if line.endswith(b"\n") else None
            if isinstance(request, dict):
                self._dispatch(connection, reader, request)
        except (OSError, ValueError) as error:  # a client gone, silent or speaking nonsense: drop it
            routed.log(f"connection dropped: {type(error).__name__}: {error}")
        finally:
            with contextlib.suppress(OSError):
                connection.close()
            with self._state:
                self._active -= 1
                self._served += 1
                self._last = time.monotonic()

    def _dispatch(self, connection: socket.socket, reader: Any, request: dict[str, Any]) -> None:
        op = request.get("op")
        if request.get("protocol") != wire.PROTOCOL:
            return self._refuse(
                connection, Refusal("protocol", f"this server speaks protocol {wire.PROTOCOL}", replace=True)
            )
        if op == "status":
            return wire.send(connection, self._status())
        if op == "stop":
            wire.send(connection, {"stopping": True, "pid": os.getpid()})
            routed.log("asked to stop")
            return self.stop()
        if request.get("build") != self.build and not self._serves_another_build():
            return self._refuse(connection, Refusal("build", f"this server is build {self.build}", replace=True))
        if op == "run":
            return self._run(connection, request)
        if op == "mcp":
            return self._mcp(connection, reader, request)
        return self._refuse(connection, Refusal("op", f"unknown op {op!r}", replace=False))

    def _serves_another_build(self) -> bool:
        """Whether to run another build's command here: only while a live session holds Qdrant local data (one
        process at a time: a successor could open nothing); it then leaves once nothing runs (`_successor_wanted`)."""
        with self._state:
            exclusive = self.storages.exclusive_held()
            wanted = exclusive and bool(self._sessions) and not self._retiring
            self._successor_wanted |= wanted
            return wanted

    def _refuse(self, connection: socket.socket, refusal: Refusal) -> None:
        wire.send(connection, self._refusal(refusal))

    def _status(self) -> dict[str, Any]:
        with self._state:
            active, served = self._active - 1, self._served  # this status request is not counted
            sessions = len(self._sessions)
            idle_for = 0.0 if active > 0 else round(time.monotonic() - self._last_work, 1)
        return {
            "pid": os.getpid(),
            "build": self.build,
            "started_at": self.started_at,
            "idle_seconds": self.idle_seconds,
            "requests_served": served,
            "requests_active": active,
            "sessions": sessions,
            "idle_for_seconds": idle_for,
            "store_idle_seconds": self.store_idle_seconds,
            "stores": self.storages.held(),
            "stores_closed": self.storages.closed,
            "log": str(self.place.log),
        }

    def _run(self, connection: socket.socket, request: dict[str, Any]) -> None:
        wire.send(connection, {"accepted": True})
        result: dict[str, Any] = {}
        send_line = routed.locked_sender(connection)  # the heartbeat and a terminal's live stderr share it
        worker = threading.Thread(target=self._execute, args=(request, result, connection, send_line), daemon=True)
        worker.start()
        self._heartbeat(send_line, worker, wire.heartbeat_for(request.get("silence_s")))
        answer = result.get("answer") or {"refused": "internal", "message": result.get("crash", "no answer")}
        with self._state:
            self._last_work = time.monotonic()
        with contextlib.suppress(OSError):  # a client killed meanwhile: the command ran, nobody listens
            send_line(wire.encode(answer))

    def _heartbeat(self, send_line: Sender, worker: threading.Thread, every: float) -> None:
        alive = True
        while worker.is_alive():
            worker.join(every)
            if worker.is_alive() and alive:
                try:
                    send_line(b"\n")
                except OSError:
                    alive = False  # keep waiting: the command must end before the server can

    def _execute(
        self, request: dict[str, Any], result: dict[str, Any], connection: socket.socket, send: Sender
    ) -> None:
        self._caller.connection = connection  # a batch commits only while its client is there to hear of it
        try:
            result["answer"] = running.run_command(request, send, self.storages, self.lock)
        except Refusal as refusal:
            result["answer"] = self._refusal(refusal)
        except BaseException as error:  # the worker must not die silently: the client then reports SERVER_LOST
            routed.log(f"request failed: {type(error).__name__}: {error}")

    def _refusal(self, refusal: Refusal) -> dict[str, Any]:
        if refusal.replace and not self._retiring:
            routed.log(f"refused ({refusal.reason}: {refusal})")
            self.retire()
        return {"refused": refusal.reason, "message": str(refusal), "pid": os.getpid()}

    def _mcp(self, connection: socket.socket, reader: Any, request: dict[str, Any]) -> None:
        """`memory mcp` over this connection: the session runs here, on the warm service, until the client ends."""
        from agent_memory.entrypoints.mcp.server import StdioSession

        argv, env = running.arguments(request)
        wire.send(connection, {"accepted": True})
        try:
            with self.lock:
                running.check_storage(argv, env)
        except Refusal as refusal:
            return wire.send(connection, self._refusal(refusal))
        started = threading.Event()

        def ready() -> None:
            connection.settimeout(None)  # the session waits on its MCP client, as the in-process one does
            wire.send(connection, {"stream": True})
            with self._state:
                self._sessions.add(connection)
            started.set()

        pinned: set[tuple[object, ...]] = set()  # the storages this session holds open until it ends

        def services(settings: Any) -> Any:
            with self.lock:
                built = self.storages.service(settings)
                self.storages.pin(settings, pinned)
                return built

        output = connection.makefile("wb")
        session = StdioSession(services=services, lock=self.lock, stdin=reader, stdout=output, ready=ready)
        try:
            never_started = running.run_session(argv, env, session)
        finally:
            with self._state:
                self._sessions.discard(connection)
                self._last_work = time.monotonic()
            with self.lock:
                self.storages.unpin(pinned)
        if started.is_set():
            with contextlib.suppress(OSError):
                output.close()
            return None
        return wire.send(connection, never_started)

    # --- the storages, between requests ---------------------------------------------------------------------

    def _close_idle_storages(self, idle_seconds: float) -> None:
        """Close the storages unused for `idle_seconds` that no session holds; skipped while a request runs."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            self.storages.close_idle(idle_seconds)
        finally:
            self.lock.release()

    def _caller_there(self) -> bool:
        """Whether the client of the command this thread runs is still connected (True outside a command)."""
        connection = getattr(self._caller, "connection", None)
        return connection is None or wire.still_connected(connection)


def main(argv: list[str] | None = None) -> None:
    """`python -m agent_memory.entrypoints.cli.server.process --directory D --socket S --idle-seconds N
    --store-idle-seconds M [--warm-backend B]`."""
    parser = argparse.ArgumentParser(prog="memory-server", description="The local memory server (started by `memory`).")
    parser.add_argument("--directory", required=True, type=Path)
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("--idle-seconds", type=float, default=480.0)
    parser.add_argument("--store-idle-seconds", type=float, default=120.0)
    parser.add_argument("--warm-backend", default=None)
    options = parser.parse_args(argv)
    routed.install_streams()
    place = wire.Place(options.directory, options.socket)
    server = MemoryServer(place, options.idle_seconds, options.store_idle_seconds)
    signal.signal(signal.SIGTERM, lambda _signal, _frame: server.stop())
    signal.signal(signal.SIGINT, lambda _signal, _frame: server.stop())
    sys.exit(server.serve(options.warm_backend))


if __name__ == "__main__":
    main()
