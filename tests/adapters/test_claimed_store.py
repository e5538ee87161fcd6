"""ClaimedStore: a memory is put at a path only by winning the path's claim, whatever the writer checked before."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.claimed_store import ClaimedStore, ClaimingCatalog
from agent_memory.adapters.in_memory import InMemoryCatalog, InMemoryVectorStore
from agent_memory.adapters.path_claims import FREE, PathClaims
from agent_memory.adapters.shared.ledger import InMemoryLedger, LedgerRecord
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from tests.contract.vector_store_contract import axis, full_memory

PLAN = MemoryPath(("notes", "plan"))
SPARE = MemoryPath(("notes", "spare"))


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def memory(name: str, path: MemoryPath | None = PLAN, **changes: object) -> Memory:
    fields: dict[str, object] = {"namespace": (), "path": path, "deleted": False, "deleted_at": None}
    return full_memory(id=uid(name), **(fields | changes))


def two_writers() -> tuple[InMemoryVectorStore, ClaimedStore, ClaimedStore, PathClaims]:
    """Two machines' views of one store: the same records and the same ledger, each with its own claims."""
    inner, ledger = InMemoryVectorStore(), InMemoryLedger()
    return inner, ClaimedStore(inner, PathClaims(ledger)), ClaimedStore(inner, PathClaims(ledger)), PathClaims(ledger)


def refused(result: object) -> DomainError:
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, DomainError)
    assert error.code is ErrorCode.DESTINATION_EXISTS
    return error


def test_a_second_add_at_a_taken_path_is_refused_and_writes_nothing() -> None:
    inner, a, b, _ = two_writers()
    assert a.add([memory("m1")], [axis(0)]) == Success(None)
    error = refused(b.add([memory("m2")], [axis(1)]))  # b never checked the path: the claim alone refuses it
    assert uid("m1") in error.message
    assert set(inner.records) == {uid("m1")}


def test_a_batch_refused_at_one_path_writes_none_of_it_and_frees_the_paths_it_claimed() -> None:
    inner, a, b, claims = two_writers()
    a.add([memory("m1")], [axis(0)]).unwrap()
    refused(b.add([memory("m2", SPARE), memory("m3")], [axis(1), axis(2)]))
    assert set(inner.records) == {uid("m1")}
    assert claims.newest(("default", (), str(SPARE))) == Success((2, FREE))
    assert b.add([memory("m4", SPARE)], [axis(3)]) == Success(None)


def test_a_move_onto_a_taken_path_is_refused_and_a_move_away_frees_the_old_one() -> None:
    inner, a, b, _ = two_writers()
    a.add([memory("m1"), memory("m2", SPARE)], [axis(0), axis(1)]).unwrap()
    refused(b.update_metadata([memory("m2", PLAN)]))
    assert inner.records[uid("m2")][0].path == SPARE
    a.update_metadata([memory("m1", MemoryPath(("notes", "elsewhere")))]).unwrap()  # frees notes/plan
    assert b.update_metadata([memory("m2", PLAN)]) == Success([inner.records[uid("m2")][0]])  # as written
    assert inner.records[uid("m2")][0].path == PLAN


def test_a_deleted_or_expired_holder_frees_its_path_and_a_restore_must_win_it_back() -> None:
    inner, a, b, _ = two_writers()
    a.add([memory("m1")], [axis(0)]).unwrap()
    gone = memory("m1", deleted=True, deleted_at=datetime.now(UTC))
    a.update_metadata([gone]).unwrap()
    b.add([memory("m2")], [axis(1)]).unwrap()
    deleted = inner.records[uid("m1")][0]
    refused(a.update_metadata([memory("m1", revision=deleted.revision)]))  # restoring m1 at its path: m2 holds it
    assert inner.records[uid("m1")][0].deleted
    b.update_metadata([memory("m2", expires_at=datetime.now(UTC) - timedelta(seconds=1))]).unwrap()
    assert a.add([memory("m3")], [axis(2)]) == Success(None)


def test_a_removed_memory_frees_its_path_and_a_failed_write_gives_its_claim_back() -> None:
    inner, a, b, _ = two_writers()
    a.add([memory("m1")], [axis(0)]).unwrap()
    a.remove([uid("m1")]).unwrap()
    broken = b.add([memory("m2")], [])  # the engine refuses the write (no vector)
    assert isinstance(broken, Failure)
    assert broken.failure().code is ErrorCode.STORAGE_ERROR
    assert a.add([memory("m3")], [axis(2)]) == Success(None)
    assert set(inner.records) == {uid("m3")}


def test_pathless_memories_claim_nothing_and_the_catalog_wraps_every_store_it_opens() -> None:
    ledger = InMemoryLedger()
    catalog = ClaimingCatalog(InMemoryCatalog(), PathClaims(ledger))
    store = catalog.open("default", create=True).unwrap()
    assert isinstance(store, ClaimedStore)
    store.add([memory("m1", None), evolve(memory("m2", None))], [axis(0), axis(1)]).unwrap()
    assert ledger.records == {}
    assert catalog.backend == "memory"


def test_an_import_putting_a_stored_memory_at_another_path_frees_the_one_it_left() -> None:
    _, a, b, _ = two_writers()
    a.add([memory("m1")], [axis(0)]).unwrap()
    a.add([memory("m1", SPARE)], [axis(0)]).unwrap()  # the same id again, elsewhere (memory import)
    assert b.add([memory("m2")], [axis(1)]) == Success(None)
    error = refused(b.add([memory("m3", SPARE)], [axis(2)]))
    assert "holds it" in error.message


