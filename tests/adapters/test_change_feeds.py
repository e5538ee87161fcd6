"""The change feeds' own promises beyond the port contracts: nodes follow each other's writes and rebuilds, a lost
race for a seq is applied not skipped, big changes are chunked, the feed is compacted, and a wiped or damaged
cache comes back from the engine by itself."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Failure, Result

from agent_memory.adapters.feeds import feed as feed_module
from agent_memory.adapters.feeds.keywords import FedKeywordIndex
from agent_memory.adapters.feeds.parts import FedPartVectors
from agent_memory.adapters.shared.ledger import InMemoryLedger, LedgerRecord
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.adapters.sqlite_parts import SqlitePartVectors
from agent_memory.domain.errors import DomainError, ErrorCode
from tests.contract.keyword_index_contract import STORE, entry, filler, found
from tests.contract.part_vectors_contract import X, Y
from tests.contract.vector_store_contract import failed_with, ok


class CountingLedger(InMemoryLedger):
    """The reference ledger, counting the calls a node makes (how cheap is a catch-up with nothing new)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        self.calls.append("read")
        return super().read(keys)

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]:
        self.calls.append("listed")
        return super().listed(store, kind, after=after)


def keywords(folder: Path, ledger: InMemoryLedger) -> FedKeywordIndex:
    return FedKeywordIndex(SqliteKeywordIndex(folder / "keywords.sqlite3"), ledger)


def changes(ledger: InMemoryLedger, kind: str = "keywords-change") -> list[LedgerRecord]:
    return ok(ledger.listed(STORE, kind))


def test_a_write_on_one_node_is_found_on_another_and_nothing_new_costs_one_read(tmp_path: Path) -> None:
    ledger = CountingLedger()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(a.upsert(STORE, [entry("m1", "the lighthouse keeper"), *filler()]))
    assert found(b, "lighthouse") == {"m1"}
    ok(a.remove(STORE, ["m1"]))
    ok(a.upsert(STORE, [entry("m2", "a second lighthouse", "t2")]))
    assert found(b, "lighthouse") == {"m2"}
    ledger.calls.clear()
    assert found(b, "lighthouse") == {"m2"}
    assert ledger.calls == ["read"]  # nothing new: one read of two keys, no listing


def test_a_rebuild_is_followed_and_compacts_the_feed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed_module, "CHUNK_CHARS", 120)  # a few entries per record: the rebuild spans chunks
    ledger = InMemoryLedger()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(b.upsert(STORE, [entry("stale", "an orphan lighthouse"), *filler()]))
    rebuilt = [entry(f"r{n}", f"rebuilt lighthouse number {n}", "t") for n in range(12)]
    ok(a.rebuild(STORE, rebuilt))
    records = changes(ledger)
    assert records[0].fields["op"] == "rebuild" and len(records) > 2  # the marker first, then its chunks
    assert {r.fields["op"] for r in records[1:]} == {"upsert"}  # and nothing from before the marker
    assert found(b, "lighthouse") == {f"r{n}" for n in range(12)}
    assert ok(b.neighbours(STORE, ["r0", "r5"])) == ok(a.neighbours(STORE, ["r0", "r5"]))
    assert ok(keywords(tmp_path / "c", ledger).count(STORE)) == 12  # a new node, after compaction


def test_a_lost_race_for_a_seq_is_applied_then_the_next_seq_claimed(tmp_path: Path) -> None:
    class Contested(InMemoryLedger):
        """Another machine wins the first claimed seq just before this node's claim arrives."""

        def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
            if not self.records:
                rival = [["rival", "the rival lighthouse", "t9", False]]
                super().claim(
                    LedgerRecord(record.key, record.store, record.kind, record.seq, {"op": "upsert"}, json.dumps(rival))
                )
            return super().claim(record)

    ledger = Contested()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(a.upsert(STORE, [entry("mine", "my lighthouse"), *filler()]))
    assert [r.seq for r in changes(ledger)] == [0, 1]
    assert found(a, "lighthouse") == found(b, "lighthouse") == {"rival", "mine"}


def test_a_wiped_cache_comes_back_from_the_feed(tmp_path: Path) -> None:
    ledger = InMemoryLedger()
    a = keywords(tmp_path / "a", ledger)
    ok(a.upsert(STORE, [entry("m1", "the lighthouse keeper"), *filler()]))
    assert found(keywords(tmp_path / "b", ledger), "lighthouse") == {"m1"}
    for file in (tmp_path / "b").iterdir():
        file.unlink()
    assert found(keywords(tmp_path / "b", ledger), "lighthouse") == {"m1"}  # the node restarted on a wiped disk


