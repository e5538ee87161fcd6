"""The local memory server's streams and log: each request thread writes to its client's stdin/stdout/stderr.

The server runs the `memory` handlers, which print to sys.stdout and sys.stderr, for several clients at once; these
proxies route each thread to its own client's streams, and everything else (library events) to the server's log.
"""

from __future__ import annotations

import base64
import contextlib
import io
import logging
import socket
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from agent_memory.entrypoints.cli.server.protocol import LIVE_STDERR, encode


class PerThread:
    """sys.stdin / stdout / stderr of the server: each request thread sees its client's streams, others the log."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self._local = threading.local()

    def bind(self, stream: Any) -> None:
        self._local.stream = stream

    def unbind(self) -> None:
        self._local.stream = None

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self._local, "stream", None) or self.fallback, name)


class ClientBytes(io.BytesIO):
    """A client's stream as bytes, answering isatty() as the client's stream did."""

    def __init__(self, data: bytes = b"", *, tty: bool = False) -> None:
        super().__init__(data)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


Sender = Callable[[bytes], None]  # writes bytes to a client's connection (OSError once it is gone)


def locked_sender(connection: socket.socket) -> Sender:
    """sendall on the connection under a lock: the heartbeat thread and the command's live stderr share it."""
    sending = threading.Lock()

    def send(data: bytes) -> None:
        with sending:
            connection.sendall(data)

    return send


def client_stderr(tty: bool, send: Sender) -> ClientBytes:
    """A command's stderr: a terminal's goes to the client as it is written, as {"stderr_now": base64} lines (a
    progress bar moving); a pipe's or a file's comes whole in the answer (its JSON error after the command's end)."""
    if not tty:
        return ClientBytes()
    return LiveBytes(lambda data: send(encode({LIVE_STDERR: base64.b64encode(data).decode("ascii")})))


class LiveBytes(ClientBytes):
    """A client's terminal stderr: each write goes to the client as it is made (`send`, a progress bar drawn as it
    moves), as the in-process command's would; once `send` fails (the client gone), the rest is kept like
    ClientBytes keeps it. Only a terminal's stderr is live: a pipe's bytes all come in the answer, in order."""

    def __init__(self, send: Callable[[bytes], None]) -> None:
        super().__init__(tty=True)
        self._send: Callable[[bytes], None] | None = send

    def write(self, data: Any) -> int:
        if self._send is None:
            return super().write(data)
        try:
            self._send(bytes(data))
        except OSError:
            self._send = None
            return super().write(data)
        return len(data)


def client_text(buffer: ClientBytes, facts: Any, default_errors: str) -> io.TextIOWrapper:
    encoding, errors = "utf-8", default_errors
    if isinstance(facts, list) and len(facts) == 3 and all(isinstance(f, str) for f in facts[:2]):
        encoding, errors = facts[0], facts[1]
    try:
        return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline="\n")
    except LookupError:
        return io.TextIOWrapper(buffer, encoding="utf-8", errors=default_errors, newline="\n")


_STREAMS: tuple[PerThread, PerThread, PerThread] | None = None


def install_streams() -> None:
    """Route sys.stdin/stdout/stderr per thread (before any library keeps a reference to them)."""
    global _STREAMS
    _STREAMS = (PerThread(io.StringIO()), PerThread(sys.stderr), PerThread(sys.stderr))
    sys.stdin, sys.stdout, sys.stderr = _STREAMS


def bind(stdin: Any, stdout: Any, stderr: Any) -> None:
    assert _STREAMS is not None
    for proxy, stream in zip(_STREAMS, (stdin, stdout, stderr), strict=True):
        proxy.bind(stream)


def unbind() -> None:
    assert _STREAMS is not None
    for proxy in _STREAMS:
        proxy.unbind()


def log(line: str) -> None:
    """One line in the server's log (its stderr when no request is bound to this thread)."""
    target = _STREAMS[2].fallback if _STREAMS is not None else sys.__stderr__
    if target is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        target.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} {line}\n")
        target.flush()


class ToLog(logging.Handler):
    """The package's log records (a mirror built in the background, …) as lines of the server's log."""

    def emit(self, record: logging.LogRecord) -> None:
        log(f"{record.name}: {record.getMessage()}")


def log_library_events() -> None:
    logger = logging.getLogger("agent_memory.adapters")
    logger.addHandler(ToLog())
    logger.setLevel(logging.INFO)
    logger.propagate = False  # once: the MCP SDK gives the root logger a handler of its own in a session


__all__ = [
    "ClientBytes",
    "LiveBytes",
    "Sender",
    "bind",
    "client_stderr",
    "client_text",
    "install_streams",
    "locked_sender",
    "log",
    "log_library_events",
    "unbind",
]