def test_a_path_claimed_by_a_memory_not_stored_yet_is_refused_as_a_write_on_its_way() -> None:
    inner, _, b, claims = two_writers()
    claims.claim(("default", (), str(PLAN)), uid("m1"), lambda _: Success(None)).unwrap()  # its writer stopped here
    error = refused(b.add([memory("m2")], [axis(1)]))
    assert "being written there by another writer" in error.message
    assert inner.records == {}


def test_a_restore_on_its_way_keeps_the_path_from_another_writer() -> None:
    inner, a, b, claims = two_writers()
    a.add([memory("m1")], [axis(0)]).unwrap()
    a.update_metadata([memory("m1", deleted=True, deleted_at=datetime.now(UTC))]).unwrap()  # frees the path
    claims.claim(("default", (), str(PLAN)), uid("m1"), lambda _: Success(None)).unwrap()  # a restore, stopped here
    error = refused(b.add([memory("m2")], [axis(1)]))
    assert "restored there" in error.message
    assert set(inner.records) == {uid("m1")}


class Died(BaseException):
    """The writer's process ends here (SIGKILL): nothing after runs, nothing is given back."""


class DyingLedger:
    """The ledger as a writer sees it that dies as it sends its first claim of a key starting with `at`."""

    def __init__(self, ledger: InMemoryLedger, at: str) -> None:
        self.ledger, self.at = ledger, at

    def claim(self, record: LedgerRecord) -> Result[LedgerRecord, DomainError]:
        if record.key.startswith(self.at):
            raise Died
        return self.ledger.claim(record)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ledger, name)


class DyingStore:
    """The store as a writer sees it that dies as it sends a record's write (after its claims)."""

    def __init__(self, inner: InMemoryVectorStore) -> None:
        self.inner = inner

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        raise Died

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_mover_dead_after_claiming_its_destination_leaves_it_to_the_next_writer_and_its_move_can_never_land() -> None:
    inner, ledger = InMemoryVectorStore(), InMemoryLedger()
    setup = ClaimedStore(inner, PathClaims(ledger))
    setup.add([memory("m1", SPARE)], [axis(0)]).unwrap()
    read = inner.records[uid("m1")][0].revision
    mover = ClaimedStore(inner, PathClaims(DyingLedger(ledger, "rev/")))  # type: ignore[arg-type]
    with pytest.raises(Died):  # it claimed notes/plan for m1, and dies claiming m1's next revision
        mover.update_metadata([memory("m1", PLAN)])
    courteous = ClaimedStore(inner, PathClaims(ledger), may_void=lambda _: False)  # not the lease's holder
    assert "moved or restored there" in refused(courteous.add([memory("m2")], [axis(1)])).message
    # the lease's holder voids the move (claims m1's next revision as m1 is) and takes the path
    assert ClaimedStore(inner, PathClaims(ledger)).add([memory("m2")], [axis(1)]) == Success(None)
    m1 = inner.records[uid("m1")][0]
    assert (m1.path, m1.revision) == (SPARE, read + 1)
    stale = ClaimedStore(inner, PathClaims(ledger)).update_metadata([memory("m1", PLAN)])  # the move, as it read
    assert isinstance(stale, Failure) and stale.failure().code is ErrorCode.CONFLICT
    assert inner.records[uid("m1")][0].path == SPARE and inner.records[uid("m2")][0].path == PLAN


def test_a_restorer_dead_after_claiming_its_path_leaves_it_to_the_next_writer() -> None:
    inner, ledger = InMemoryVectorStore(), InMemoryLedger()
    setup = ClaimedStore(inner, PathClaims(ledger))
    setup.add([memory("m1")], [axis(0)]).unwrap()
    setup.update_metadata([memory("m1", deleted=True, deleted_at=datetime.now(UTC))]).unwrap()
    read = inner.records[uid("m1")][0].revision
    restorer = ClaimedStore(inner, PathClaims(DyingLedger(ledger, "rev/")))  # type: ignore[arg-type]
    with pytest.raises(Died):
        restorer.update_metadata([memory("m1", revision=read)])
    assert ClaimedStore(inner, PathClaims(ledger)).add([memory("m2")], [axis(1)]) == Success(None)
    m1 = inner.records[uid("m1")][0]
    assert m1.deleted and m1.revision == read + 1


def test_a_move_dead_after_claiming_its_revision_stands_and_its_memory_is_put_at_its_destination() -> None:
    inner, ledger = InMemoryVectorStore(), InMemoryLedger()
    setup = ClaimedStore(inner, PathClaims(ledger))
    setup.add([memory("m1", MemoryPath(("notes", "first")))], [axis(0)]).unwrap()
    setup.update_metadata([memory("m1", SPARE)]).unwrap()  # moved: notes/spare's claim names its revision
    read = inner.records[uid("m1")][0].revision
    mover = ClaimedStore(DyingStore(inner), PathClaims(ledger))  # type: ignore[arg-type]
    with pytest.raises(Died):  # its path and its revision claimed: the move won, its record never written
        mover.update_metadata([memory("m1", PLAN, revision=read)])
    error = refused(ClaimedStore(inner, PathClaims(ledger)).add([memory("m2")], [axis(1)]))
    assert uid("m1") in error.message and "holds it" in error.message
    m1 = inner.records[uid("m1")][0]
    assert (m1.path, m1.revision) == (PLAN, read + 1)  # brought up to the revision that won
    # the place it left, never freed by the dead mover, is free: m1 is elsewhere at a revision past that claim's
    assert ClaimedStore(inner, PathClaims(ledger)).add([memory("m3", SPARE)], [axis(2)]) == Success(None)
