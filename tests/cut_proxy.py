"""Test helper: a TCP proxy in front of a real server that can play the server going away mid-request: the first
request holding a marker is passed on whole, then every connection is cut before its answer and new ones refused,
until healed. A fault at the client's boundary (the network), not a patch of our own classes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

HOST = "127.0.0.1"


class CutProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server((HOST, 0))
        self.port = int(self.listener.getsockname()[1])
        self.marker: bytes | None = None
        self.down = threading.Event()
        self.sent_marked = threading.Event()
        self._open: list[socket.socket] = []
        self._guard = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_after(self, marker: bytes) -> None:
        """Pass on the first request that holds `marker`, then go away (before its answer comes back)."""
        self.marker = marker

    def heal(self) -> None:
        self.marker = None
        self.down.clear()

    def close(self) -> None:
        self.listener.close()
        self._cut_all()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()
                continue
            upstream = socket.create_connection((HOST, self.upstream_port))
            with self._guard:
                self._open += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, outbound: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if not outbound and self.down.is_set():
                    break  # the answer never comes back
                target.sendall(chunk)
                if outbound and self.marker is not None and self.marker in chunk:
                    self.marker = None
                    self.sent_marked.set()
                    self.down.set()
        except OSError:
            pass
        finally:
            if self.down.is_set():
                self._cut_all()
            else:
                for sock in (source, target):
                    _close(sock)

    def _cut_all(self) -> None:
        with self._guard:
            cut, self._open = self._open, []
        for sock in cut:
            _close(sock)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@contextmanager
def cut_proxy(upstream_port: int) -> Iterator[CutProxy]:
    proxy = CutProxy(upstream_port)
    try:
        yield proxy
    finally:
        proxy.close()
