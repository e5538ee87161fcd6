"""The session: one Chroma client per database in a process, and the lock-and-generation protocol between processes."""

from __future__ import annotations

import contextlib
import gc
import logging
import pathlib
import threading
from collections.abc import Callable
from functools import partial
from typing import TypeVar
from uuid import UUID

import filelock
from attrs import define, evolve, field
from chromadb.api import ClientAPI
from chromadb.api.client import Client
from chromadb.api.models.Collection import Collection
from chromadb.api.shared_system_client import SharedSystemClient
from chromadb.errors import ChromaError

from agent_memory.adapters.chroma import layout, mirror_file
from agent_memory.adapters.chroma.boundary import Boundary, Sent
from agent_memory.adapters.chroma.clients import embedded_client, reads_a_copy
from agent_memory.adapters.chroma.takeback import log_position, take_back
from agent_memory.adapters.chroma.vector_mirror import VectorMirror
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.disk import (
    FULL_DISK,
    cannot_write,
    disk_hint,
    keep_reserve,
    nearly_full,
    no_room,
    release_reserve,
)
from agent_memory.adapters.shared.durable import write_atomically
from agent_memory.adapters.shared.private import PRIVATE_FILE, private_directory
from agent_memory.domain.errors import DomainError, ErrorCode

T = TypeVar("T")
LOG = logging.getLogger(__name__)

LOCK_FILE = ".agent-memory.lock"  # an embedded data directory's lock, held around every operation on it
GENERATION_FILE = ".agent-memory.generation"  # how many writes the data directory has seen (see Session)
LOCK_TIMEOUT_S = 60.0  # read at call time (tests shorten it)
MIRROR_BUILD_S_PER_RECORD = 3e-4  # a first guess at a mirror's build cost (measured: 0.2-0.3 ms); see mirror_policy


def _forget_system(identifier: str) -> None:
    """Make the next client for `identifier` start a fresh Chroma System, which reads the data from disk.

    Chroma keeps one System per data directory per process (SharedSystemClient, chromadb 1.5.9) and a
    new client reuses it, stale segments included. `close()` stops it only when no other client of this
    process holds it, so the cached entry is dropped here too. Its reference count is left alone: a
    later `close()` of such an old client must not count against, and stop, the new System.
    """
    SharedSystemClient._identifier_to_system.pop(identifier, None)


@define(eq=False)
class RacingWrites:
    """This process's writes to a collection while a mirror of it is being built, to apply to it before it is used."""

    collection_id: UUID
    changes: list[Callable[[VectorMirror], bool | None]] = field(factory=list)
    spoiled: bool = False  # a write failed half-way: what it left is unknown, the mirror must be read again


