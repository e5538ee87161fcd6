"""The scoped use cases (spec 001) over in-memory fakes: every success and failure path."""

from datetime import timedelta

import pytest
from attrs import evolve
from returns.result import Failure, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryVectorStore
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.model import DecayPolicy
from agent_memory.domain.service import MemoryService, SearchPolicy
from tests.unit.conftest import T0


def create(service: MemoryService, content: str, **fields: object) -> str:
    return service.create(CreateMemory(content=content, **fields)).unwrap().memory.id  # type: ignore[arg-type]


def code_of(result: object) -> ErrorCode:
    assert isinstance(result, Failure), result
    return result.failure().code


# --- create ------------------------------------------------------------------------------------


def test_create_with_all_fields_returns_confidence_one_and_stores_them(service: MemoryService) -> None:
    view = service.create(
        CreateMemory(
            content="User prefers Python",
            agent="claude",
            personality="engineer",
            project="my-project",
            type="preference",
            global_=True,
            decay_policy="stable",
        )
    ).unwrap()
    memory = view.memory
    assert view.confidence == 1.0
    assert (memory.agent, memory.personality, memory.project, memory.type, memory.global_) == (
        "claude",
        "engineer",
        "my-project",
        "preference",
        True,
    )
    assert memory.decay_policy is DecayPolicy.STABLE
    assert memory.created_at == T0 and memory.deleted is False and memory.last_reinforced_at is None
    assert service.get(memory.id).unwrap().memory == memory


def test_create_with_minimal_fields_applies_the_defaults(service: MemoryService) -> None:
    memory = service.create(CreateMemory(content="test")).unwrap().memory
    assert (memory.agent, memory.personality, memory.project, memory.type) == ("", "", "", "")
    assert memory.global_ is False and memory.decay_policy is DecayPolicy.STABLE and memory.store == "default"


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"content": ""}, ErrorCode.INVALID_INPUT),
        ({"content": "   \n"}, ErrorCode.INVALID_INPUT),
        ({"content": "x" * 100_001}, ErrorCode.INVALID_INPUT),
        ({"content": "x", "decay_policy": "forever"}, ErrorCode.INVALID_INPUT),
        ({"content": "x", "store": "Bad Store"}, ErrorCode.INVALID_INPUT),
        ({"content": "x", "path": "../escape/x"}, ErrorCode.INVALID_PATH),
        ({"content": "x", "tags": ("ok", "")}, ErrorCode.INVALID_INPUT),
        ({"content": "x", "agent": "a\x00b"}, ErrorCode.INVALID_INPUT),
        ({"content": "x", "namespace": ("user", "")}, ErrorCode.INVALID_INPUT),
    ],
)
def test_create_rejects_bad_input_and_stores_nothing(
    service: MemoryService, catalog: InMemoryCatalog, fields: dict[str, object], code: ErrorCode
) -> None:
    assert code_of(service.create(CreateMemory(**fields))) is code  # type: ignore[arg-type]
    assert all(store.count().unwrap() == 0 for store in catalog.stores.values())


def test_create_accepts_unicode_and_large_content(service: MemoryService) -> None:
    text = "Nutzer bevorzugt Python 🐍 — 用户喜欢 Python " * 2000
    memory_id = create(service, text)
    assert service.get(memory_id).unwrap().memory.content == text


def test_create_many_validates_everything_before_writing(service: MemoryService, catalog: InMemoryCatalog) -> None:
    result = service.create_many([CreateMemory(content="good"), CreateMemory(content="")])
    assert code_of(result) is ErrorCode.INVALID_INPUT
    assert all(store.count().unwrap() == 0 for store in catalog.stores.values())
    views = service.create_many([CreateMemory(content=f"memory {i}") for i in range(5)]).unwrap()
    assert len({v.memory.id for v in views}) == 5


def test_a_backend_that_is_down_is_a_typed_failure(clock: FixedClock) -> None:
    service = MemoryService(catalog=InMemoryCatalog(unreachable=True), embedder=HashingEmbedder(), clock=clock)
    assert code_of(service.create(CreateMemory(content="x"))) is ErrorCode.BACKEND_UNAVAILABLE
    assert code_of(service.status()) is ErrorCode.BACKEND_UNAVAILABLE
    assert code_of(service.search(SearchMemories(query="x"))) is ErrorCode.BACKEND_UNAVAILABLE


