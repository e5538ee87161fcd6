"""The hierarchical use cases (spec 002/004, decisions 10–13) over in-memory fakes."""

from datetime import timedelta

import pytest
from returns.result import Failure

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import InMemoryCatalog
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService
from tests.unit.conftest import T0


def add(service: MemoryService, path: str, content: str = "some content", **fields: object) -> str:
    return service.add(CreateMemory(content=content, path=path, **fields)).unwrap().memory.id  # type: ignore[arg-type]


def code_of(result: object) -> ErrorCode:
    assert isinstance(result, Failure), result
    return result.failure().code


# --- add / get ---------------------------------------------------------------------------------


def test_add_creates_the_store_and_categories_and_is_reachable_by_path_and_id(
    service: MemoryService, catalog: InMemoryCatalog
) -> None:
    memory_id = add(service, "Projects/Agent Memory/Decisions", store="work", tags=("arch",), citations=("a.py:1",))
    assert "work" in catalog.stores
    by_path = service.get("projects/agent-memory/decisions", store="work").unwrap().memory
    assert by_path.id == memory_id and by_path.tags == ("arch",) and by_path.citations == ("a.py:1",)
    assert service.get(memory_id, store="work").unwrap().memory == by_path
    listing = service.list("projects", store="work").unwrap()
    assert [s.path for s in listing.subcategories] == ["projects/agent-memory"]


def test_add_without_citations_has_an_empty_list(service: MemoryService) -> None:
    add(service, "notes/plain")
    assert service.get("notes/plain").unwrap().memory.citations == ()


def test_add_to_a_taken_path_is_destination_exists(service: MemoryService) -> None:
    add(service, "notes/one")
    assert code_of(service.add(CreateMemory(content="x", path="notes/one"))) is ErrorCode.DESTINATION_EXISTS
    assert code_of(service.add(CreateMemory(content="x"))) is ErrorCode.INVALID_INPUT
    assert code_of(service.add(CreateMemory(content="x", path="../etc/passwd"))) is ErrorCode.INVALID_PATH


def test_expired_memories_need_include_expired(service: MemoryService, clock: FixedClock) -> None:
    add(service, "notes/soon", expires_at=T0 + timedelta(hours=1))
    clock.advance(hours=2)
    assert code_of(service.get("notes/soon")) is ErrorCode.MEMORY_EXPIRED
    assert service.get("notes/soon", include_expired=True).unwrap().memory.path is not None


def test_an_expiry_already_past_expires_the_memory_at_once_on_create_batch_and_update(service: MemoryService) -> None:
    """Issue 50: what the caller asked is done (the REST document cannot say "later than now", and a past expiry is
    how one says "expire it now"): the memory is stored, hidden from reads and counted as expired."""
    past, now = T0 - timedelta(seconds=1), T0
    added = service.add(CreateMemory(content="x", path="notes/late", expires_at=past)).unwrap()
    assert added.memory.expires_at == past
    service.create(CreateMemory(content="x", expires_at=now)).unwrap()  # expiring now is past too: hidden at once
    service.create_many([CreateMemory(content="fine"), CreateMemory(content="x", expires_at=past)]).unwrap()
    live = add(service, "notes/live")
    assert service.update(UpdateMemory(ref=live, expires_at=past)).unwrap().memory.expires_at == past
    assert code_of(service.get("notes/late")) is ErrorCode.MEMORY_EXPIRED
    assert code_of(service.get(live)) is ErrorCode.MEMORY_EXPIRED
    assert (service.status().unwrap().memory_count, service.status().unwrap().expired_count) == (1, 4)
    naive = service.create(CreateMemory(content="x", expires_at=T0.replace(tzinfo=None) + timedelta(days=1)))
    assert code_of(naive) is ErrorCode.INVALID_INPUT  # the memory's own check: a time needs its zone


