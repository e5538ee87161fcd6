"""ClaimedStore: a memory is put at a path only by winning the path's claim, whatever the writer checked before."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from attrs import evolve
from returns.result import Failure, Success

from agent_memory.adapters.claimed_store import ClaimedStore, ClaimingCatalog
from agent_memory.adapters.in_memory import InMemoryCatalog, InMemoryVectorStore
from agent_memory.adapters.path_claims import FREE, PathClaims
from agent_memory.adapters.shared.ledger import InMemoryLedger
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
    assert b.update_metadata([memory("m2", PLAN)]) == Success(None)
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
