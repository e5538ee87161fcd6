"""Chroma clients: a server's (probed first, its connect phase bounded), a data directory's, a read-only disk's copy."""

from __future__ import annotations

import pathlib
import socket
import weakref

import chromadb
import httpx
from chromadb.api import ClientAPI
from chromadb.config import Settings
from chromadb.errors import ChromaError

from agent_memory.adapters.chroma.boundary import Boundary, storage_error
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.disk import FULL_DISK, cannot_write, disk_hint, read_only_copy
from agent_memory.adapters.shared.private import owner_only_files, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode

CONNECT_TIMEOUT_S = 3.0


def server_client(boundary: Boundary, host: str, port: int) -> ClientAPI:
    """A client of the Chroma server at host:port; an Abort saying why there is none."""
    try:  # a quick TCP probe: chromadb would wait for the OS connect timeout (minutes) on a silent host
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise Abort(boundary.unavailable(error)) from error
    try:
        client = chromadb.HttpClient(host=host, port=port, settings=Settings(anonymized_telemetry=False))
    except (httpx.TransportError, ConnectionError, ValueError) as error:
        # chromadb turns a refused connection during the handshake into ValueError("Could not connect…")
        raise Abort(boundary.unavailable(error)) from error
    except ChromaError as error:
        raise Abort(storage_error("start a client", error)) from error
    _bound_connect_timeout(client)
    return client


DATABASE_FILE = "chroma.sqlite3"  # an embedded database is there once this file is


def embedded_client(boundary: Boundary, path: pathlib.Path) -> ClientAPI:
    """A client of the embedded database at `path` (made when missing); an Abort saying why there is none."""
    database = path / DATABASE_FILE
    if database.is_file() and database.stat().st_size == 0:
        # an empty database file would silently become a new, empty store: refuse, and say what to do
        raise Abort(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                f"The ChromaDB data at {path} is damaged: chroma.sqlite3 is empty. Restore the folder from a "
                "backup (or a `memory export`), or move it aside to start a new store.",
                path=str(database),
            )
        )
    try:
        with owner_only_files():
            private_directory(path)
            return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    except (ChromaError, OSError, ValueError, TypeError, AttributeError) as error:
        # AttributeError: chromadb 1.5.9 masks a failed start of its Rust bindings with
        # AttributeError('bindings') while cleaning up (chromadb/api/rust.py stop()).
        if (cannot_write(error) or FULL_DISK in disk_hint(error)) and database.is_file():
            return _read_only_client(boundary, path)
        raise Abort(boundary.unavailable(error)) from error


def _read_only_client(boundary: Boundary, path: pathlib.Path) -> ClientAPI:
    """Chroma must write to open its data (migrations, journals): on a disk that refuses writes (read-only, or full),
    a client over a private copy, so reads still work. Writes never reach it: each is announced on the real disk first, and fails."""
    try:
        copy = read_only_copy(path)
        client = chromadb.PersistentClient(path=str(copy), settings=Settings(anonymized_telemetry=False))
        _COPIES.add(client)
        return client
    except (ChromaError, OSError, ValueError, TypeError, AttributeError) as error:
        raise Abort(boundary.unavailable(error)) from error


_COPIES: weakref.WeakSet[ClientAPI] = weakref.WeakSet()  # the clients over a private copy (for reads only)


def reads_a_copy(client: ClientAPI) -> bool:
    """Whether `client` reads a private copy of the data (made on a disk that refused Chroma's writes to open):
    a write must never reach it, so the session makes a client of the real data first."""
    return client in _COPIES


def _bound_connect_timeout(client: ClientAPI) -> None:
    """chromadb's HTTP client waits forever (httpx timeout=None) and has no setting; bound the connect phase."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(None, connect=CONNECT_TIMEOUT_S)
