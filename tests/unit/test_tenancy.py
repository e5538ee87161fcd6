"""Tenancy in the use cases: a pinned service acts only in its namespace, whatever namespace a caller gives."""

from datetime import timedelta

import pytest
from returns.result import Failure

from agent_memory.adapters.clock import FixedClock
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService
from agent_memory.domain.tenancy import narrow, new_memory_namespace
from tests.unit.conftest import T0

ALICE = ("user", "alice")
BOB = ("user", "bob")


def code_of(result: object) -> ErrorCode:
    assert isinstance(result, Failure), result
    return result.failure().code


@pytest.fixture
def alice(service: MemoryService) -> MemoryService:
    return service.within(ALICE).unwrap()


@pytest.fixture
def bob(service: MemoryService) -> MemoryService:
    return service.within(BOB).unwrap()


def add(service: MemoryService, path: str, content: str, **fields: object) -> str:
    return service.add(CreateMemory(content=content, path=path, **fields)).unwrap().memory.id  # type: ignore[arg-type]


# --- the guard itself ------------------------------------------------------------------------------


def test_an_empty_guard_is_refused_never_everything() -> None:
    assert code_of(narrow(None, ())) is ErrorCode.INVALID_INPUT
    assert code_of(narrow(ALICE, [])) is ErrorCode.INVALID_INPUT


def test_a_caller_may_narrow_the_pin_but_never_widen_or_leave_it() -> None:
    assert narrow(ALICE, None).unwrap() == ALICE
    assert narrow(ALICE, ("user", "alice", "work")).unwrap() == ("user", "alice", "work")
    assert code_of(narrow(ALICE, ("user",))) is ErrorCode.INVALID_INPUT
    assert code_of(narrow(ALICE, BOB)) is ErrorCode.INVALID_INPUT
    assert code_of(narrow(ALICE, ("user", "alice2"))) is ErrorCode.INVALID_INPUT
    assert narrow(None, None).unwrap() is None


def test_a_new_memory_goes_to_the_pin_unless_the_caller_narrows_it() -> None:
    assert new_memory_namespace(ALICE, ()).unwrap() == ALICE
    assert new_memory_namespace(ALICE, ("user", "alice", "x")).unwrap() == ("user", "alice", "x")
    assert code_of(new_memory_namespace(ALICE, BOB)) is ErrorCode.INVALID_INPUT
    assert new_memory_namespace(None, ()).unwrap() == ()


def test_a_service_cannot_be_pinned_to_nothing_nor_out_of_its_pin(service: MemoryService) -> None:
    assert code_of(service.within(())) is ErrorCode.INVALID_INPUT
    assert code_of(service.within("")) is ErrorCode.INVALID_INPUT
    assert code_of(service.within(ALICE).unwrap().within(BOB)) is ErrorCode.INVALID_INPUT
    assert service.within(None).unwrap() is service


# --- every use case under a pin ----------------------------------------------------------------------


def test_paths_are_unique_per_namespace_and_a_lookup_by_path_sees_only_its_own(
    alice: MemoryService, bob: MemoryService
) -> None:
    mine = add(alice, "preferences/editor", "Alice likes vim")
    theirs = add(bob, "preferences/editor", "Bob likes emacs")  # no DESTINATION_EXISTS: another namespace
    assert mine != theirs
    assert alice.get("preferences/editor").unwrap().memory.id == mine
    assert bob.get("preferences/editor").unwrap().memory.id == theirs
    taken = alice.add(CreateMemory(content="again", path="preferences/editor"))
    assert code_of(taken) is ErrorCode.DESTINATION_EXISTS
    assert theirs not in str(taken.failure())


def test_no_use_case_reaches_another_tenant_by_id_or_path(alice: MemoryService, bob: MemoryService) -> None:
    theirs = add(bob, "notes/secret", "Bob's secret platypus")
    for ref in (theirs, "notes/secret"):
        for result in (
            alice.get(ref),
            alice.update(UpdateMemory(ref=ref, content="pwned")),
            alice.move(ref, "notes/mine"),
            alice.delete(ref),
            alice.remove(ref),
            alice.reinforce(ref),
        ):
            assert code_of(result) is ErrorCode.MEMORY_NOT_FOUND
            assert theirs not in str(result.failure()) or ref == theirs
    # the caller's own namespace cannot reopen the door: empty, a parent, the other tenant
    for namespace in ((), ("user",), BOB):
        assert code_of(alice.get(theirs, namespace=namespace)) is ErrorCode.INVALID_INPUT
        assert code_of(alice.update(UpdateMemory(ref=theirs, content="x", namespace=namespace))) in (
            ErrorCode.INVALID_INPUT,
        )
    assert bob.get(theirs).unwrap().memory.content == "Bob's secret platypus"