def test_a_store_embedded_with_another_model_refuses_and_names_reindex(clock: FixedClock) -> None:
    catalog = InMemoryCatalog(embedder_name="some-other-model")
    service = MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock)
    result = service.create(CreateMemory(content="x"))
    assert code_of(result) is ErrorCode.EMBEDDING_MISMATCH
    assert "memory reindex" in result.failure().message


# --- get ---------------------------------------------------------------------------------------


def test_get_computes_confidence_at_read_time_without_reinforcing(service: MemoryService, clock: FixedClock) -> None:
    memory_id = create(service, "meeting on friday", decay_policy="contextual")
    clock.advance(hours=360)
    assert service.get(memory_id).unwrap().confidence == 0.5
    assert service.get(memory_id).unwrap().memory.last_reinforced_at is None


@pytest.mark.parametrize("bad_id", ["invalid-id", "123"])
def test_get_with_a_malformed_reference_is_not_found_and_says_why(service: MemoryService, bad_id: str) -> None:
    result = service.get(bad_id)
    assert code_of(result) is ErrorCode.MEMORY_NOT_FOUND
    assert result.failure().message == "Memory not found"
    assert "neither a memory id" in (result.failure().cause or "")


@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_reference_is_invalid_input_not_a_missing_memory(service: MemoryService, blank: str) -> None:
    for result in (service.get(blank), service.reinforce(blank), service.delete(blank)):
        assert code_of(result) is ErrorCode.INVALID_INPUT
        assert "give a memory id" in result.failure().message


@pytest.mark.parametrize("bad_path", ["../../etc/passwd", "/etc/passwd", "notes/../../x", "notes\\x"])
def test_a_read_by_a_path_that_leaves_the_store_is_invalid_path(service: MemoryService, bad_path: str) -> None:
    # issue 12: traversal on reads answered MEMORY_NOT_FOUND, as if such a path could hold a memory
    assert code_of(service.get(bad_path)) is ErrorCode.INVALID_PATH
    assert code_of(service.remove(bad_path)) is ErrorCode.INVALID_PATH


def test_get_missing_and_deleted_memories_are_not_found(service: MemoryService) -> None:
    assert code_of(service.get("11111111-1111-4111-8111-111111111111")) is ErrorCode.MEMORY_NOT_FOUND
    memory_id = create(service, "to be deleted")
    service.delete(memory_id).unwrap()
    result = service.get(memory_id)
    assert code_of(result) is ErrorCode.MEMORY_NOT_FOUND
    assert result.failure().message == "Memory not found"


def test_get_accepts_an_id_in_upper_case(service: MemoryService) -> None:
    memory_id = create(service, "x")
    assert service.get(memory_id.upper()).unwrap().memory.id == memory_id


def test_expired_memories_are_hidden_unless_asked_for(service: MemoryService, clock: FixedClock) -> None:
    memory_id = create(service, "temporary", expires_at=T0 + timedelta(hours=1))
    assert service.get(memory_id).unwrap().memory.id == memory_id
    clock.advance(hours=2)
    assert code_of(service.get(memory_id)) is ErrorCode.MEMORY_EXPIRED
    assert service.get(memory_id, include_expired=True).unwrap().memory.id == memory_id
    assert service.search(SearchMemories(query="temporary")).unwrap().count == 0


def test_get_of_a_missing_store_is_store_not_found(service: MemoryService) -> None:
    assert code_of(service.get("11111111-1111-4111-8111-111111111111", store="nope")) is ErrorCode.STORE_NOT_FOUND


# --- search ------------------------------------------------------------------------------------


def test_search_ranks_by_similarity_and_reports_confidence(service: MemoryService) -> None:
    create(service, "the user prefers python for cli tools")
    create(service, "the office plant needs water")
    results = service.search(SearchMemories(query="python cli tools")).unwrap()
    assert results.count == 2
    top = results.results[0]
    assert top.memory.content == "the user prefers python for cli tools"
    assert top.similarity > results.results[1].similarity
    assert 0.0 <= top.similarity <= 1.0 and top.confidence == 1.0


