"""The Ledger contract: one suite, run against every adapter of the port (adapters/shared/ledger.py)."""

from __future__ import annotations

import threading

from returns.result import Success

from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord

LEASE = LedgerRecord(key="lease/default/1", store="default", kind="lease", seq=1, fields={"holder": "a", "on": True})


def claimed_by(ledger: Ledger, key: str, holders: list[str]) -> list[str]:
    """Each holder claims `key` from its own thread, all at once; the holder each claim answered as the winner."""
    start = threading.Barrier(len(holders))
    seen: dict[str, str] = {}

    def claim(holder: str) -> None:
        start.wait(timeout=30)
        won = ledger.claim(LedgerRecord(key=key, store="default", kind="lease", seq=7, fields={"holder": holder}))
        seen[holder] = str(won.unwrap().fields["holder"])

    threads = [threading.Thread(target=claim, args=(holder,)) for holder in holders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return [seen[holder] for holder in holders]


class LedgerContract:
    """Subclasses provide a `ledger` fixture (an empty ledger) and `another(ledger)`: the same records as another
    client (another process or machine) sees them, or the same ledger where there is no other client."""

    def another(self, ledger: Ledger) -> Ledger:
        return ledger

    def test_reads_and_lists_nothing_before_the_first_write(self, ledger: Ledger) -> None:
        assert ledger.read(["lease/default/1"]) == Success({})
        assert ledger.listed("default", "lease") == Success([])
        assert ledger.remove(["nothing"]) == Success(None)

    def test_a_claim_stores_the_record_whole_and_a_second_claim_keeps_the_first(self, ledger: Ledger) -> None:
        record = LedgerRecord(
            key=LEASE.key,
            store="default",
            kind="lease",
            seq=1,
            fields={"holder": "a", "n": 3, "on": True},
            text='{"json": "ünïcode"}',
        )
        assert ledger.claim(record) == Success(record)
        later = LedgerRecord(key=LEASE.key, store="default", kind="lease", seq=1, fields={"holder": "b"})
        assert ledger.claim(later) == Success(record)
        assert self.another(ledger).read([LEASE.key, "unknown"]) == Success({LEASE.key: record})

    def test_put_replaces_and_remove_forgets(self, ledger: Ledger) -> None:
        ledger.claim(LEASE).unwrap()
        released = LedgerRecord(
            key=LEASE.key, store="default", kind="lease", seq=1, fields={"holder": "a", "on": False}
        )
        assert ledger.put(released) == Success(None)
        other = self.another(ledger)
        assert other.read([LEASE.key]) == Success({LEASE.key: released})
        assert ledger.remove([LEASE.key, LEASE.key]) == Success(None)
        assert other.read([LEASE.key]) == Success({})
        assert ledger.claim(LEASE) == Success(LEASE)  # a forgotten key can be claimed again

    def test_listed_answers_one_store_and_kind_after_a_seq_in_order(self, ledger: Ledger) -> None:
        for seq in (3, 1, 2):
            ledger.put(LedgerRecord(key=f"lease/default/{seq}", store="default", kind="lease", seq=seq)).unwrap()
        ledger.put(LedgerRecord(key="lease/other/1", store="other", kind="lease", seq=1)).unwrap()
        ledger.put(LedgerRecord(key="batch/default/x", store="default", kind="batch", seq=2)).unwrap()
        other = self.another(ledger)
        assert [r.seq for r in other.listed("default", "lease").unwrap()] == [1, 2, 3]
        assert [r.seq for r in other.listed("default", "lease", after=1).unwrap()] == [2, 3]
        assert [r.key for r in other.listed("default", "batch").unwrap()] == ["batch/default/x"]
        assert other.listed("default", "lease", after=3) == Success([])

    def test_of_concurrent_claims_of_one_key_exactly_one_wins_and_all_see_it(self, ledger: Ledger) -> None:
        holders = [f"h{n}" for n in range(6)]
        for round_ in range(3):
            seen = claimed_by(ledger, f"race/{round_}", holders)
            assert len(set(seen)) == 1 and seen[0] in holders
            (stored,) = ledger.read([f"race/{round_}"]).unwrap().values()
            assert stored.fields["holder"] == seen[0]