def test_restore_by_path_takes_the_one_deleted_memory_there_or_asks_for_the_id(service: MemoryService) -> None:
    first = add(service, "notes/plan", "first plan")
    service.delete(first).unwrap()
    second = add(service, "notes/plan", "second plan")
    service.delete(second).unwrap()
    several = service.restore("notes/plan")
    assert code_of(several) is ErrorCode.INVALID_INPUT and first in several.failure().message  # type: ignore[union-attr]
    assert service.restore(second).unwrap().memory.content == "second plan"
    assert code_of(service.restore(first)) is ErrorCode.DESTINATION_EXISTS  # the path is the second's now
    assert code_of(service.restore("notes/plan")) is ErrorCode.DESTINATION_EXISTS  # the first, deleted, is there
    add(service, "notes/only")
    assert code_of(service.restore("notes/only")) is ErrorCode.INVALID_OPERATION  # the memory there is live
    assert code_of(service.restore("notes/nothing")) is ErrorCode.MEMORY_NOT_FOUND
    assert code_of(service.restore("../up")) is ErrorCode.INVALID_PATH


def test_memories_created_by_id_are_listed_and_memories_added_by_path_found_by_id(service: MemoryService) -> None:
    scoped = service.create(CreateMemory(content="scoped one")).unwrap().memory.id
    pathed = add(service, "notes/pathed")
    everything = service.list().unwrap()
    assert {v.memory.id for v in everything.memories} == {scoped, pathed}
    assert service.search(SearchMemories(query="pathed some content")).unwrap().count == 2


# --- update ------------------------------------------------------------------------------------


def test_update_content_refreshes_timestamps_and_the_embedding(service: MemoryService, clock: FixedClock) -> None:
    add(service, "notes/lang", content="user likes java")
    clock.advance(hours=1)
    view = service.update(UpdateMemory(ref="notes/lang", content="user likes rust")).unwrap()
    assert view.memory.content == "user likes rust" and view.memory.updated_at == clock.now()
    assert view.memory.created_at == T0
    hit = service.search(SearchMemories(query="rust")).unwrap().results[0]
    assert hit.memory.content == "user likes rust" and hit.similarity > 0.4


def test_update_metadata_only_keeps_content(service: MemoryService) -> None:
    add(service, "notes/x", content="keep me", tags=("a",), expires_at=T0 + timedelta(days=1))
    view = service.update(UpdateMemory(ref="notes/x", tags=("b", "c"))).unwrap()
    assert view.memory.content == "keep me" and view.memory.tags == ("b", "c")
    assert service.update(UpdateMemory(ref="notes/x", clear_expiry=True)).unwrap().memory.expires_at is None


def test_citations_replace_clear_and_survive_unrelated_updates(service: MemoryService) -> None:
    add(service, "notes/c", citations=("src/core/types.ts:17", "https://docs.example.com"))
    kept = service.update(UpdateMemory(ref="notes/c", content="new text")).unwrap()
    assert kept.memory.citations == ("src/core/types.ts:17", "https://docs.example.com")
    replaced = service.update(UpdateMemory(ref="notes/c", citations=("new/path.ts:5",))).unwrap()
    assert replaced.memory.citations == ("new/path.ts:5",)
    cleared = service.update(UpdateMemory(ref="notes/c", citations=())).unwrap()
    assert cleared.memory.citations == ()


@pytest.mark.parametrize(
    "command",
    [
        UpdateMemory(ref="notes/u"),
        UpdateMemory(ref="notes/u", clear_expiry=True, expires_at=T0),
        UpdateMemory(ref="notes/u", content=""),
        UpdateMemory(ref="notes/u", citations=("",)),
        UpdateMemory(ref="notes/u", decay_policy="sometimes"),
    ],
)
def test_update_rejects_nothing_to_change_and_bad_values(service: MemoryService, command: UpdateMemory) -> None:
    add(service, "notes/u", content="unchanged")
    assert code_of(service.update(command)) is ErrorCode.INVALID_INPUT
    assert service.get("notes/u").unwrap().memory.content == "unchanged"


def test_update_of_a_missing_memory_is_not_found(service: MemoryService) -> None:
    assert code_of(service.update(UpdateMemory(ref="notes/none", content="x"))) is ErrorCode.MEMORY_NOT_FOUND


# --- remove / move -----------------------------------------------------------------------------


def test_remove_deletes_for_good(service: MemoryService, catalog: InMemoryCatalog) -> None:
    memory_id = add(service, "notes/gone")
    service.remove("notes/gone").unwrap()
    assert catalog.stores["default"].get([memory_id]).unwrap() == []
    assert code_of(service.remove("notes/gone")) is ErrorCode.MEMORY_NOT_FOUND