@define
class Session:
    """The one Chroma client of a database in this process, and the rules for sharing it with others.

    Every operation goes through `run`. A server orders its clients' writes itself, so there `run` only
    supplies the (lazily made) client. An embedded database is safe for one process only (Chroma's docs,
    chroma-core/chroma#961, #3792): a process keeps cached segments and overwrites what another wrote.
    So around each operation on a data directory `run`
      1. takes the directory's lock (LOCK_FILE): one process at a time touches the files;
      2. reads the generation (GENERATION_FILE); when it is not the one this process saw last, another
         process has written since: the client, the cached collections and Chroma's cached System are
         dropped and a new client reads everything from disk;
      3. before a write, bumps the generation, so the other processes reload before their next operation
         (before, not after: a writer killed half-way has announced what it may have written);
      4. runs the operation, each collection looked up by name (a handle from before a reload is dead).
    A process that is the only writer pays for the lock and the read of a small file per operation.
    """

    boundary: Boundary
    directory: pathlib.Path | None  # the embedded database's data directory; None for a server
    connect: Callable[[], ClientAPI]  # a new client, or an Abort saying why there is none
    _client: ClientAPI | None = field(default=None, init=False)
    _collections: dict[str, Collection] = field(factory=dict, init=False)  # by name, until a write or reload
    _seen: int | None = field(default=None, init=False)  # the generation the client has read up to
    # per collection id: the in-process mirror of its records, and the seconds Chroma spent on its searches,
    # both valid only while no other process has written (dropped by _reset); see adapters.chroma.mirror_policy
    mirrors: dict[UUID, VectorMirror] = field(factory=dict, init=False)
    search_seconds: dict[UUID, float] = field(factory=dict, init=False)
    build_s_per_record: float = field(default=MIRROR_BUILD_S_PER_RECORD, init=False)  # learnt from each build
    # per collection id: the generation its mirror's file holds (adapters.chroma.mirror_file), when this process
    # restored or wrote it; a mirror at another generation is written again by `keep_mirrors`
    mirror_files: dict[UUID, int] = field(factory=dict, init=False)
    # what a mirror built outside `run` (adapters.chroma.warming) checks before it is installed: the resets
    # (another process wrote: what was read is stale), the closes, and this process's writes that raced it
    resets: int = field(default=0, init=False)
    closes: int = field(default=0, init=False)
    _hit_full_disk: bool = field(
        default=False, init=False
    )  # a write met a full disk: renew the System once there is room
    racing: list[RacingWrites] = field(factory=list, init=False)
    _mutex: threading.RLock = field(factory=threading.RLock, init=False)  # this process's threads take turns
    _lock: filelock.FileLock | None = field(default=None, init=False)

    def run(
        self,
        doing: str,
        op: Callable[[ClientAPI], T],
        *,
        write: bool = False,
        needs: int | None = 0,
        records_only: bool = False,
    ) -> T:
        """`op` with a client that has seen every other process's writes; a `write` is announced first.

        An embedded `write` is refused whole, before anything is written, when the disk has not room for the
        `needs` bytes it will store and a reserve (adapters.shared.disk.no_room; None: a delete, which gives room
        back and is never refused so, or a write it takes back could not be undone): Chroma logs a write before it
        applies it, so one that failed half-way on a full disk would be applied later, and its reads would fail
        meanwhile. Plain: a failure aborts (adapters.shared.boundary.Abort). Re-entrant: a run inside a run of
        the same thread keeps the lock it holds. A write that may have created, renamed or dropped collections
        drops the collections found so far; one that only writes records of existing ones (`records_only`) keeps
        them: looking a collection up again costs milliseconds, a create's whole duplicate check (issue 47).
        """
        with self._mutex:  # the threads of this process take turns too
            if self._hit_full_disk and self.directory is not None and not nearly_full(self.directory):
                # after a full disk, embedded Chroma's System can hang on its next write even once there is room
                # again: once there is, it is dropped and the next client starts anew from the disk (until then
                # the old one still answers reads)
                self._hit_full_disk = False
                self._reset()
            self._lock_directory(doing, write=write)
            began = False  # a write refused for want of room never reached Chroma: its System needs no renewal
            position: int | None = None  # the write log's end before this write (embedded)
            try:
                self._refresh()
                if write:
                    if self._client is not None and reads_a_copy(self._client):
                        self._reset()  # a write goes to the real data, or fails saying why it cannot be opened
                    self._check_room(doing, needs)
                    self._announce()
                    position = None if self.directory is None else log_position(self.directory)
                began = True
                return op(self._connect())
            except Sent as sent:
                if write:
                    raise Abort(self.boundary.outcome_unknown(doing, sent.error)) from sent
                raise
            except Abort as abort:
                if self.directory is not None and FULL_DISK in abort.error.message and began:
                    self._hit_full_disk = True
                    if position is not None:
                        raise self._taken_back(abort, self.directory, position) from abort
                raise
            finally:
                if write and not records_only:
                    self._collections.clear()  # it may have created, renamed or dropped some
                if self._lock is not None and self._lock.is_locked:
                    self._lock.release()

    def find(self, client: ClientAPI, name: str) -> Collection | None:
        """The collection called `name`, None when there is none (raises what chromadb raises)."""
        cached = self._collections.get(name)
        if cached is not None and cached.name == name:  # a rename in this process changes `name` in place
            return cached
        found = layout.find(client, name)
        if found is None:
            self._collections.pop(name, None)
        else:
            self._collections[name] = found
        return found

    def forget(self, name: str) -> None:
        """Drop the cached collection called `name` (it was renamed or dropped elsewhere): the next `find` asks."""
        with self._mutex:
            self._collections.pop(name, None)

    # --- helpers

    def _connect(self) -> ClientAPI:
        """The client, made on first success (a failed attempt is retried on the next call)."""
        if self._client is None:
            self._client = self.connect()
        return self._client

    def _lock_directory(self, doing: str, *, write: bool) -> None:
        """Take the data directory's lock; a reader on a disk that refuses writes reads without it (nobody
        can write there either), a writer there is refused saying why."""
        if self.directory is None:
            return
        lock_path = self.directory / LOCK_FILE
        try:
            private_directory(self.directory)
            if self._lock is None:
                self._lock = filelock.FileLock(str(lock_path), mode=PRIVATE_FILE)
            self._lock.acquire(timeout=LOCK_TIMEOUT_S)
        except filelock.Timeout as error:  # before OSError: filelock.Timeout is one
            raise Abort(
                DomainError(
                    ErrorCode.BACKEND_UNAVAILABLE,
                    f"Cannot {doing}: another process has held the ChromaDB data directory {self.directory} for "
                    f"more than {LOCK_TIMEOUT_S:.0f} s (lock file {lock_path}). Retry when it has finished.",
                    path=str(lock_path),
                    cause=str(error),
                )
            ) from error
        except OSError as error:
            if not write and cannot_write(error):
                return
            raise Abort(self.boundary.unavailable(error)) from error

    def _taken_back(self, abort: Abort, directory: pathlib.Path, position: int) -> Abort:
        """A write that failed on a full disk after it began (the disk filled meanwhile): what it logged is taken
        back (adapters.chroma.takeback), so it is never applied; the error says whether that worked. The System
        is dropped first: after a failed compaction it can hang on its next call, reads included. Until there is
        room a new one may not open: list, export and status then read chroma.sqlite3 (ChromaVectorStore._salvaged),
        while get and search say the disk is full."""
        self._reset()
        if take_back(directory, position) or (release_reserve(directory) and take_back(directory, position)):
            return Abort(evolve(abort.error, message=f"{abort.error.message} Nothing of it was kept."))
        return Abort(
            evolve(
                abort.error,
                message=f"{abort.error.message} Part of it may be stored: run `memory reindex` once there is room.",
            )
        )

    def _check_room(self, doing: str, needs: int | None) -> None:
        if self.directory is None or needs is None:
            return
        hint = no_room(self.directory, needs)
        if not hint:
            keep_reserve(self.directory)  # room to take a write back on a full disk (see _taken_back)
        else:
            raise Abort(DomainError(ErrorCode.STORAGE_ERROR, f"ChromaDB did not {doing}{hint}. Nothing was written."))

    def _refresh(self) -> None:
        """Drop the client when another process wrote since it was made (the next `_connect` makes a new one)."""
        if self.directory is None:
            return
        current = self._generation(self.directory)
        if current != self._seen:
            self._reset()
            self._seen = current

    @property
    def generation(self) -> int | None:
        """The data directory's generation as of this process's last operation (exact inside `run`, which reads it
        under the lock); None before the first or when the file was not written by this module. A mirror in
        `mirrors` holds the store as of this generation (adapters.chroma.mirror_file keeps it so)."""
        return None if self._seen is None or self._seen < 0 else self._seen

    def stop_racing(self, build: RacingWrites) -> None:
        """Stop recording this process's writes for `build` (a background build that is over)."""
        with self._mutex:
            self.racing[:] = [other for other in self.racing if other is not build]

    def keep_mirrors(self) -> None:
        """Write the file of each mirror that holds more than its file (this process wrote since it was restored
        or written), so the next process restores it as it is now; best effort (a failure is logged)."""
        with self._mutex:
            generation = self.generation
            if self.directory is None or generation is None or not self.mirrors or not self.directory.is_dir():
                return
            for collection_id, mirror in list(self.mirrors.items()):
                if self.mirror_files.get(collection_id) == generation:
                    continue
                try:
                    mirror_file.save(self.directory, str(collection_id), generation, mirror.dimension, mirror.columns())
                except OSError as error:
                    LOG.warning("cannot write the mirror file of collection %s: %s", collection_id, error)
                    continue
                self.mirror_files[collection_id] = generation

    def close(self) -> None:
        """Close the client (its files are released), its mirrors kept in their files first; the next operation
        makes a new one."""
        with self._mutex:
            self.keep_mirrors()
            self.closes += 1
            self._reset()

    def _reset(self) -> None:
        client, self._client = self._client, None
        self._collections.clear()
        self.resets += 1
        self.mirrors.clear()
        self.search_seconds.clear()
        if client is None:  # nothing read yet: a first client reads from disk anyway
            return
        # chromadb 1.5.9 may raise AttributeError('bindings') while stopping a System (chromadb/api/rust.py
        # stop()); the old System is dropped all the same and the new client does not depend on it.
        if isinstance(client, Client):  # what PersistentClient makes
            with contextlib.suppress(ChromaError, AttributeError):
                client.close()
        _forget_system(str(self.directory))

    def _generation(self, directory: pathlib.Path) -> int:
        try:
            text = (directory / GENERATION_FILE).read_bytes()
        except FileNotFoundError:
            return 0  # nothing written since this protocol started
        except OSError as error:
            raise Abort(self.boundary.unavailable(error)) from error
        try:
            return int(text)
        except ValueError:
            return -1  # not written by this module: differs from every count, the next write replaces it

    def _announce(self) -> None:
        """Bump the generation: written whole (adapters.shared.durable), so no reader sees half of it.

        It is done with the lock held and before the write, so no other process can read in between.
        """
        if self.directory is None:
            return
        following = max(self._seen or 0, 0) + 1
        target = self.directory / GENERATION_FILE
        try:
            write_atomically(target, b"%d\n" % following)
        except OSError as error:
            raise Abort(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"Cannot write to the ChromaDB data at {self.directory}{disk_hint(error)}: the write could not "
                    f"be announced to other processes in {target}. Nothing was written.",
                    path=str(target),
                    cause=f"{type(error).__name__}: {error}",
                )
            ) from error
        self._seen = following