def test_a_damaged_cache_is_set_aside_and_replayed(tmp_path: Path) -> None:
    ledger = InMemoryLedger()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(a.upsert(STORE, [entry("m1", "the lighthouse keeper"), *filler()]))
    assert found(b, "lighthouse") == {"m1"}
    b.local._set_aside()  # closes its connection; a restarted node then finds garbage where its file was
    b.feed.marks.close()
    (tmp_path / "b" / "keywords.sqlite3").write_bytes(b"not a database at all" * 100)
    again = keywords(tmp_path / "b", ledger)
    assert found(again, "lighthouse") == {"m1"}
    assert (tmp_path / "b" / "keywords.sqlite3.damaged").is_file()


def test_short_memories_claim_nothing_and_long_ones_travel_as_vectors(tmp_path: Path) -> None:
    ledger = InMemoryLedger()
    a = FedPartVectors(SqlitePartVectors(tmp_path / "a" / "parts.sqlite3"), ledger)
    b = FedPartVectors(SqlitePartVectors(tmp_path / "b" / "parts.sqlite3"), ledger)
    ok(a.put(STORE, {"short": [], "other": []}))
    ok(a.remove(STORE, ["short"]))
    assert ledger.records == {}
    ok(a.put(STORE, {"long": [Y, X]}))
    assert [(i, round(s, 6)) for i, s in ok(b.nearest(STORE, X, 5))] == [("long", 1.0)]
    ok(b.put(STORE, {"long": []}))  # shortened on B: its parts are forgotten everywhere
    assert ok(a.nearest(STORE, X, 5)) == []
    assert [r.fields["op"] for r in changes(ledger, "parts-change")] == ["put", "remove"]


def test_an_unreachable_engine_is_a_typed_failure(tmp_path: Path) -> None:
    class Down(InMemoryLedger):
        def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
            return Failure(DomainError(ErrorCode.BACKEND_UNAVAILABLE, "The server is unreachable."))

    index = keywords(tmp_path / "a", Down())
    failed_with(index.search(STORE, "lighthouse", 5), ErrorCode.BACKEND_UNAVAILABLE)
    failed_with(index.upsert(STORE, [entry("m1", "lighthouse")]), ErrorCode.BACKEND_UNAVAILABLE)


def test_a_record_no_node_can_read_fails_typed_until_a_reindex_writes_the_feed_afresh(tmp_path: Path) -> None:
    ledger = InMemoryLedger()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(a.upsert(STORE, [entry("m1", "the lighthouse keeper"), *filler()]))
    ok(ledger.claim(LedgerRecord(a.feed.key(STORE, 1), STORE, a.feed.kind, 1, {"op": "upsert"}, "{not json")))
    failed_with(b.search(STORE, "lighthouse", 5), ErrorCode.STORAGE_ERROR)
    ok(a.rebuild(STORE, [entry("m1", "the lighthouse keeper"), entry("m2", "a second lighthouse")]))
    assert found(b, "lighthouse") == found(a, "lighthouse") == {"m1", "m2"}
    assert [r.fields["op"] for r in changes(ledger)] == ["rebuild"]  # the unreadable record is gone with the rest


def test_on_a_disk_that_refuses_writes_the_cache_answers_as_it_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = InMemoryLedger()
    a, b = keywords(tmp_path / "a", ledger), keywords(tmp_path / "b", ledger)
    ok(a.upsert(STORE, [entry("m1", "the lighthouse keeper"), *filler()]))
    assert found(b, "lighthouse") == {"m1"}
    b.feed.marks.close()  # B's process ends: its files are closed (SQLite folds the WAL into them)
    assert b.local._connection is not None
    b.local._connection.close()
    real_access = os.access

    def access(path: object, mode: int) -> bool:  # the folder refuses writes (root is let through by chmod)
        if mode & os.W_OK and str(path).startswith(str(tmp_path / "b")):
            return False
        return real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    ok(a.upsert(STORE, [entry("m2", "a second lighthouse", "t2")]))
    again = keywords(tmp_path / "b", ledger)  # a process started on the read-only disk
    assert found(again, "lighthouse") == {"m1"}  # as it stands: no error, the new record not applied