def test_move_renames_refuses_a_taken_destination_and_onto_itself_is_a_no_op(
    service: MemoryService, clock: FixedClock
) -> None:
    memory_id = add(service, "inbox/idea")
    add(service, "archive/taken")
    assert code_of(service.move("inbox/idea", "archive/taken")) is ErrorCode.DESTINATION_EXISTS
    same = service.move("inbox/idea", "inbox/idea").unwrap()
    assert same.memory.updated_at == T0
    clock.advance(hours=1)
    moved = service.move(memory_id, "archive/2026/idea").unwrap()
    assert str(moved.memory.path) == "archive/2026/idea" and moved.memory.id == memory_id
    assert code_of(service.get("inbox/idea")) is ErrorCode.MEMORY_NOT_FOUND
    assert code_of(service.move("archive/2026/idea", "../../x")) is ErrorCode.INVALID_PATH


# --- list / recent / prune / reindex -----------------------------------------------------------


def test_list_is_recursive_with_counts_and_descriptions(service: MemoryService) -> None:
    add(service, "projects/a/one")
    add(service, "projects/a/deep/two")
    add(service, "projects/b/three")
    add(service, "global/four")
    service.describe_category("projects/a", "Project A notes").unwrap()
    listing = service.list("projects").unwrap()
    assert len(listing.memories) == 3
    assert [(s.path, s.memory_count, s.description) for s in listing.subcategories] == [
        ("projects/a", 2, "Project A notes"),
        ("projects/b", 1, ""),
    ]
    roots = service.list().unwrap()
    assert [(s.path, s.memory_count) for s in roots.subcategories] == [("global", 1), ("projects", 3)]
    assert code_of(service.list("nothing/here")) is ErrorCode.CATEGORY_NOT_FOUND


def test_recent_is_newest_update_first_with_bounded_limit(service: MemoryService, clock: FixedClock) -> None:
    for i in range(7):
        add(service, f"log/entry-{i}")
        clock.advance(hours=1)
    service.update(UpdateMemory(ref="log/entry-0", content="touched")).unwrap()
    recent = service.recent().unwrap()
    assert [str(v.memory.path) for v in recent] == [
        "log/entry-0",
        "log/entry-6",
        "log/entry-5",
        "log/entry-4",
        "log/entry-3",
    ]
    assert len(service.recent(limit=100).unwrap()) == 7
    assert code_of(service.recent(limit=0)) is ErrorCode.INVALID_INPUT
    assert code_of(service.recent(limit=101)) is ErrorCode.INVALID_INPUT


def test_prune_removes_expired_memories_and_dry_run_only_lists_them(service: MemoryService, clock: FixedClock) -> None:
    add(service, "tmp/a", expires_at=T0 + timedelta(hours=1))
    add(service, "tmp/b", expires_at=T0 + timedelta(hours=5))
    add(service, "tmp/c")
    clock.advance(hours=2)
    dry = service.prune(dry_run=True).unwrap()
    assert dry.dry_run and [str(m.path) for m in dry.memories] == ["tmp/a"]
    assert service.get("tmp/a", include_expired=True).unwrap()
    done = service.prune().unwrap()
    assert [str(m.path) for m in done.memories] == ["tmp/a"]
    assert code_of(service.get("tmp/a", include_expired=True)) is ErrorCode.MEMORY_NOT_FOUND
    assert len(service.list("tmp").unwrap().memories) == 2


def test_reindex_re_embeds_everything_and_records_the_model(service: MemoryService, catalog: InMemoryCatalog) -> None:
    add(service, "notes/a")
    deleted = service.create(CreateMemory(content="soft deleted")).unwrap().memory.id
    service.delete(deleted).unwrap()
    catalog.stores["default"].model = "old-model"
    assert code_of(service.search(SearchMemories(query="x"))) is ErrorCode.EMBEDDING_MISMATCH
    report = service.reindex().unwrap()
    assert (report.memory_count, report.embedding_model) == (2, "hashing-bow")
    assert service.search(SearchMemories(query="some content")).unwrap().count == 1