_EMBEDDED: dict[str, Session] = {}  # this process's session of each data directory
_EMBEDDED_GUARD = threading.Lock()


def embedded_session(path: pathlib.Path) -> Session:
    """The one session of the data directory `path` in this process (Chroma keeps one System per path too).

    Catalogs of the same directory share it, so they never make each other reload.
    """
    key = str(path)
    with _EMBEDDED_GUARD:
        session = _EMBEDDED.get(key)
        if session is None:
            boundary = Boundary(key, server=False)
            session = Session(boundary=boundary, directory=path, connect=partial(embedded_client, boundary, path))
            _EMBEDDED[key] = session
        return session


def close_embedded_sessions() -> None:
    """Close the client of every embedded data directory this process has opened, releasing its files.

    Sessions are kept per data directory for the life of the process; a process that opens many
    directories (an app serving many users, a test run) calls this when done with them. A catalog that
    is used again afterwards reconnects, reading its data from disk.
    """
    with _EMBEDDED_GUARD:
        sessions = list(_EMBEDDED.values())
        _EMBEDDED.clear()
    for session in sessions:
        session.close()
    if sessions:  # nothing was open, nothing to collect: a test run calls this after every test
        gc.collect()  # a closed System's last objects may sit in reference cycles, holding their files until collected
