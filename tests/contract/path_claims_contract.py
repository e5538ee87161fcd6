"""The path claims' contract (adapters/path_claims.py): one live holder per path, decided by the Ledger's claim alone,
over every Ledger adapter."""

from __future__ import annotations

import threading
from collections.abc import Callable

from returns.result import Failure, Result, Success

from agent_memory.adapters.path_claims import FREE, PROBE, PathClaims, Place
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode

PLACE: Place = ("default", (), "notes/plan")


def always(_: str) -> Result[str | None, DomainError]:
    return Success("holds it")


def never(_: str) -> Result[str | None, DomainError]:
    return Success(None)


class PausingLedger:
    """A Ledger that runs `before_claim` once, just before the claim of the key ending `at` reaches the engine: a
    writer that read the path's newest claim and then paused (a VM pause, a GC) before its write."""

    def __init__(self, inner: Ledger, at: str, before_claim: Callable[[], None]) -> None:
        self.inner = inner
        self.at = at
        self.before_claim: Callable[[], None] | None = before_claim

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        if record.key.endswith(self.at) and self.before_claim is not None:
            pause, self.before_claim = self.before_claim, None
            pause()
        return self.inner.claim(record)

    def read(self, keys: list[str]) -> Result[dict[str, LedgerRecord], DomainError]:
        return self.inner.read(keys)

    def put(self, record: LedgerRecord) -> Result[None, DomainError]:
        return self.inner.put(record)

    def remove(self, keys: list[str]) -> Result[None, DomainError]:
        return self.inner.remove(keys)

    def listed(self, store: str, kind: str, *, after: int = -1) -> Result[list[LedgerRecord], DomainError]:
        return self.inner.listed(store, kind, after=after)


class PathClaimsContract:
    """Subclasses provide a `ledger` fixture (an empty ledger) and may override `another(ledger)`: the same records
    as another machine's client sees them."""

    def another(self, ledger: Ledger) -> Ledger:
        return ledger

    def test_a_free_path_is_claimed_and_its_holder_is_the_newest(self, ledger: Ledger) -> None:
        claims = PathClaims(ledger)
        assert claims.newest(PLACE) == Success((0, FREE))
        assert claims.claim(PLACE, "m1", always) == Success(1)
        assert PathClaims(self.another(ledger)).newest(PLACE) == Success((1, "m1"))
        assert claims.claim(PLACE, "m1", always) == Success(1)  # its holder again: nothing new claimed

    def test_a_path_held_by_a_live_memory_is_refused_and_a_gone_one_is_taken_over(self, ledger: Ledger) -> None:
        claims, other = PathClaims(ledger), PathClaims(self.another(ledger))
        claims.claim(PLACE, "m1", always).unwrap()
        refused = other.claim(PLACE, "m2", always)
        assert isinstance(refused, Failure)
        assert refused.failure().code is ErrorCode.DESTINATION_EXISTS
        assert "m1" in refused.failure().message
        assert other.claim(PLACE, "m2", never) == Success(2)  # m1 deleted or expired: m2 takes the next version
        assert claims.newest(PLACE) == Success((2, "m2"))

    def test_of_writers_racing_for_one_path_exactly_one_wins_and_every_loser_names_it(self, ledger: Ledger) -> None:
        holders = [f"m{n}" for n in range(6)]
        start = threading.Barrier(len(holders))
        answers: dict[str, Result[int, DomainError]] = {}

        def race(holder: str) -> None:
            claims = PathClaims(self.another(ledger))
            start.wait(timeout=30)
            answers[holder] = claims.claim(PLACE, holder, always)

        threads = [threading.Thread(target=race, args=(holder,)) for holder in holders]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        winners = [holder for holder, answer in answers.items() if isinstance(answer, Success)]
        assert len(answers) == len(holders)
        assert len(winners) == 1
        assert PathClaims(ledger).newest(PLACE) == Success((1, winners[0]))
        for holder in set(holders) - set(winners):
            failed = answers[holder]
            assert isinstance(failed, Failure)
            assert failed.failure().code is ErrorCode.DESTINATION_EXISTS
            assert winners[0] in failed.failure().message

    def test_a_writer_paused_between_its_read_and_its_claim_loses_to_one_that_won_meanwhile(
        self, ledger: Ledger
    ) -> None:
        PathClaims(ledger).claim(PLACE, "m0", always).unwrap()
        PathClaims(ledger).release(PLACE, "m0").unwrap()  # version 2 frees it: the next claim is version 3
        other = PathClaims(self.another(ledger))
        meanwhile: list[Result[int, DomainError]] = []
        pausing = PausingLedger(ledger, "/00000003", lambda: meanwhile.append(other.claim(PLACE, "fast", always)))
        late = PathClaims(pausing).claim(PLACE, "slow", never)  # it read version 2 (free) before the pause
        assert meanwhile == [Success(3)]
        assert isinstance(late, Failure)
        assert late.failure().code is ErrorCode.DESTINATION_EXISTS
        assert "fast" in late.failure().message
        assert other.newest(PLACE) == Success((3, "fast"))

    def test_release_frees_the_path_only_for_its_newest_holder(self, ledger: Ledger) -> None:
        claims = PathClaims(ledger)
        claims.claim(PLACE, "m1", always).unwrap()
        assert claims.release(PLACE, "someone else") == Success(None)
        assert claims.newest(PLACE) == Success((1, "m1"))
        assert claims.release(PLACE, "m1") == Success(None)
        assert PathClaims(self.another(ledger)).newest(PLACE) == Success((2, FREE))
        assert PathClaims(self.another(ledger)).claim(PLACE, "m2", always) == Success(3)  # free: no judgement asked

    def test_paths_namespaces_and_stores_are_claimed_apart(self, ledger: Ledger) -> None:
        claims = PathClaims(ledger)
        places: list[Place] = [PLACE, ("default", ("user", "a"), "notes/plan"), ("other", (), "notes/plan")]
        places.append(("default", (), "notes/plan/x"))
        for n, place in enumerate(places):
            assert claims.claim(place, f"m{n}", always) == Success(1)

    def test_the_newest_of_many_versions_is_found_by_a_machine_that_never_saw_them(self, ledger: Ledger) -> None:
        claims = PathClaims(ledger)
        for n in range(PROBE * 2 + 3):
            claims.claim(PLACE, f"m{n}", never).unwrap()
        assert PathClaims(self.another(ledger)).newest(PLACE) == Success((PROBE * 2 + 3, f"m{PROBE * 2 + 2}"))

    def test_a_former_holder_coming_back_from_a_machine_that_never_saw_the_path_is_judged_like_anyone(
        self, ledger: Ledger
    ) -> None:
        claims = PathClaims(ledger)
        claims.claim(PLACE, "m1", always).unwrap()
        claims.release(PLACE, "m1").unwrap()  # m1 moved away
        claims.claim(PLACE, "m2", always).unwrap()
        back = PathClaims(self.another(ledger)).claim(PLACE, "m1", always)  # its first claim (version 1) is m1's too
        assert isinstance(back, Failure)
        assert "m2" in back.failure().message
        assert claims.newest(PLACE) == Success((3, "m2"))