# --- categories and stores ---------------------------------------------------------------------


def test_categories_can_exist_empty_be_described_and_deleted(service: MemoryService) -> None:
    created = service.create_category("projects/empty", description="nothing yet").unwrap()
    assert (created.path, created.memory_count, created.description) == ("projects/empty", 0, "nothing yet")
    again = service.create_category("projects/empty").unwrap()
    assert again.description == "nothing yet"
    assert code_of(service.describe_category("projects/empty", "x" * 501)) is ErrorCode.INVALID_INPUT
    assert code_of(service.describe_category("missing/cat", "x")) is ErrorCode.CATEGORY_NOT_FOUND
    add(service, "projects/empty/inside")
    add(service, "projects/keep/other")
    service.delete_category("projects/empty").unwrap()
    assert code_of(service.get("projects/empty/inside")) is ErrorCode.MEMORY_NOT_FOUND
    assert service.get("projects/keep/other").unwrap()
    assert code_of(service.list("projects/empty")) is ErrorCode.CATEGORY_NOT_FOUND
    assert service.delete_category("projects").unwrap().memory_count == 1  # a root category, like any other
    assert code_of(service.get("projects/keep/other")) is ErrorCode.MEMORY_NOT_FOUND
    assert code_of(service.delete_category("projects/nope")) is ErrorCode.CATEGORY_NOT_FOUND
    assert code_of(service.create_category("../x")) is ErrorCode.INVALID_PATH


def test_stores_are_listed_created_once_and_isolated(service: MemoryService) -> None:
    assert service.create_store("work").unwrap().name == "work"
    assert code_of(service.create_store("work")) is ErrorCode.DESTINATION_EXISTS
    assert code_of(service.create_store("Not Valid")) is ErrorCode.INVALID_INPUT
    add(service, "notes/a", store="work")
    add(service, "notes/a", store="home")
    assert {(s.name, s.memory_count) for s in service.list_stores().unwrap()} == {("work", 1), ("home", 1)}
    service.remove("notes/a", store="work").unwrap()
    assert service.get("notes/a", store="home").unwrap()
    assert code_of(service.list(store="nope")) is ErrorCode.STORE_NOT_FOUND


def test_a_namespace_guard_hides_other_tenants_even_by_id(service: MemoryService) -> None:
    mine = service.create(CreateMemory(content="mine", namespace=("user", "a"))).unwrap().memory.id
    theirs = service.create(CreateMemory(content="theirs", namespace=("user", "b"))).unwrap().memory.id
    a = ("user", "a")
    assert service.get(mine, namespace=a).unwrap().memory.content == "mine"
    assert service.get(mine, namespace=("user",)).unwrap()  # a parent sees its children
    for result in (
        service.get(theirs, namespace=a),
        service.update(UpdateMemory(ref=theirs, namespace=a, content="hijacked")),
        service.delete(theirs, namespace=a),
        service.remove(theirs, namespace=a),
        service.reinforce(theirs, namespace=a),
        service.move(theirs, "stolen/x", namespace=a),
    ):
        assert code_of(result) is ErrorCode.MEMORY_NOT_FOUND
    assert service.get(theirs).unwrap().memory.content == "theirs"
    assert [v.memory.id for v in service.list(namespace=a).unwrap().memories] == [mine]
    assert [v.memory.id for v in service.recent(namespace=a).unwrap()] == [mine]


def test_create_many_refuses_two_memories_at_one_path_and_writes_nothing(service: MemoryService) -> None:
    batch = [CreateMemory(content="a", path="notes/same"), CreateMemory(content="b", path="notes/Same")]
    failed = service.create_many(batch)
    assert failed.failure().code is ErrorCode.DESTINATION_EXISTS
    assert service.status().unwrap().memory_count == 0
    service.add(CreateMemory(content="first", path="notes/taken")).unwrap()
    many = [CreateMemory(content=f"n{i}", path=f"notes/n{i}") for i in range(12)]  # above the per-path scans
    clash = service.create_many([*many, CreateMemory(content="x", path="notes/taken")])
    assert clash.failure().code is ErrorCode.DESTINATION_EXISTS
    assert service.status().unwrap().memory_count == 1
