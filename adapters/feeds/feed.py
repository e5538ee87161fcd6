"""A change feed in the engine: one side index's change records, claimed seq by seq, replayed in order on every node."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from attrs import frozen
from filelock import FileLock, Timeout
from returns.result import Failure, Result, Success

from agent_memory.adapters.feeds.marks import FeedMarks
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.feed_probe import FeedProbe
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.adapters.shared.private import PRIVATE_FILE, private_directory
from agent_memory.adapters.shared.sqlite_file import is_damaged
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.results import in_turn

T = TypeVar("T")
REBUILD = "rebuild"  # the op of a rebuild's first record: a node that replays it clears its cache of the store first
CHUNK_CHARS = 200_000  # the most text one change record carries (a bigger change is split over several records)
LOCK_WAIT = 120.0  # seconds a node waits for another process of its own to finish replaying


@frozen
class Change:
    """One change record as a node replays it: its place in the feed, what it does, and its decoded body."""

    seq: int
    op: str
    body: Any


Apply = Callable[[str, Change], Result[None, DomainError]]


def chunked(items: Sequence[T], encode: Callable[[Sequence[T]], str], limit: int | None = None) -> list[str]:
    """`items` encoded in consecutive runs whose text stays within `limit` characters (one item may exceed it
    alone: it still goes whole into one record); no items give one empty run (a rebuild to nothing)."""
    limit = CHUNK_CHARS if limit is None else limit
    runs: list[str] = []
    start = 0
    while start < len(items) or not runs:
        end = len(items)
        text = encode(items[start:end])
        while len(text) > limit and end - start > 1:  # halve until it fits: about log2(n) encodings per run
            end = start + (end - start) // 2
            text = encode(items[start:end])
        runs.append(text)
        start = end
        if start >= len(items):
            break
    return runs


class ChangeFeed:
    """The feed `name` of every store (its records claimed in the Ledger), and this node's replay of it into a
    local cache through `apply`, with the watermark in the cache's own file.

    Order without a global lock: a writer first replays every record up to the head it sees (seq n − 1), then
    claims `change:<name>:<store>:<n>`; when another machine won that seq it applies the winner's record and
    tries n + 1. So records appear in seq order, and a reader that applies seq > watermark in order never skips
    one that appears later. A rebuild claims a marker (and its further chunks), then points `rebuilt:<name>:<store>`
    at the marker and removes the records before it: the feed holds at most one rebuild's worth of history.
    """

    def __init__(self, ledger: Ledger, name: str, path: Path, apply: Apply) -> None:
        self.ledger = ledger
        self.name = name
        self.kind = f"{name}-change"
        self.path = path
        self.marks = FeedMarks(path)
        self._apply = apply
        self._threads = threading.Lock()
        self._seen: set[str] = set()  # stores this object has caught up on at least once
        self._processes = FileLock(
            str(path.with_name(path.name + ".feed.lock")), timeout=LOCK_WAIT, thread_local=False, mode=PRIVATE_FILE
        )
        self.probe = FeedProbe.of(ledger)  # a reader's probe, shared with the store's other feeds (one engine read)
        self.feed_id = f"{name}@{id(self)}"  # its name among the probe's feeds
        self.probe.join(self.feed_id, self._wanted)

    def key(self, store: str, seq: int) -> str:
        return f"change:{self.name}:{store}:{seq}"

    def pointer(self, store: str) -> str:
        return f"rebuilt:{self.name}:{store}"

    # --- plumbing ---------------------------------------------------------------------------

    def _local(self, doing: str, work: Callable[[], T]) -> Result[T, DomainError]:
        try:
            return Success(work())
        except (sqlite3.Error, OSError) as error:
            return Failure(self._failed(doing, error))

    def _failed(self, doing: str, error: sqlite3.Error | OSError) -> DomainError:
        hint = disk_hint(error, self.marks.path.parent)
        return DomainError(
            ErrorCode.STORAGE_ERROR,
            f"The {self.name} cache at {self.marks.path} failed while {doing}{hint}"
            + ("." if hint else "; removing the file makes this node rebuild it from the engine."),
            cause=str(error),
        )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One replayer or writer at a time among this node's threads and processes (other nodes need none)."""
        with self._threads:
            private_directory(self.marks.path.parent)
            with self._processes:
                yield

    def _exclusive(self, doing: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        try:
            with self._locked():
                return work()
        except Timeout as error:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"Another process of this machine held the {self.name} cache for {LOCK_WAIT:.0f} s while "
                    f"{doing}; try again.",
                    cause=str(error),
                )
            )
        except OSError as error:  # the lock file cannot be made (a file in the way, a folder refusing writes)
            return Failure(self._failed(doing, error))

    def _decode(self, record: LedgerRecord) -> Result[Change, DomainError]:
        try:
            return Success(Change(record.seq, str(record.fields.get("op", "")), json.loads(record.text)))
        except ValueError as error:
            return Failure(
                DomainError(
                    ErrorCode.STORAGE_ERROR,
                    f"The {self.name} change record {record.key} in the engine cannot be read; "
                    "`memory reindex` writes the feed afresh.",
                    cause=str(error),
                )
            )

    def _applied(self, store: str, record: LedgerRecord) -> Result[None, DomainError]:
        """Apply one record to the cache, then move the watermark past it (a crash between replays it: harmless,
        every change sets a state)."""
        return (
            self._decode(record)
            .bind(lambda change: self._apply(store, change))
            .bind(lambda _: self._local("replaying", lambda: self.marks.set(store, record.seq)))
        )

    # --- reading ----------------------------------------------------------------------------

    def read(
        self,
        store: str,
        read: Callable[[], Result[T, DomainError]],
        set_aside: Callable[[], Result[None, DomainError]],
        *,
        again: bool = True,
    ) -> Result[T, DomainError]:
        """Catch up, then `read` the cache; a damaged cache file is set aside (`set_aside`: the local index rebuilt
        empty, which moves the file away with its watermarks), the whole feed replayed into a new one, and read again."""

        def recover(error: DomainError) -> Result[T, DomainError]:
            if error.code != ErrorCode.STORAGE_ERROR or not is_damaged(self.path):
                return Failure(error)
            return set_aside().bind(lambda _: self.catch_up(store)).bind(lambda _: read())

        return self.catch_up(store, again=again).bind(lambda _: read()).lash(recover)

    def catch_up(self, store: str, *, again: bool = True) -> Result[None, DomainError]:
        """Apply every record this node has not: one read of two keys in the engine when nothing is new.

        `again=False` (the reads that follow a search's first one: neighbours, similarities) skips it once this
        object has caught up on the store: they answer as of this process's last catch-up or write."""
        if not again and store in self._seen:
            return Success(None)
        return self._probe(store).map(lambda _: self._seen.add(store)).lash(self._as_it_stands)

    def _as_it_stands(self, error: DomainError) -> Result[None, DomainError]:
        """On a disk that refuses writes the cache cannot follow the feed: it answers as it stands (as the SQLite
        indexes do there), rather than failing every search."""
        folder = self.marks.path.parent
        writable = not folder.is_dir() or os.access(folder, os.W_OK)
        return Failure(error) if error.code != ErrorCode.STORAGE_ERROR or writable else Success(None)

    def _wanted(self, store: str) -> list[str]:
        """The keys this feed's probe reads (for FeedProbe: none when the watermark cannot be read, the feed then
        reads its own)."""
        try:
            return [self.key(store, self.marks.get(store) + 1), self.pointer(store)]
        except (sqlite3.Error, OSError):
            return []

    def _probe(self, store: str, *, locked: bool = False) -> Result[None, DomainError]:
        """Read the key after the watermark and the rebuild pointer; replay only when either says there is more
        (taking this machine's lock for it unless `locked`: a writer holds it already). A reader's probe is shared
        with the store's other feeds (FeedProbe); a writer reads its own."""

        def replay(found: dict[str, LedgerRecord]) -> Result[None, DomainError]:
            pointer = found.get(self.pointer(store))
            return (
                self._replay(store, pointer)
                if locked
                else self._exclusive("replaying", lambda: self._replay(store, pointer))
            )

        def probed(keys: list[str]) -> Result[dict[str, LedgerRecord], DomainError]:
            return self.ledger.read(keys) if locked else self.probe.read(store, self.feed_id, keys)

        return self._local("reading its watermark", lambda: self.marks.get(store)).bind(
            lambda mark: probed([self.key(store, mark + 1), self.pointer(store)]).bind(
                lambda found: (
                    replay(found)
                    if self.key(store, mark + 1) in found
                    or (self.pointer(store) in found and found[self.pointer(store)].seq > mark)
                    else Success(None)
                )
            )
        )

    def _replay(self, store: str, pointer: LedgerRecord | None) -> Result[None, DomainError]:
        """Under the lock: every record after the watermark, from the last rebuild marker among them on."""
        return self._local("reading its watermark", lambda: self.marks.get(store)).bind(
            lambda mark: self.ledger.listed(store, self.kind, after=_start(mark, pointer)).bind(
                lambda records: self._replay_records(store, records)
            )
        )

    def _replay_records(self, store: str, records: Sequence[LedgerRecord]) -> Result[None, DomainError]:
        rebuilds = [at for at, record in enumerate(records) if record.fields.get("op") == REBUILD]
        return in_turn(records[rebuilds[-1] if rebuilds else 0 :], lambda record: self._applied(store, record)).map(
            lambda _: None
        )

    # --- writing ----------------------------------------------------------------------------

    def append(
        self, store: str, op: str, bodies: Sequence[str], *, then: str | None = None
    ) -> Result[None, DomainError]:
        """Claim one record per body at the head of the feed (the first with `op`, the rest with `then` or `op`)
        and apply each locally in feed order, with whatever other nodes claimed in between."""

        def write() -> Result[None, DomainError]:
            # a rebuild applies nothing from before its marker (the marker clears the cache): it only needs the head,
            # so a feed holding a record this node cannot apply is still written afresh by a reindex
            head = (
                self._head(store)
                if op == REBUILD
                else self._probe(store, locked=True).bind(lambda _: self._mark(store))
            )
            match head:
                case Success(last):
                    following = int(last) + 1
                case unknown:
                    return Failure(unknown.failure())
            marker = -1
            for at, body in enumerate(bodies):
                first = at == 0
                this_op = op if first else (then or op)
                match self._claim(store, this_op, body, following, apply_lost=not (first and op == REBUILD)):
                    case Success(seq):
                        marker = seq if first else marker
                        following = seq + 1
                    case failed:
                        return Failure(failed.failure())
            return self._compact(store, marker) if op == REBUILD else Success(None)

        try:
            return self._exclusive("writing", write)
        finally:
            self.probe.wrote(store)  # an answer probed before this write is not used after it

    def _mark(self, store: str) -> Result[int, DomainError]:
        return self._local("reading its watermark", lambda: self.marks.get(store))

    def _head(self, store: str) -> Result[int, DomainError]:
        """The seq of the feed's last record (this node's watermark when it holds none beyond), nothing applied."""
        return Result.do(
            max([mark, *(record.seq for record in records)])
            for mark in self._mark(store)
            for found in self.ledger.read([self.pointer(store)])
            for records in self.ledger.listed(store, self.kind, after=_start(mark, found.get(self.pointer(store))))
        )

    def _claim(self, store: str, op: str, body: str, seq: int, *, apply_lost: bool) -> Result[int, DomainError]:
        """Claim `seq` for this body, or the first seq after it that no other writer won first; the records those
        won are applied on the way (or only passed over, without `apply_lost`). Answers the seq claimed."""
        writer = uuid.uuid4().hex
        while True:
            mine = LedgerRecord(self.key(store, seq), store, self.kind, seq, {"op": op, "writer": writer}, body)
            match self.ledger.claim(mine):
                case Success(record):
                    won = record.fields.get("writer") == writer
                    match self._applied(store, record) if won or apply_lost else Success(None):
                        case Success(_) if won:
                            return Success(seq)
                        case Success(_):
                            seq += 1
                        case failed:
                            return Failure(failed.failure())
                case refused:
                    return Failure(refused.failure())

    def _compact(self, store: str, marker: int) -> Result[None, DomainError]:
        """Point at the rebuild marker, then forget the records before it (best effort: a failure leaves them,
        which costs a new node's replay time, never correctness)."""

        def forget_older(_: None) -> Result[None, DomainError]:
            older = self.ledger.listed(store, self.kind, after=-1).map(
                lambda records: [record.key for record in records if record.seq < marker]
            )
            older.bind(lambda keys: self.ledger.remove(keys) if keys else Success(None))
            return Success(None)

        return self.ledger.put(LedgerRecord(self.pointer(store), store, f"{self.name}-rebuilt", marker)).bind(
            forget_older
        )


def _start(mark: int, pointer: LedgerRecord | None) -> int:
    """Where a replay lists from: after the watermark, or just before the last rebuild marker when that lies
    beyond it (the records in between may have been removed; the marker clears the cache anyway)."""
    return pointer.seq - 1 if pointer is not None and pointer.seq > mark else mark