def test_search_listing_recent_and_counts_stay_in_the_pin(alice: MemoryService, bob: MemoryService) -> None:
    add(bob, "notes/secret", "platypus platypus")
    assert alice.search(SearchMemories(query="platypus")).unwrap().results == ()
    assert code_of(alice.search(SearchMemories(query="platypus", namespace=()))) is ErrorCode.INVALID_INPUT
    assert code_of(alice.search(SearchMemories(query="platypus", namespace=("user",)))) is ErrorCode.INVALID_INPUT
    listing = alice.list().unwrap()
    assert listing.memories == () and listing.subcategories == ()
    assert alice.recent().unwrap() == ()
    assert [s.memory_count for s in alice.list_stores().unwrap()] == [0]
    assert alice.status().unwrap().memory_count == 0


def test_categories_under_a_pin_are_the_tenants_own(service: MemoryService, alice: MemoryService) -> None:
    bob = service.within(BOB).unwrap()
    theirs = add(bob, "shared/team/notes", "Bob's team notes")
    mine = add(alice, "shared/team/notes", "Alice's team notes")
    service.create_category("shared/team", description="the operator's category")
    assert alice.list("shared").unwrap().subcategories[0].description == ""  # the store's registry is not shown
    assert code_of(alice.create_category("anything")) is ErrorCode.INVALID_OPERATION
    assert code_of(alice.describe_category("shared/team", "mine now")) is ErrorCode.INVALID_OPERATION
    alice.delete_category("shared/team").unwrap()
    assert code_of(alice.get(mine)) is ErrorCode.MEMORY_NOT_FOUND
    assert bob.get(theirs).unwrap().memory.content == "Bob's team notes"
    assert code_of(alice.delete_category("shared/team")) is ErrorCode.CATEGORY_NOT_FOUND
    assert service.list("shared").unwrap().subcategories[0].description == "the operator's category"


def test_prune_lists_and_deletes_only_the_tenants_expired_memories(
    service: MemoryService, clock: FixedClock, alice: MemoryService
) -> None:
    bob = service.within(BOB).unwrap()
    soon = T0 + timedelta(hours=1)
    theirs = add(bob, "notes/old", "Bob's old note", expires_at=soon)
    mine = add(alice, "notes/old", "Alice's old note", expires_at=soon)
    clock.advance(hours=2)
    assert [m.id for m in alice.prune(dry_run=True).unwrap().memories] == [mine]
    assert [m.id for m in alice.prune().unwrap().memories] == [mine]
    assert bob.get(theirs, include_expired=True).unwrap().memory.id == theirs


def test_store_wide_changes_are_refused_under_a_pin(alice: MemoryService) -> None:
    assert code_of(alice.reindex()) is ErrorCode.INVALID_OPERATION
    refusal = alice.reindex().failure().message
    assert "`memory reindex` in a shell" in refusal and "`memory` on the" not in refusal
    assert code_of(alice.export()) is ErrorCode.INVALID_OPERATION
    assert code_of(alice.import_memories([])) is ErrorCode.INVALID_OPERATION


def test_without_a_pin_a_path_held_in_several_namespaces_needs_the_namespace(
    service: MemoryService, alice: MemoryService, bob: MemoryService
) -> None:
    add(alice, "preferences/editor", "vim")
    add(bob, "preferences/editor", "emacs")
    assert code_of(service.get("preferences/editor")) is ErrorCode.INVALID_INPUT
    assert service.get("preferences/editor", namespace=BOB).unwrap().memory.content == "emacs"


def test_reindex_keeps_one_path_per_namespace_not_per_store(
    service: MemoryService, alice: MemoryService, bob: MemoryService
) -> None:
    add(alice, "preferences/editor", "vim")
    add(bob, "preferences/editor", "emacs")
    assert service.reindex().unwrap().renamed == ()
    assert alice.get("preferences/editor").unwrap().memory.content == "vim"
    assert bob.get("preferences/editor").unwrap().memory.content == "emacs"