def test_search_applies_every_scope_filter(service: MemoryService) -> None:
    create(service, "preferences of claude in my project", agent="claude", project="my-project")
    create(service, "preferences of claude elsewhere", agent="claude", project="other")
    create(service, "preferences of gpt in my project", agent="gpt", project="my-project")
    create(service, "global preferences", global_=True, type="preference", personality="engineer")
    hits = service.search(SearchMemories(query="preferences", agent="claude", project="my-project")).unwrap()
    assert [h.memory.content for h in hits.results] == ["preferences of claude in my project"]
    only_global = service.search(SearchMemories(query="preferences", global_=True)).unwrap()
    assert [h.memory.content for h in only_global.results] == ["global preferences"]
    typed = service.search(SearchMemories(query="preferences", type="preference", personality="engineer")).unwrap()
    assert typed.count == 1


def test_search_never_returns_deleted_memories(service: MemoryService) -> None:
    memory_id = create(service, "secret plan")
    service.delete(memory_id).unwrap()
    assert service.search(SearchMemories(query="secret plan")).unwrap().count == 0


def test_search_respects_limit_and_confidence_floor(service: MemoryService, clock: FixedClock) -> None:
    for i in range(8):
        create(service, f"note number {i} about tea", decay_policy="contextual")
    clock.advance(hours=540)  # confidence 0.25
    create(service, "fresh note about tea", decay_policy="contextual")
    results = service.search(SearchMemories(query="tea", limit=5, min_confidence=0.5)).unwrap()
    assert [h.memory.content for h in results.results] == ["fresh note about tea"]
    everything = service.search(SearchMemories(query="tea", limit=5, min_confidence=0.0)).unwrap()
    assert everything.count == 5


def test_search_fetches_more_when_filters_drop_candidates(service: MemoryService, clock: FixedClock) -> None:
    # 60 stale memories rank above 3 fresh ones; the 3 fresh ones must still come back
    for i in range(60):
        create(service, f"coffee coffee coffee {i}", decay_policy="contextual")
    clock.advance(hours=700)
    for i in range(3):
        create(service, f"coffee fresh {i}", decay_policy="stable")
    results = service.search(SearchMemories(query="coffee coffee coffee", limit=3)).unwrap()
    assert sorted(h.memory.content for h in results.results) == [f"coffee fresh {i}" for i in range(3)]


def test_search_with_no_match_is_an_empty_success(service: MemoryService) -> None:
    assert service.search(SearchMemories(query="nonexistent topic")).unwrap().count == 0


@pytest.mark.parametrize(
    "command",
    [
        SearchMemories(query=""),
        SearchMemories(query="x", limit=0),
        SearchMemories(query="x", limit=100_000),
        SearchMemories(query="x", min_confidence=1.5),
        SearchMemories(query="x", min_confidence=-0.1),
        SearchMemories(query="x", path_prefix="../up"),
        SearchMemories(query="x", store="UPPER"),
    ],
)
def test_search_rejects_bad_parameters(service: MemoryService, command: SearchMemories) -> None:
    assert code_of(service.search(command)) in (ErrorCode.INVALID_INPUT, ErrorCode.INVALID_PATH)


def test_search_uses_the_configured_defaults(catalog: InMemoryCatalog, clock: FixedClock) -> None:
    service = MemoryService(
        catalog=catalog,
        embedder=HashingEmbedder(),
        clock=clock,
        policy=SearchPolicy(default_limit=2, min_confidence=0.9),
    )
    for i in range(4):
        create(service, f"tea {i}")
    create(service, "old tea", decay_policy="contextual")
    clock.advance(hours=144)  # the contextual one is at 0.8
    results = service.search(SearchMemories(query="tea")).unwrap()
    assert results.count == 2 and all(h.confidence >= 0.9 for h in results.results)


