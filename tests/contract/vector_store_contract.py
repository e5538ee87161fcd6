"""The VectorStore/StoreCatalog contract: one base class of tests that every storage adapter subclasses.

A subclass provides a `catalog` fixture (a fresh, empty StoreCatalog whose stores record the embedder
name MODEL and take DIM-dimensional vectors) and `reopen`, which opens the same data afresh.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
from attrs import evolve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import CategoryPath, MemoryPath
from agent_memory.domain.ports import CategoryRegistry, StoreCatalog, VectorStore
from tests import field_examples
from tests.field_examples import every_field_set, fields_at_default

DIM = 8
MODEL = "contract-embedder"
NOW = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
T = TypeVar("T")
SIMILARITY_TOLERANCE = 1e-5  # stores may keep vectors as float32

NAMESPACES: list[tuple[str, ...]] = [
    (),
    ("user",),
    ("user", "a"),
    ("user", "b"),
    ("user", "a", "deep"),
    ("user", "ab"),
    ("org", "acme", "bot"),
    ("ünï", "日本"),
]
PATHS: list[str | None] = [None, "notes/one", "notes/sub/two", "notes-x/three", "proj/notes/four", "notes/sub"]
TAGS: list[tuple[str, ...]] = [(), ("a",), ("a", "ab"), ("ab",), ("b", "a"), ("日本",), ("a", "a")]
AGENTS = ["", "alice", "bob"]
PERSONALITIES = ["", "terse"]
PROJECTS = ["", "p1", "p2"]
TYPES = ["", "fact", "preference", "event"]
POLICIES = [DecayPolicy.STABLE, DecayPolicy.CONTEXTUAL, DecayPolicy.REINFORCEABLE]


# --- data -------------------------------------------------------------------------------------


def unit(values: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def axis(index: int) -> list[float]:
    return [1.0 if i == index else 0.0 for i in range(DIM)]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


def random_unit(rng: random.Random) -> list[float]:
    return unit([rng.gauss(0.0, 1.0) for _ in range(DIM)])


def memory_id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def path_of(raw: str | None) -> MemoryPath | None:
    return None if raw is None else MemoryPath(tuple(raw.split("/")))


# every field of full_memory: these values (tricky text, microseconds, unicode labels), and a derived example for any
# field they leave out (tests/field_examples.py), so a field added to Memory is in every round trip below
_FULL_VALUES: dict[str, object] = {
    "id": "6f1c1f0e-3b8e-4d7a-9d43-2b1e5c0a7f10",
    "content": "  Ünïcödé content — 日本語, emoji 🧠, quotes \" ' and a newline\nsecond line  ",
    "created_at": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    "updated_at": datetime(2024, 5, 7, 7, 8, 9, 654321, tzinfo=UTC),
    "store": "default",
    "namespace": ("user", "u-123", "é"),
    "path": MemoryPath(("projects", "agent-memory", "design")),
    "agent": "agent-1",
    "personality": "concise",
    "project": "agent-memory",
    "type": "preference",
    "tags": ("python", "日本", "with space"),
    "source": "chat:2024-05-06",
    "citations": ("https://example.org/a", "doc 2, page 3"),
    "thread": "chat 2024-05-06 #7",
    "decay_policy": DecayPolicy.REINFORCEABLE,
    "last_reinforced_at": datetime(2024, 6, 1, 0, 0, 0, 1, tzinfo=UTC),
    "expires_at": datetime(2030, 1, 1, 23, 59, 59, 999999, tzinfo=UTC),
    "deleted_at": datetime(2024, 6, 2, 3, 4, 5, 600000, tzinfo=UTC),
}


def full_memory(**changes: object) -> Memory:
    """A memory with every field set to something other than its default, but its store (the contract's "default")."""
    return evolve(every_field_set(_FULL_VALUES), **changes)  # type: ignore[arg-type]


def sample(count: int = 40, *, seed: int = 20250301, store: str = "default") -> list[tuple[Memory, list[float]]]:
    """A deterministic, varied set of memories (every filter field takes several values) with unit vectors."""
    rng = random.Random(seed)
    expiries = [None, NOW - timedelta(hours=1), NOW + timedelta(hours=1), NOW, None]
    pairs = []
    for i in range(count):
        created = NOW - timedelta(hours=7 * i, microseconds=13 * i)
        deleted = i % 6 == 5
        memory = Memory(
            id=memory_id(rng),
            content=f"memory number {i} — {'ü' * (i % 3)}",
            created_at=created,
            updated_at=created + timedelta(minutes=i),
            store=store,
            namespace=NAMESPACES[i % len(NAMESPACES)],
            path=path_of(PATHS[i % len(PATHS)]),
            agent=AGENTS[i % len(AGENTS)],
            personality=PERSONALITIES[i % len(PERSONALITIES)],
            project=PROJECTS[(i // 2) % len(PROJECTS)],
            type=TYPES[i % len(TYPES)],
            global_=i % 4 == 0,
            tags=TAGS[i % len(TAGS)],
            source="chat" if i % 2 else "",
            citations=("https://example.org/x", f"note {i}") if i % 3 == 0 else (),
            thread=f"session-{i % 4}" if i % 2 else "",
            decay_policy=POLICIES[i % len(POLICIES)],
            last_reinforced_at=created + timedelta(hours=(5 * i) % 50, microseconds=7) if i % 4 in (1, 2) else None,
            expires_at=expiries[i % len(expiries)],
            deleted=deleted,
            deleted_at=created + timedelta(minutes=1) if deleted else None,
        )
        pairs.append((memory, random_unit(rng)))
    return pairs


def probes() -> list[list[float]]:
    rng = random.Random(7)
    return [random_unit(rng) for _ in range(3)] + [axis(0)]


def _decaying_anchor(pairs: Sequence[tuple[Memory, list[float]]], index: int) -> datetime:
    decaying = [m for m, _ in pairs if m.decay_policy is not DecayPolicy.STABLE]
    return decaying[index].decay_anchor


def named_filters(pairs: Sequence[tuple[Memory, list[float]]]) -> dict[str, MemoryFilter]:
    """One filter per field (and value class) of MemoryFilter, plus combinations."""
    return {
        "default": MemoryFilter(),
        "include_deleted": MemoryFilter(include_deleted=True),
        "ns_empty": MemoryFilter(namespace=()),
        "ns_parent": MemoryFilter(namespace=("user",)),
        "ns_user_a": MemoryFilter(namespace=("user", "a")),
        "ns_user_b": MemoryFilter(namespace=("user", "b")),
        "ns_deep": MemoryFilter(namespace=("user", "a", "deep")),
        "ns_unicode": MemoryFilter(namespace=("ünï",)),
        "ns_nobody": MemoryFilter(namespace=("nobody",)),
        "agent": MemoryFilter(agent="alice"),
        "agent_empty": MemoryFilter(agent=""),
        "personality": MemoryFilter(personality="terse"),
        "project": MemoryFilter(project="p1"),
        "type": MemoryFilter(type="fact"),
        "global_true": MemoryFilter(global_=True),
        "global_false": MemoryFilter(global_=False),
        "tag_a": MemoryFilter(tags=("a",)),
        "tags_all_of": MemoryFilter(tags=("a", "ab")),
        "tag_ab_not_a": MemoryFilter(tags=("ab",)),
        "tag_unicode": MemoryFilter(tags=("日本",)),
        "tag_missing": MemoryFilter(tags=("missing",)),
        "path_root": MemoryFilter(path_prefix=CategoryPath(("notes",))),
        "path_sub": MemoryFilter(path_prefix=CategoryPath(("notes", "sub"))),
        "path_sibling_dash": MemoryFilter(path_prefix=CategoryPath(("notes-x",))),
        "path_full": MemoryFilter(path_prefix=CategoryPath(("notes", "one"))),
        "path_none": MemoryFilter(path_prefix=CategoryPath(("nowhere",))),
        "path_exact": MemoryFilter(path=MemoryPath(("notes", "sub", "two"))),
        "path_exact_short": MemoryFilter(path=MemoryPath(("notes", "sub"))),
        "path_exact_none": MemoryFilter(path=MemoryPath(("notes", "nothing"))),
        "path_exact_and_prefix": MemoryFilter(path=MemoryPath(("notes", "one")), path_prefix=CategoryPath(("notes",))),
        "alive_now": MemoryFilter(alive_at=NOW),
        "alive_later": MemoryFilter(alive_at=NOW + timedelta(hours=2)),
        "alive_deleted_too": MemoryFilter(alive_at=NOW, include_deleted=True),
        "oldest_anchor": MemoryFilter(oldest_anchor=NOW - timedelta(hours=100)),
        "oldest_anchor_exact": MemoryFilter(oldest_anchor=_decaying_anchor(pairs, 5)),
        "combo_search": MemoryFilter(
            namespace=("user",), tags=("a",), alive_at=NOW, oldest_anchor=NOW - timedelta(hours=150)
        ),
        "combo_labels": MemoryFilter(agent="bob", project="p2", global_=False, include_deleted=True),
        "combo_path": MemoryFilter(path_prefix=CategoryPath(("notes",)), type="preference", namespace=("user", "a")),
    }


def filters_strategy(pairs: Sequence[tuple[Memory, list[float]]]) -> st.SearchStrategy[MemoryFilter]:
    """Random filters drawn from the values the sample uses (and boundary moments from it)."""
    moments = sorted(
        {m.created_at for m, _ in pairs}
        | {m.decay_anchor for m, _ in pairs}
        | {m.expires_at for m, _ in pairs if m.expires_at is not None}
        | {NOW}
    )
    moment = st.sampled_from(moments) | st.datetimes(
        min_value=datetime(2024, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(UTC)
    )
    categories = [
        CategoryPath(("notes",)),
        CategoryPath(("notes", "sub")),
        CategoryPath(("proj",)),
        CategoryPath(("notes-x",)),
        CategoryPath(("notes", "one")),
    ]
    return st.builds(
        MemoryFilter,
        namespace=st.none() | st.sampled_from([*NAMESPACES, ("user", "a", "deep", "x"), ("org",)]),
        agent=st.none() | st.sampled_from(AGENTS),
        personality=st.none() | st.sampled_from(PERSONALITIES),
        project=st.none() | st.sampled_from(PROJECTS),
        type=st.none() | st.sampled_from(TYPES),
        global_=st.none() | st.booleans(),
        tags=st.lists(st.sampled_from(["a", "ab", "b", "日本", "zzz"]), max_size=2).map(tuple),
        path=st.none() | st.sampled_from([p for p in map(path_of, PATHS) if p is not None]),
        path_prefix=st.none() | st.sampled_from(categories),
        include_deleted=st.booleans(),
        alive_at=st.none() | moment,
        oldest_anchor=st.none() | moment,
    )


memories_strategy = field_examples.memories()  # every field drawn, derived from attrs.fields(Memory)


# --- checks -----------------------------------------------------------------------------------


def ok(result: Result[T, DomainError]) -> T:
    assert isinstance(result, Success), f"expected Success, got {result!r}"
    value: T = result.unwrap()
    return value


def failed_with(result: Result[object, DomainError], code: ErrorCode) -> DomainError:
    assert isinstance(result, Failure), f"expected Failure({code}), got {result!r}"
    error: DomainError = result.failure()
    assert error.code is code, error
    return error


def assert_scan_matches(store: VectorStore, pairs: Sequence[tuple[Memory, list[float]]], where: MemoryFilter) -> None:
    found = ok(store.scan(where))
    assert isinstance(found, list)
    expected = {m.id: m for m, _ in pairs if where.matches(m)}
    assert sorted(m.id for m in found) == sorted(expected), where
    for memory in found:
        assert memory == expected[memory.id]


def assert_query_matches(
    store: VectorStore,
    pairs: Sequence[tuple[Memory, list[float]]],
    probe: Sequence[float],
    where: MemoryFilter,
    limit: int,
) -> None:
    """The hits are exactly the best `limit` matches of the reference filter, by cosine, best first."""
    hits = ok(store.query(probe, where, limit))
    assert isinstance(hits, list)
    reference = {m.id: (m, cosine(probe, v)) for m, v in pairs if where.matches(m)}
    assert len(hits) == min(limit, len(reference)), (where, len(hits), len(reference))
    similarities = [similarity for _, similarity in hits]
    assert similarities == sorted(similarities, reverse=True)
    returned = set()
    for memory, similarity in hits:
        assert memory.id in reference, f"{memory.id} does not match {where}"
        expected_memory, expected_similarity = reference[memory.id]
        assert memory == expected_memory
        assert similarity == pytest.approx(expected_similarity, abs=SIMILARITY_TOLERANCE)
        returned.add(memory.id)
    left_out = [similarity for memory_id, (_, similarity) in reference.items() if memory_id not in returned]
    if hits and left_out:
        assert max(left_out) <= min(similarities) + SIMILARITY_TOLERANCE


UNKNOWN_ID = "00000000-0000-4000-8000-00000000dead"


def assert_passing_matches(
    store: VectorStore, pairs: Sequence[tuple[Memory, list[float]]], where: MemoryFilter
) -> None:
    """`passing` of every other stored id (and an unknown one) is exactly those the reference filter keeps."""
    asked = [m for m, _ in pairs][::2]
    found = ok(store.passing([UNKNOWN_ID, *(m.id for m in asked)], where))
    assert isinstance(found, set)
    assert found == {m.id for m in asked if where.matches(m)}, where


# --- the contract -----------------------------------------------------------------------------


class VectorStoreContract:
    """Every promise of VectorStore and StoreCatalog (domain/ports.py), for any adapter."""

    @pytest.fixture
    def catalog(self, tmp_path: object) -> StoreCatalog:
        raise NotImplementedError("subclasses provide a fresh, empty catalog (embedder MODEL, dimension DIM)")

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        """A new catalog over the same data (a new client, process-like), to prove writes are durable."""
        raise NotImplementedError

    @pytest.fixture
    def store(self, catalog: StoreCatalog) -> VectorStore:
        opened = ok(catalog.open("default", create=True))
        return opened

    @pytest.fixture
    def pairs(self) -> list[tuple[Memory, list[float]]]:
        return sample()

    @pytest.fixture
    def loaded(self, store: VectorStore, pairs: list[tuple[Memory, list[float]]]) -> VectorStore:
        ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
        return store

    # --- catalog

    def test_backend_is_named(self, catalog: StoreCatalog) -> None:
        assert isinstance(catalog.backend, str) and catalog.backend

    def test_health_reports_location(self, catalog: StoreCatalog) -> None:
        fields = ok(catalog.health())
        assert isinstance(fields, dict) or hasattr(fields, "items")
        assert fields and all(isinstance(k, str) and isinstance(v, str) for k, v in fields.items())

    def test_open_missing_store_without_create_is_store_not_found(self, catalog: StoreCatalog) -> None:
        failed_with(catalog.open("work-notes", create=False), ErrorCode.STORE_NOT_FOUND)
        assert "work-notes" not in ok(catalog.names())

    def test_open_with_create_makes_the_store_then_it_opens_without(self, catalog: StoreCatalog) -> None:
        created = ok(catalog.open("work-notes", create=True))
        assert ok(created.count()) == 0
        again = ok(catalog.open("work-notes", create=False))
        assert ok(again.count()) == 0

    def test_names_lists_created_stores(self, catalog: StoreCatalog) -> None:
        assert ok(catalog.names()) == []
        for name in ("default", "work-notes", "a1"):
            ok(catalog.open(name, create=True))
        assert ok(catalog.names()) == ["a1", "default", "work-notes"]

    def test_stores_are_isolated(self, catalog: StoreCatalog) -> None:
        one = ok(catalog.open("one", create=True))
        two = ok(catalog.open("two", create=True))
        shared_id = full_memory().id
        first = full_memory(store="one", content="in store one", deleted=False, deleted_at=None)
        second = full_memory(store="two", content="in store two", tags=(), path=None)
        ok(one.add([first], [axis(0)]))
        ok(two.add([second], [axis(1)]))
        assert ok(one.get([shared_id])) == [first]
        assert ok(two.get([shared_id])) == [second]
        ok(two.remove([shared_id]))
        assert ok(one.count()) == 1 and ok(two.count()) == 0
        hits = ok(one.query(axis(1), MemoryFilter(), 10))
        assert [m for m, _ in hits] == [first]

    def test_embedding_model_is_recorded(self, catalog: StoreCatalog) -> None:
        for name in ("default", "other"):
            store = ok(catalog.open(name, create=True))
            assert ok(store.embedding_model()) == MODEL

    def test_writes_are_durable(self, catalog: StoreCatalog) -> None:
        pairs = sample(store="kept")
        store = ok(catalog.open("kept", create=True))
        ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
        fresh = self.reopen(catalog)
        assert ok(fresh.names()) == ["kept"]
        reopened = ok(fresh.open("kept", create=False))
        assert ok(reopened.count()) == len(pairs)
        assert ok(reopened.get([m.id for m, _ in pairs])) == [m for m, _ in pairs]
        assert ok(reopened.embedding_model()) == MODEL

    # --- add / get

    def test_every_field_round_trips(self, catalog: StoreCatalog) -> None:
        """Each field of Memory set to something other than its default (derived, so a new field is in it) comes
        back as written, after a reopen, and after a metadata update changes every field an update can."""
        memory = every_field_set()
        assert fields_at_default(memory) == []
        ok(ok(catalog.open(memory.store, create=True)).add([memory], [axis(2)]))
        reopened = ok(self.reopen(catalog).open(memory.store, create=False))
        assert ok(reopened.get([memory.id])) == [memory]
        changed = full_memory(id=memory.id, store=memory.store, path=memory.path)
        ok(reopened.update_metadata([changed]))
        assert ok(reopened.get([memory.id])) == [changed]

    def test_the_full_memory_round_trips(self, store: VectorStore) -> None:
        memory = full_memory()
        assert fields_at_default(memory) == ["store"]
        ok(store.add([memory], [axis(2)]))
        assert ok(store.get([memory.id])) == [memory]

    def test_defaults_round_trip(self, store: VectorStore) -> None:
        """None stays None, empty tuples stay empty, "" stays "" (no field is invented)."""
        created = datetime(2024, 1, 1, tzinfo=UTC)
        memory = Memory(id="00000000-0000-4000-8000-000000000001", content="x", created_at=created, updated_at=created)
        ok(store.add([memory], [axis(3)]))
        assert ok(store.get([memory.id])) == [memory]

    def test_round_trip_of_generated_memories(self, store: VectorStore) -> None:
        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(memory=memories_strategy)
        def check(memory: Memory) -> None:
            ok(store.add([memory], [axis(4)]))
            assert ok(store.get([memory.id])) == [memory]
            own = MemoryFilter(
                namespace=memory.namespace,
                agent=memory.agent,
                personality=memory.personality,
                project=memory.project,
                type=memory.type,
                global_=memory.global_,
                tags=memory.tags,
                path=memory.path,
                path_prefix=None if memory.path is None else memory.path.category,
                include_deleted=True,
            )
            assert memory.id in {m.id for m in ok(store.scan(own))}

        check()

    def test_get_omits_unknown_ids_and_returns_soft_deleted(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        deleted = next(m for m, _ in pairs if m.deleted)
        live = next(m for m, _ in pairs if not m.deleted)
        unknown = "00000000-0000-4000-8000-00000000dead"
        assert ok(loaded.get([deleted.id, unknown, live.id])) == [deleted, live]
        assert ok(loaded.get([])) == []
        assert ok(loaded.get([unknown])) == []

    def test_add_with_mismatched_lengths_fails(self, store: VectorStore) -> None:
        failed_with(store.add([full_memory()], []), ErrorCode.STORAGE_ERROR)
        assert ok(store.count()) == 0

    def test_add_of_an_existing_id_overwrites_it(self, store: VectorStore) -> None:
        memory = full_memory()
        ok(store.add([memory], [axis(0)]))
        newer = full_memory(content="rewritten", tags=(), path=None, deleted=False, deleted_at=None)
        ok(store.add([newer], [axis(1)]))
        assert ok(store.get([memory.id])) == [newer]
        assert ok(store.count()) == 1
        assert ok(store.scan(MemoryFilter(tags=("python",), include_deleted=True))) == []
        hits = ok(store.query(axis(1), MemoryFilter(), 1))
        assert [(m, round(s, 4)) for m, s in hits] == [(newer, 1.0)]

    def test_count_includes_soft_deleted(self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]) -> None:
        assert ok(loaded.count()) == len(pairs)

    def test_a_healthy_store_reports_no_problems(self, loaded: VectorStore) -> None:
        assert ok(loaded.problems()) == ()

    # --- query

    def test_query_ranks_by_cosine_similarity(self, store: VectorStore) -> None:
        base = datetime(2024, 1, 1, tzinfo=UTC)
        vectors = {
            "same": axis(0),
            "close": unit([1.0, 0.2] + [0.0] * (DIM - 2)),
            "diagonal": unit([1.0, 1.0] + [0.0] * (DIM - 2)),
            "orthogonal": axis(1),
            "opposite": [-x for x in axis(0)],
        }
        memories = [
            Memory(id=str(uuid.UUID(int=i + 1, version=4)), content=name, created_at=base, updated_at=base)
            for i, name in enumerate(vectors)
        ]
        ok(store.add(memories, list(vectors.values())))
        hits = ok(store.query(axis(0), MemoryFilter(), 10))
        assert isinstance(hits, list)
        assert [m.content for m, _ in hits] == ["same", "close", "diagonal", "orthogonal", "opposite"]
        expected = [1.0, 1 / math.sqrt(1.04), 1 / math.sqrt(2), 0.0, -1.0]
        assert [s for _, s in hits] == pytest.approx(expected, abs=SIMILARITY_TOLERANCE)
        top = ok(store.query(axis(0), MemoryFilter(), 2))
        assert [m.content for m, _ in top] == ["same", "close"]

    def test_query_on_an_empty_store(self, store: VectorStore) -> None:
        assert ok(store.query(axis(0), MemoryFilter(), 10)) == []
        assert ok(store.query(axis(0), MemoryFilter(tags=("a",), alive_at=NOW), 1)) == []

    def test_query_with_limit_above_matches_returns_all_matches(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        assert_query_matches(loaded, pairs, probes()[0], MemoryFilter(include_deleted=True), 1000)
        assert_query_matches(loaded, pairs, probes()[0], MemoryFilter(namespace=("user", "a")), 50)

    @pytest.mark.parametrize("name", list(named_filters(sample())))
    def test_query_and_scan_honour_every_filter_field(
        self, name: str, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        where = named_filters(pairs)[name]
        assert_scan_matches(loaded, pairs, where)
        for probe in probes()[:2]:
            for limit in (1, 5, 100):
                assert_query_matches(loaded, pairs, probe, where, limit)

    def test_namespace_prefix_never_reaches_a_sibling(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        a = {m.namespace for m in ok(loaded.scan(MemoryFilter(namespace=("user", "a"))))}
        b = {m.namespace for m in ok(loaded.scan(MemoryFilter(namespace=("user", "b"))))}
        parent = {m.namespace for m in ok(loaded.scan(MemoryFilter(namespace=("user",))))}
        assert a == {("user", "a"), ("user", "a", "deep")}
        assert b == {("user", "b")}
        assert parent == {("user",), ("user", "a"), ("user", "b"), ("user", "a", "deep"), ("user", "ab")}

    def test_random_filters_agree_with_the_reference(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(where=filters_strategy(pairs), probe=st.sampled_from(probes()), limit=st.sampled_from([1, 3, 10, 50]))
        def check(where: MemoryFilter, probe: list[float], limit: int) -> None:
            assert_scan_matches(loaded, pairs, where)
            assert_query_matches(loaded, pairs, probe, where, limit)
            assert_passing_matches(loaded, pairs, where)

        check()

    def test_selective_filter_on_a_large_store_still_fills_the_limit(self, store: VectorStore) -> None:
        """Past the size where indexes stop being brute force, a filter must not starve the results."""
        many = sample(1200, seed=99)
        rare = {m.id for m, _ in many[::240]}
        tagged = [(evolve(m, tags=("rare",)) if m.id in rare else evolve(m, tags=()), v) for m, v in many]
        ok(store.add([m for m, _ in tagged], [v for _, v in tagged]))
        where = MemoryFilter(tags=("rare",), include_deleted=True)
        assert_query_matches(store, tagged, probes()[1], where, 10)
        assert ok(store.passing([m.id for m, _ in tagged], where)) == rare
        assert_query_matches(store, tagged, probes()[1], MemoryFilter(include_deleted=True), 20)

    # --- passing

    @pytest.mark.parametrize("name", list(named_filters(sample())))
    def test_passing_honours_every_filter_field(
        self, name: str, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        assert_passing_matches(loaded, pairs, named_filters(pairs)[name])

    def test_passing_leaves_out_the_deleted_the_wrong_tag_the_wrong_path_and_unknown_ids(
        self, store: VectorStore
    ) -> None:
        base = full_memory(deleted=False, deleted_at=None, expires_at=None, tags=("x", "y"))
        kept = evolve(base, id=str(uuid.UUID(int=1, version=4)))
        deleted = evolve(base, id=str(uuid.UUID(int=2, version=4)), deleted=True, deleted_at=NOW)
        other_tag = evolve(base, id=str(uuid.UUID(int=3, version=4)), tags=("y",))
        other_path = evolve(base, id=str(uuid.UUID(int=4, version=4)), path=MemoryPath(("elsewhere", "note")))
        ok(store.add([kept, deleted, other_tag, other_path], [axis(0), axis(1), axis(2), axis(3)]))
        ids = [UNKNOWN_ID, other_path.id, other_tag.id, deleted.id, kept.id, kept.id]
        under = CategoryPath(("projects",))
        assert ok(store.passing(ids, MemoryFilter(tags=("x",), path_prefix=under))) == {kept.id}
        assert ok(store.passing(ids, MemoryFilter(tags=("x",), include_deleted=True))) == {
            kept.id,
            deleted.id,
            other_path.id,
        }
        assert ok(store.passing(ids, MemoryFilter(path=kept.path))) == {kept.id, other_tag.id}
        assert ok(store.passing(ids, MemoryFilter(tags=("missing",)))) == set()
        assert ok(store.passing([], MemoryFilter())) == set()
        assert ok(store.passing([UNKNOWN_ID], MemoryFilter(include_deleted=True))) == set()

    def test_passing_follows_updates_and_removals(self, store: VectorStore) -> None:
        memory = full_memory(deleted=False, deleted_at=None, expires_at=None, tags=("x",))
        ok(store.add([memory], [axis(0)]))
        ok(store.query(axis(0), MemoryFilter(), 1))  # a store that mirrors its records in process does it now
        where = MemoryFilter(tags=("x",))
        assert ok(store.passing([memory.id], where)) == {memory.id}
        ok(store.update_metadata([evolve(memory, tags=("y",))]))
        assert ok(store.passing([memory.id], where)) == set()
        ok(store.update_metadata([memory]))
        assert ok(store.passing([memory.id], where)) == {memory.id}
        ok(store.remove([memory.id]))
        assert ok(store.passing([memory.id], MemoryFilter(include_deleted=True))) == set()

    # --- scan

    def test_scan_of_an_empty_store(self, store: VectorStore) -> None:
        assert ok(store.scan(MemoryFilter(include_deleted=True))) == []

    # --- update_metadata / replace / remove

    def test_update_metadata_changes_fields_and_keeps_the_vector(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        memory, vector = next((m, v) for m, v in pairs if m.tags and m.path is not None and not m.deleted)
        changed = evolve(
            memory,
            tags=(),
            path=None,
            namespace=("elsewhere",),
            agent="carol",
            global_=not memory.global_,
            last_reinforced_at=NOW,
            expires_at=None,
            deleted=True,
            deleted_at=NOW,
        )
        ok(loaded.update_metadata([changed]))
        assert ok(loaded.get([memory.id])) == [changed]
        assert ok(loaded.count()) == len(pairs)
        everything = MemoryFilter(include_deleted=True)
        hits = ok(loaded.query(vector, everything, 1))
        assert [(m, round(s, 4)) for m, s in hits] == [(changed, 1.0)]
        after = [(changed, v) if m.id == memory.id else (m, v) for m, v in pairs]
        for tag in memory.tags:  # cleared list fields must not keep matching
            assert_scan_matches(loaded, after, MemoryFilter(tags=(tag,), include_deleted=True))
        assert memory.path is not None
        assert_scan_matches(loaded, after, MemoryFilter(path_prefix=memory.path.category, include_deleted=True))
        assert_scan_matches(loaded, after, MemoryFilter(namespace=memory.namespace, include_deleted=True))
        assert_scan_matches(loaded, after, MemoryFilter(oldest_anchor=NOW - timedelta(hours=1), alive_at=NOW))

    def test_update_metadata_with_new_content_keeps_the_vector(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        memory, vector = pairs[3]
        changed = evolve(memory, content="edited text", updated_at=NOW)
        ok(loaded.update_metadata([changed]))
        assert ok(loaded.get([memory.id])) == [changed]
        hits = ok(loaded.query(vector, MemoryFilter(include_deleted=True), 1))
        assert [m for m, _ in hits] == [changed]

    def test_writes_answer_the_memories_as_a_following_get_returns_them(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        """`update_metadata` and `replace` answer what they stored, revision included: a use case answers from it
        without reading the memory back."""
        (first, _), (second, _), (third, vector) = pairs[:3]
        changed = [evolve(first, tags=("changed",), revision=4), evolve(second, agent="carol", updated_at=NOW)]
        written = ok(loaded.update_metadata(changed))
        assert written == changed  # in the order given, each at the revision it carried: a plain store keeps it
        assert [ok(loaded.get([m.id]))[0] for m in written] == written
        replaced = evolve(third, content="said again", revision=third.revision + 2)
        assert ok(loaded.replace([replaced], [vector])) == ok(loaded.get([third.id])) == [replaced]
        assert ok(loaded.update_metadata([])) == []

    def test_update_metadata_of_an_unknown_id_is_memory_not_found(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        known = evolve(pairs[0][0], agent="changed")
        ghost = full_memory(id="00000000-0000-4000-8000-00000000beef")
        failed_with(loaded.update_metadata([known, ghost]), ErrorCode.MEMORY_NOT_FOUND)
        assert ok(loaded.get([ghost.id])) == []
        assert ok(loaded.count()) == len(pairs)

    def test_replace_changes_content_and_vector(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        memory, _ = next((m, v) for m, v in pairs if m.tags and not m.deleted)
        replaced = evolve(memory, content="brand new content", tags=(), updated_at=NOW)
        target = unit([0.3, -0.1, 0.9, 0.2, -0.5, 0.1, 0.0, 0.4][:DIM] + [0.0] * max(0, DIM - 8))
        ok(loaded.replace([replaced], [target]))
        assert ok(loaded.get([memory.id])) == [replaced]
        hits = ok(loaded.query(target, MemoryFilter(include_deleted=True), 1))
        assert [(m, round(s, 4)) for m, s in hits] == [(replaced, 1.0)]
        after = [(replaced, target) if m.id == memory.id else (m, v) for m, v in pairs]
        assert_scan_matches(loaded, after, MemoryFilter(tags=memory.tags[:1], include_deleted=True))
        assert ok(loaded.count()) == len(pairs)

    def test_replace_writes_several_memories_in_one_call(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        chosen = pairs[:3]
        replaced = [evolve(m, content=f"rewritten {n}", updated_at=NOW) for n, (m, _) in enumerate(chosen)]
        targets = [v for _, v in reversed(chosen)]  # each takes another's vector
        ok(loaded.replace(replaced, targets))
        assert sorted(ok(loaded.get([m.id for m in replaced])), key=lambda m: m.id) == sorted(
            replaced, key=lambda m: m.id
        )
        for memory, target in zip(replaced, targets, strict=True):
            hits = ok(loaded.query(target, MemoryFilter(include_deleted=True), 1))
            assert (hits[0][0], round(hits[0][1], 4)) == (memory, 1.0)
        failed_with(loaded.replace(replaced[:2], targets[:1]), ErrorCode.STORAGE_ERROR)
        assert ok(loaded.count()) == len(pairs)

    def test_similarities_score_stored_vectors_and_omit_unknown_ids(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        chosen = pairs[:4]
        unknown = "00000000-0000-4000-8000-000000000000"
        probe = probes()[0]
        found = ok(loaded.similarities(probe, [m.id for m, _ in chosen] + [unknown]))
        assert set(found) == {m.id for m, _ in chosen}
        for memory, vector in chosen:
            assert found[memory.id] == pytest.approx(cosine(probe, vector), abs=SIMILARITY_TOLERANCE)
        assert ok(loaded.similarities(probe, [])) == {}

    def test_similarities_agree_with_query(self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]) -> None:
        probe = probes()[1]
        hits = ok(loaded.query(probe, MemoryFilter(include_deleted=True), 5))
        found = ok(loaded.similarities(probe, [m.id for m, _ in hits]))
        for memory, similarity in hits:
            assert found[memory.id] == pytest.approx(similarity, abs=SIMILARITY_TOLERANCE)

    def test_remove_deletes_for_good(self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]) -> None:
        gone = [m.id for m, _ in pairs[:5]]
        ok(loaded.remove([*gone, "00000000-0000-4000-8000-00000000dead"]))
        ok(loaded.remove([]))
        assert ok(loaded.get(gone)) == []
        assert ok(loaded.count()) == len(pairs) - 5
        assert_scan_matches(loaded, pairs[5:], MemoryFilter(include_deleted=True))
        assert_query_matches(loaded, pairs[5:], probes()[0], MemoryFilter(include_deleted=True), 100)

    # --- rebuild

    def test_rebuild_replaces_contents_and_model_at_once(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        kept = pairs[:10]
        fresh = sample(5, seed=5)
        new_pairs = [(m, list(reversed(v))) for m, v in kept] + fresh
        ok(loaded.rebuild([m for m, _ in new_pairs], [v for _, v in new_pairs], "another-model"))
        assert ok(loaded.embedding_model()) == "another-model"
        assert ok(loaded.count()) == len(new_pairs)
        assert ok(loaded.get([m.id for m, _ in pairs[10:]])) == []
        assert ok(loaded.get([m.id for m, _ in new_pairs])) == [m for m, _ in new_pairs]
        assert_scan_matches(loaded, new_pairs, MemoryFilter(include_deleted=True))
        assert_query_matches(loaded, new_pairs, probes()[0], MemoryFilter(include_deleted=True), 100)
        assert_query_matches(loaded, new_pairs, probes()[1], MemoryFilter(namespace=("user",), alive_at=NOW), 3)

    def test_rebuild_is_durable_and_keeps_the_store_usable(self, catalog: StoreCatalog) -> None:
        pairs = sample(store="kept")
        store = ok(catalog.open("kept", create=True))
        ok(store.add([m for m, _ in pairs], [v for _, v in pairs]))
        ok(store.rebuild([m for m, _ in pairs[:3]], [v for _, v in pairs[:3]], "model-2"))
        extra, vector = sample(1, seed=11, store="kept")[0]
        ok(store.add([extra], [vector]))
        ok(store.update_metadata([evolve(pairs[0][0], agent="after-rebuild")]))
        reopened = ok(self.reopen(catalog).open("kept", create=False))
        assert ok(reopened.embedding_model()) == "model-2"
        expected = [evolve(pairs[0][0], agent="after-rebuild"), pairs[1][0], pairs[2][0], extra]
        assert sorted(ok(reopened.scan(MemoryFilter(include_deleted=True))), key=lambda m: m.id) == sorted(
            expected, key=lambda m: m.id
        )
        assert ok(self.reopen(catalog).names()) == ["kept"]

    def test_rebuild_may_change_the_dimension(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        wider = [(m, v + [0.0] * 4) for m, v in pairs[:6]]
        ok(loaded.rebuild([m for m, _ in wider], [v for _, v in wider], "wider-model"))
        assert_query_matches(loaded, wider, wider[2][1], MemoryFilter(include_deleted=True), 3)
        extra, vector = sample(1, seed=12)[0]
        ok(loaded.add([extra], [vector + [0.0] * 4]))
        assert ok(loaded.count()) == 7

    def test_rebuild_to_nothing_empties_the_store(self, loaded: VectorStore) -> None:
        ok(loaded.rebuild([], [], "empty-model"))
        assert ok(loaded.count()) == 0
        assert ok(loaded.embedding_model()) == "empty-model"
        assert ok(loaded.query(axis(0), MemoryFilter(), 5)) == []

    def test_rebuild_with_mismatched_lengths_fails_and_keeps_the_old_contents(
        self, loaded: VectorStore, pairs: list[tuple[Memory, list[float]]]
    ) -> None:
        failed_with(loaded.rebuild([m for m, _ in pairs], [], "broken"), ErrorCode.STORAGE_ERROR)
        assert ok(loaded.count()) == len(pairs)
        assert ok(loaded.embedding_model()) == MODEL

    # --- categories

    def test_categories_of_a_missing_store_is_store_not_found(self, catalog: StoreCatalog) -> None:
        failed_with(catalog.categories("nowhere"), ErrorCode.STORE_NOT_FOUND)

    def test_categories_start_empty_and_take_descriptions(self, catalog: StoreCatalog) -> None:
        ok(catalog.open("default", create=True))
        registry: CategoryRegistry = ok(catalog.categories("default"))
        assert dict(ok(registry.describe_all())) == {}
        ok(registry.remove([CategoryPath(("never",))]))
        ok(registry.put(CategoryPath(("projects",)), ""))
        ok(registry.put(CategoryPath(("projects", "agent-memory")), "Design notes — ünïcödé, 日本語"))
        ok(registry.put(CategoryPath(("people",)), "x" * 500))
        ok(registry.put(CategoryPath(("projects",)), "re-described"))
        assert dict(ok(registry.describe_all())) == {
            "projects": "re-described",
            "projects/agent-memory": "Design notes — ünïcödé, 日本語",
            "people": "x" * 500,
        }
        ok(registry.remove([CategoryPath(("projects", "agent-memory")), CategoryPath(("unknown",))]))
        ok(registry.remove([]))
        assert dict(ok(registry.describe_all())) == {"projects": "re-described", "people": "x" * 500}
        assert ok(catalog.names()) == ["default"]

    def test_categories_are_per_store_durable_and_survive_a_rebuild(self, catalog: StoreCatalog) -> None:
        one = ok(catalog.open("one", create=True))
        ok(catalog.open("two", create=True))
        ok(ok(catalog.categories("one")).put(CategoryPath(("a", "b")), "in one"))
        ok(ok(catalog.categories("two")).put(CategoryPath(("c",)), "in two"))
        ok(one.rebuild([], [], MODEL))
        fresh = self.reopen(catalog)
        assert dict(ok(ok(fresh.categories("one")).describe_all())) == {"a/b": "in one"}
        assert dict(ok(ok(fresh.categories("two")).describe_all())) == {"c": "in two"}
        assert ok(fresh.names()) == ["one", "two"]
