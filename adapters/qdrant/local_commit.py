"""One SQLite commit per write in Qdrant's local mode, which otherwise commits (and syncs the disk) once per point."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

from attrs import frozen
from qdrant_client import QdrantClient
from qdrant_client.local.local_collection import LocalCollection
from qdrant_client.local.persistence import CollectionPersistence
from qdrant_client.local.qdrant_local import QdrantLocal

# Local mode keeps a collection in memory and each point as a row of one SQLite file. Its CollectionPersistence
# writes a point (persist, delete) inside `with connection:`, so every point is a transaction of its own and
# its commit syncs the file: 1,000 memories took 13-25 s, nearly all of it in those commits. During one write
# the connection is replaced by a stand-in whose `with` block does not commit; the write then commits once, or
# rolls back whole. This leans on qdrant-client's internals, so it is taken only when they have the shape
# checked in `local_target`; anything else (a server, an in-memory client, another layout after an upgrade)
# writes through the library's own path. tests/adapters/test_qdrant_local_commit.py pins that the installed
# version takes this path.


class _OneTransaction:
    """A collection's sqlite3 connection for the length of one write: its `with` block neither commits nor rolls back."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self.used = False  # a point was (being) written: the collection in memory may have changed

    def __enter__(self) -> _OneTransaction:
        self.used = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None  # an error propagates, and `one_commit` rolls the whole write back

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


@frozen
class LocalTarget:
    """Where a local-mode write to one collection lands: the collection in memory and its SQLite connection."""

    local: QdrantLocal
    name: str  # the physical collection (an alias resolved)
    collection: LocalCollection
    persistence: CollectionPersistence
    connection: sqlite3.Connection


def local_target(client: QdrantClient, collection: str) -> LocalTarget | None:
    """The local-mode storage behind `collection` when its internals have the expected shape; None otherwise."""
    local = getattr(client, "_client", None)
    if not isinstance(local, QdrantLocal) or getattr(local, "closed", True):
        return None
    collections, aliases = getattr(local, "collections", None), getattr(local, "aliases", None)
    if not isinstance(collections, dict) or not isinstance(aliases, dict):
        return None
    name = collection if collection in collections else aliases.get(collection)
    if not isinstance(name, str):
        return None  # no such collection: the write itself reports it
    found = collections.get(name)
    persistence = getattr(found, "storage", None)
    if not isinstance(found, LocalCollection) or not isinstance(persistence, CollectionPersistence):
        return None  # an in-memory collection, or internals of another shape
    connection = getattr(persistence, "storage", None)
    if not isinstance(connection, sqlite3.Connection) or connection.isolation_level is None:
        return None  # autocommit: every statement would commit by itself anyway
    if connection.in_transaction:
        return None  # someone else's transaction is open: leave it to them
    return LocalTarget(local, name, found, persistence, connection)


@contextlib.contextmanager
def one_commit(client: QdrantClient, collection: str) -> Iterator[None]:
    """Run one write to `collection` so that local mode commits it once at the end, or not at all if it fails.

    When the block returns, the write is committed (on disk); when it raises, none of it is, and the collection
    in memory is read back from disk (local mode applies each point in memory right after storing it).
    Elsewhere (a server, internals of another shape) the block runs as it is: each request commits on its own.
    """
    target = local_target(client, collection)
    if target is None:
        yield
        return
    stand_in = _OneTransaction(target.connection)
    target.persistence.storage = stand_in  # type: ignore[assignment]
    try:
        yield
        commit(target.connection)
    except BaseException:
        target.persistence.storage = target.connection
        with contextlib.suppress(sqlite3.Error):
            target.connection.rollback()  # SQLite may have rolled back already (a full disk at COMMIT)
        if stand_in.used:
            _read_back(target)
        raise
    finally:
        target.persistence.storage = target.connection


def commit(connection: sqlite3.Connection) -> None:
    """The one commit of a write (a function of its own so that a test can make it fail)."""
    connection.commit()


def _read_back(target: LocalTarget) -> None:
    """Replace the collection in memory by what its file holds after a rollback.

    If even that fails, the original error still propagates; the collection in memory may then show part of
    the failed write until the data is opened again (the file never holds it).
    """
    try:
        fresh = LocalCollection(
            target.collection.config,
            str(target.persistence.location.parent),
            force_disable_check_same_thread=target.local.force_disable_check_same_thread,
        )
    except (sqlite3.Error, OSError, ValueError):
        return
    fresh.text_indexes = target.collection.text_indexes
    target.local.collections[target.name] = fresh
    target.collection.close()
