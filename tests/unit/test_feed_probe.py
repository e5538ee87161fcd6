"""FeedProbe (adapters/shared/feed_probe.py): the feeds of a store read their next keys in one ledger read per round,
never from an answer older than the round, a write of this process, or their own watermark."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from returns.result import Result

from agent_memory.adapters.shared.feed_probe import FeedProbe
from agent_memory.adapters.shared.ledger import InMemoryLedger, LedgerRecord
from agent_memory.domain.errors import DomainError


class CountedLedger(InMemoryLedger):
    """The reference ledger, with the key lists each `read` asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[list[str]] = []

    def read(self, keys: Sequence[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        self.reads.append(list(keys))
        return super().read(keys)


def probe_of(marks: dict[str, int]) -> tuple[CountedLedger, FeedProbe]:
    """Two feeds, "a" and "b", whose next key follows the watermark in `marks`."""
    ledger = CountedLedger()
    probe = FeedProbe.of(ledger)
    for feed in ("a", "b"):
        probe.join(feed, lambda store, feed=feed: [f"change:{feed}:{store}:{marks[feed] + 1}"])
    return ledger, probe


def claimed(ledger: InMemoryLedger, key: str) -> None:
    ledger.claim(LedgerRecord(key=key, store="s", kind="k")).unwrap()


def test_the_feeds_of_a_round_share_one_read_that_sees_what_was_there() -> None:
    ledger, probe = probe_of({"a": 0, "b": 4})
    claimed(ledger, "change:b:s:5")
    probe.begin("s")
    assert probe.read("s", "a", ["change:a:s:1"]).unwrap() == {}
    assert sorted(ledger.reads[-1]) == ["change:a:s:1", "change:b:s:5"]
    assert list(probe.read("s", "b", ["change:b:s:5"]).unwrap()) == ["change:b:s:5"]  # from the round's answer
    assert probe.read("s", "a", ["change:a:s:1"]).unwrap() == {}  # again (a keyword side asked deeper)
    assert len(ledger.reads) == 1
    assert probe.fresh("s", "a") and probe.fresh("s", "b")


def test_a_new_round_a_write_or_a_moved_watermark_reads_again() -> None:
    marks = {"a": 0, "b": 0}
    ledger, probe = probe_of(marks)
    probe.begin("s")
    probe.read("s", "a", ["change:a:s:1"]).unwrap()
    claimed(ledger, "change:a:s:1")  # another machine's write, acknowledged before the next use case began
    probe.begin("s")
    assert list(probe.read("s", "b", ["change:b:s:1"]).unwrap()) == []
    assert list(probe.read("s", "a", ["change:a:s:1"]).unwrap()) == ["change:a:s:1"]
    assert len(ledger.reads) == 2
    assert probe.within("s")
    probe.wrote("s")  # this process wrote: no earlier answer is used, nor is the round's mirror to be trusted
    assert not probe.fresh("s", "a") and not probe.within("s")
    probe.read("s", "b", ["change:b:s:1"]).unwrap()
    assert len(ledger.reads) == 3
    marks["a"] = 1  # another thread replayed feed a meanwhile: its next key is not one the answer asked after
    probe.read("s", "a", ["change:a:s:2"]).unwrap()
    assert len(ledger.reads) == 4


def test_without_a_round_or_on_another_thread_each_feed_reads_its_own() -> None:
    ledger, probe = probe_of({"a": 0, "b": 0})
    probe.read("s", "a", ["change:a:s:1"]).unwrap()
    probe.read("s", "b", ["change:b:s:1"]).unwrap()
    assert len(ledger.reads) == 2 and not probe.fresh("s", "a")
    probe.begin("s")
    probe.read("s", "a", ["change:a:s:1"]).unwrap()
    other = threading.Thread(target=lambda: probe.read("s", "b", ["change:b:s:1"]).unwrap())
    other.start()
    other.join()
    assert len(ledger.reads) == 4  # a round is one thread's