def test_search_of_namespaces_covers_children_not_siblings(service: MemoryService) -> None:
    create(service, "alpha fact", namespace=("user", "a"))
    create(service, "alpha fact child", namespace=("user", "a", "notes"))
    create(service, "alpha fact sibling", namespace=("user", "b"))
    hits = service.search(SearchMemories(query="alpha fact", namespace=("user", "a"))).unwrap()
    assert sorted(h.memory.content for h in hits.results) == ["alpha fact", "alpha fact child"]


# --- reinforce ---------------------------------------------------------------------------------


def test_reinforce_resets_decay_of_reinforceable_memories(service: MemoryService, clock: FixedClock) -> None:
    memory_id = create(service, "uses vim", decay_policy="reinforceable")
    clock.advance(hours=360)
    assert service.get(memory_id).unwrap().confidence == 0.5
    view = service.reinforce(memory_id).unwrap()
    assert view.confidence == 1.0 and view.memory.last_reinforced_at == clock.now()
    assert service.get(memory_id).unwrap().memory.last_reinforced_at == clock.now()
    clock.advance(hours=180)
    assert service.get(memory_id).unwrap().confidence == 0.75


@pytest.mark.parametrize(("policy", "word"), [("stable", "Stable"), ("contextual", "Contextual")])
def test_reinforce_refuses_stable_and_contextual_memories(service: MemoryService, policy: str, word: str) -> None:
    memory_id = create(service, "x", decay_policy=policy)
    result = service.reinforce(memory_id)
    assert code_of(result) is ErrorCode.INVALID_OPERATION
    assert result.failure().message.startswith(f"{word} memories cannot be reinforced")


def test_reinforce_of_missing_or_deleted_memory_is_not_found(service: MemoryService) -> None:
    assert code_of(service.reinforce("11111111-1111-4111-8111-111111111111")) is ErrorCode.MEMORY_NOT_FOUND
    memory_id = create(service, "x", decay_policy="reinforceable")
    service.delete(memory_id).unwrap()
    assert code_of(service.reinforce(memory_id)) is ErrorCode.MEMORY_NOT_FOUND


# --- delete ------------------------------------------------------------------------------------


def test_delete_is_soft_and_refuses_twice(service: MemoryService, catalog: InMemoryCatalog, clock: FixedClock) -> None:
    memory_id = create(service, "x")
    deleted = service.delete(memory_id).unwrap()
    assert deleted.deleted and deleted.deleted_at == clock.now()
    stored = catalog.stores["default"].get([memory_id]).unwrap()
    assert stored == [deleted]  # still stored, flagged
    again = service.delete(memory_id)
    assert code_of(again) is ErrorCode.INVALID_OPERATION and "already deleted" in again.failure().message
    assert code_of(service.delete("11111111-1111-4111-8111-111111111111")) is ErrorCode.MEMORY_NOT_FOUND


# --- status ------------------------------------------------------------------------------------


def test_status_reports_backend_count_and_location(service: MemoryService) -> None:
    create(service, "a")
    create(service, "b")
    status = service.status().unwrap()
    assert (status.backend, status.store, status.memory_count) == ("memory", "default", 2)
    assert status.location == {"location": "memory"}


def test_status_of_a_fresh_install_is_healthy_and_empty(service: MemoryService) -> None:
    assert service.status() == Success(evolve(service.status().unwrap(), memory_count=0))


def test_search_fetches_more_even_when_the_store_cannot_filter_by_confidence(clock: FixedClock) -> None:
    class NoPushdownStore(InMemoryVectorStore):
        def query(self, embedding, where, limit):  # type: ignore[no-untyped-def]
            return super().query(embedding, evolve(where, oldest_anchor=None), limit)

    catalog = InMemoryCatalog(embedder_name="hashing-bow", stores={"default": NoPushdownStore(model="hashing-bow")})
    service = MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock)
    for i in range(60):
        create(service, f"coffee coffee coffee {i}", decay_policy="contextual")
    clock.advance(hours=700)
    for i in range(3):
        create(service, f"coffee fresh {i}")
    results = service.search(SearchMemories(query="coffee coffee coffee", limit=3)).unwrap()
    assert sorted(h.memory.content for h in results.results) == [f"coffee fresh {i}" for i in range(3)]
