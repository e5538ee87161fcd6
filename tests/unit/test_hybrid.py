"""Hybrid, semantic and keyword search over fakes: filters on both sides, neighbour context, bad modes."""

from collections.abc import Sequence
from datetime import timedelta

import pytest
from attrs import define, evolve, field, frozen
from returns.result import Result, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import (
    HashingEmbedder,
    InMemoryCatalog,
    InMemoryKeywordIndex,
    InMemoryVectorStore,
)
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector
from agent_memory.domain.search.hybrid import dense_score, fuse
from agent_memory.domain.service import MemoryService
from agent_memory.domain.thread_keys import KeywordScope
from tests.unit.conftest import T0


@pytest.fixture
def hybrid(clock: FixedClock) -> MemoryService:
    return MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
    )


def contents(service: MemoryService, **search: object) -> list[str]:
    results = service.search(SearchMemories(**search)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_every_mode_honours_filters_namespaces_deletion_and_expiry(
    hybrid: MemoryService, clock: FixedClock, mode: str
) -> None:
    hybrid.create(CreateMemory(content="kiwi plan alpha", namespace=("user", "a"), project="p")).unwrap()
    hybrid.create(CreateMemory(content="kiwi plan sibling", namespace=("user", "b"), project="p")).unwrap()
    hybrid.create(CreateMemory(content="kiwi plan other project", namespace=("user", "a"), project="q")).unwrap()
    gone = hybrid.create(CreateMemory(content="kiwi plan deleted", namespace=("user", "a"), project="p")).unwrap()
    hybrid.delete(gone.memory.id).unwrap()
    hybrid.create(
        CreateMemory(
            content="kiwi plan expired", namespace=("user", "a"), project="p", expires_at=T0 + timedelta(hours=1)
        )
    ).unwrap()
    clock.advance(hours=2)
    found = contents(hybrid, query="kiwi plan", namespace=("user", "a"), project="p", mode=mode)
    assert found == ["kiwi plan alpha"]


def test_keyword_mode_ranks_by_words_and_reports_similarity(hybrid: MemoryService) -> None:
    hybrid.create(CreateMemory(content="the invoice number is INV-88231")).unwrap()
    hybrid.create(CreateMemory(content="a note about invoices in general")).unwrap()
    results = hybrid.search(SearchMemories(query="INV-88231", mode="keyword")).unwrap()
    assert results.results[0].memory.content == "the invoice number is INV-88231"
    assert results.results[0].score == 1.0 and results.results[0].similarity > 0


def test_hybrid_search_fills_the_limit_when_filters_drop_keyword_hits(hybrid: MemoryService) -> None:
    for i in range(120):
        hybrid.create(CreateMemory(content=f"mango report {i}", project="noise")).unwrap()
    for i in range(3):
        hybrid.create(CreateMemory(content=f"mango summary {i}", project="target")).unwrap()
    found = contents(hybrid, query="mango report", project="target", limit=3)
    assert sorted(found) == [f"mango summary {i}" for i in range(3)]


@frozen
class SameVectorEmbedder:
    """Every text the same vector: the dense side cannot tell memories apart, so only words can."""

    name: str = "same-vector"
    dimension: int = 4

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        return Success([[1.0, 0.0, 0.0, 0.0] for _ in texts])

    def embed_query(self, text: str) -> Result[Vector, DomainError]:
        return Success([1.0, 0.0, 0.0, 0.0])

    def embed_parts(self, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        return Success([[] for _ in texts])

    def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
        return Success([False for _ in texts])

    def part_spans(self, texts: Sequence[str]) -> Result[list[list[tuple[int, int]]], DomainError]:
        return Success([[] for _ in texts])


@define
class ScopeRecordingIndex(InMemoryKeywordIndex):
    """The in-memory index, remembering the scope of every search it was asked."""

    scopes: list[KeywordScope | None] = field(factory=list)

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        self.scopes.append(scope)
        return super().search(store, query, limit, thread_prefix=thread_prefix, scope=scope)


@pytest.mark.parametrize("crowd", ["another project", "another tag", "deleted"])
def test_keyword_hits_that_fail_the_filter_never_crowd_out_those_that_pass(clock: FixedClock, crowd: str) -> None:
    """60 better keyword hits that the filter rejects sit above the one memory that has a query word: it is
    still the keyword side's best hit (score 1.0) and the hybrid search's first result, though the dense
    side cannot find it among 80 memories of its project (before: the keyword side was drawn 50 deep
    before the filter, so it never came in). The index narrows by project itself; tags and deletion it
    does not know, so the search asks it again, deeper."""
    keywords = ScopeRecordingIndex()
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="same-vector"),
        embedder=SameVectorEmbedder(),
        clock=clock,
        keywords=keywords,
    )
    for i in range(60):
        project, tags = ("sky", ["ground"]) if crowd == "another project" else ("ground", [])
        noise = service.create(CreateMemory(content=f"comet orbit log {i}", project=project, tags=tags)).unwrap()
        if crowd == "deleted":
            service.delete(noise.memory.id).unwrap()
    for i in range(79):
        service.create(CreateMemory(content=f"filler entry number {i}", project="ground", tags=["ground"])).unwrap()
    service.create(CreateMemory(content="the comet was seen at dawn", project="ground", tags=["ground"])).unwrap()

    search = {"query": "comet orbit", "project": "ground", "tags": ["ground"]}
    by_words = service.search(SearchMemories(**search, mode="keyword")).unwrap()  # type: ignore[arg-type]
    assert [(hit.memory.content, hit.score) for hit in by_words.results] == [("the comet was seen at dawn", 1.0)]
    blended = contents(service, **search, limit=5)
    assert blended[0] == "the comet was seen at dawn"
    assert set(keywords.scopes) == {(None, None, "ground", None, None)}


@define
class ReadRecordingStore(InMemoryVectorStore):
    """The in-memory store, remembering every id whose record was read with `get`."""

    read: list[str] = field(factory=list)

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        self.read.extend(ids)
        return super().get(ids)


@define
class EveryIdPassesStore(ReadRecordingStore):
    """A store that says every known id passes any filter: the domain must still judge each record it reads."""

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        return Success({i for i in ids if i in self.records})


@pytest.mark.parametrize("crowd", ["another tag", "deleted"])
def test_the_keyword_side_reads_only_the_hits_the_store_says_pass(clock: FixedClock, crowd: str) -> None:
    """Under a tag filter, the 60 better keyword hits the filter rejects are never read (before, each was read
    to be rejected); a store that lets them all through scores the same, the domain rejecting their records."""
    rankings = []
    for store in (ReadRecordingStore(model="same-vector"), EveryIdPassesStore(model="same-vector")):
        service = MemoryService(
            catalog=InMemoryCatalog(embedder_name="same-vector", stores={"default": store}),
            embedder=SameVectorEmbedder(),
            clock=clock,
            keywords=InMemoryKeywordIndex(),
        )
        noise = set()
        for i in range(60):
            tags = [] if crowd == "another tag" else ["ground"]
            made = service.create(CreateMemory(content=f"comet orbit log {i}", tags=tags)).unwrap()
            noise.add(made.memory.id)
            if crowd == "deleted":
                service.delete(made.memory.id).unwrap()
        for i in range(79):
            service.create(CreateMemory(content=f"filler entry number {i}", tags=["ground"])).unwrap()
        service.create(CreateMemory(content="the comet was seen at dawn", tags=["ground"])).unwrap()
        store.read.clear()
        found = service.search(SearchMemories(query="comet orbit", tags=["ground"], limit=5)).unwrap()
        rankings.append([(hit.memory.content, hit.score) for hit in found.results])
        assert (noise <= set(store.read)) if isinstance(store, EveryIdPassesStore) else not noise & set(store.read)
    assert [score for _, score in rankings[0]] == [score for _, score in rankings[1]]  # fillers tie: ids order them
    assert rankings[0][0] == rankings[1][0] == ("the comet was seen at dawn", rankings[0][0][1])


def test_updated_and_removed_memories_leave_the_keyword_index(hybrid: MemoryService) -> None:
    hybrid.add(CreateMemory(content="old word zeppelin", path="notes/a")).unwrap()
    hybrid.update(UpdateMemory(ref="notes/a", content="new word dirigible")).unwrap()
    assert contents(hybrid, query="zeppelin", mode="keyword") == []
    assert contents(hybrid, query="dirigible", mode="keyword") == ["new word dirigible"]
    hybrid.remove("notes/a").unwrap()
    assert contents(hybrid, query="dirigible", mode="keyword") == []


def test_new_tags_and_a_new_path_are_found_by_keyword(hybrid: MemoryService) -> None:
    hybrid.add(CreateMemory(content="the launch checklist", path="notes/plain")).unwrap()
    hybrid.update(UpdateMemory(ref="notes/plain", tags=["rocketry"])).unwrap()
    assert contents(hybrid, query="rocketry", mode="keyword") == ["the launch checklist"]
    hybrid.move("notes/plain", "aerospace/checklist").unwrap()
    assert contents(hybrid, query="aerospace", mode="keyword") == ["the launch checklist"]
    assert contents(hybrid, query="plain", mode="keyword") == []


def test_reindex_rebuilds_the_keyword_index(hybrid: MemoryService) -> None:
    hybrid.create(CreateMemory(content="walrus facts")).unwrap()
    assert hybrid.keywords is not None
    hybrid.keywords.rebuild("default", []).unwrap()
    assert contents(hybrid, query="walrus", mode="keyword") == []
    hybrid.reindex().unwrap()
    assert contents(hybrid, query="walrus", mode="keyword") == ["walrus facts"]


def test_an_unknown_mode_is_invalid_input(hybrid: MemoryService) -> None:
    result = hybrid.search(SearchMemories(query="x", mode="fuzzy"))
    assert result.failure().code is ErrorCode.INVALID_INPUT
    assert "hybrid, semantic, keyword" in result.failure().message


def test_neighbours_lend_context_to_a_memory() -> None:
    similarity = {"a": 0.2, "b": 0.9, "c": 0.1}
    links = {"a": (None, "b"), "b": ("a", "c"), "c": ("b", None)}
    assert dense_score("a", similarity, links) == pytest.approx(0.2 + 0.25 * 0.9)
    ranked = fuse(["a", "c"], similarity, {"c": 1.0}, links)
    assert [memory_id for memory_id, _ in ranked] == ["c", "a"]


FACTS = [
    "Audrey has had her dogs for three years",
    "Andrew started a new job as a financial analyst",
    "Audrey's dogs love the dog park near her house",
    "Andrew went hiking with his girlfriend last weekend",
    "Audrey took a workshop on dog grooming",
    "Andrew misses having a dog in his apartment",
]
QUERIES = ["How long has Audrey had her dogs?", "What job did Andrew start?", "dog park", "hiking weekend"]


def ranking(service: MemoryService, query: str, **search: object) -> list[tuple[str, float, float]]:
    results = service.search(SearchMemories(query=query, min_confidence=0.0, **search)).unwrap()  # type: ignore[arg-type]
    return [(hit.memory.content, hit.score, hit.similarity) for hit in results.results]


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_independent_facts_rank_exactly_as_without_neighbours(hybrid: MemoryService, mode: str) -> None:
    """Facts saved without a thread lend each other nothing: the order they were saved in cannot matter."""
    hybrid.create_many([CreateMemory(content=fact, namespace=("in-order",)) for fact in FACTS]).unwrap()
    for fact in reversed(FACTS):  # one at a time, other order: in a namespace-wide chain these would be neighbours
        hybrid.create(CreateMemory(content=fact, namespace=("reversed",))).unwrap()
    loners = InMemoryCatalog(embedder_name="hashing-bow")
    alone = MemoryService(
        catalog=loners, embedder=HashingEmbedder(), clock=hybrid.clock, keywords=InMemoryKeywordIndex()
    )
    for number, fact in enumerate(FACTS):  # the reference: every fact in a namespace of its own
        alone.create(CreateMemory(content=fact, namespace=("alone", str(number)))).unwrap()
    for query in QUERIES:  # same scores for every fact (ties may fall either way: ids are random)
        expected = sorted(ranking(alone, query, namespace=("alone",), mode=mode))
        assert sorted(ranking(hybrid, query, namespace=("in-order",), mode=mode)) == expected
        assert sorted(ranking(hybrid, query, namespace=("reversed",), mode=mode)) == expected
    assert hybrid.keywords is not None
    ids = [m.id for m in hybrid.export().unwrap()]
    assert all(links == (None, None) for links in hybrid.keywords.neighbours("default", ids).unwrap().values())


def test_a_conversation_thread_still_lends_context(hybrid: MemoryService) -> None:
    """Turns saved in one thread borrow their neighbours' words and cosine; the same turns unthreaded do not."""
    turns = ["Caroline: What are you researching lately?", "Melanie: Adoption agencies, mostly.", "Caroline: Nice!"]
    hybrid.create_many([CreateMemory(content=t, namespace=("chat",), thread="s1") for t in turns]).unwrap()
    hybrid.create_many([CreateMemory(content=t, namespace=("facts",)) for t in turns]).unwrap()
    threaded = [c for c, _, _ in ranking(hybrid, "researching", namespace=("chat",), mode="keyword")]
    assert threaded == ["Caroline: What are you researching lately?", "Melanie: Adoption agencies, mostly."]
    assert [c for c, _, _ in ranking(hybrid, "researching", namespace=("facts",), mode="keyword")] == [turns[0]]
    lent = dict((c, s) for c, s, _ in ranking(hybrid, "researching", namespace=("chat",)))
    own = dict((c, s) for c, s, _ in ranking(hybrid, "researching", namespace=("facts",)))
    assert lent[turns[1]] > own[turns[1]]  # the answer turn gains from the question before it


def test_threads_are_separate_even_when_interleaved(hybrid: MemoryService) -> None:
    hybrid.create(CreateMemory(content="Zed: the quokka is my favourite animal", thread="a")).unwrap()
    hybrid.create(CreateMemory(content="Amy: lunch at noon", thread="b")).unwrap()
    hybrid.create(CreateMemory(content="Zed: mine too", thread="a")).unwrap()
    found = [c for c, _, _ in ranking(hybrid, "quokka", mode="keyword")]
    assert found == ["Zed: the quokka is my favourite animal", "Zed: mine too"]


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize(
    "scope",
    [{"agent": "carol"}, {"project": "p2"}, {"type": "note"}, {"personality": "calm"}],
)
def test_neighbour_context_never_crosses_scope(hybrid: MemoryService, mode: str, scope: dict[str, str]) -> None:
    """Dan's words next to Carol's memory, even in one named thread, never lift Carol's memory (issue 12)."""
    other = {key: "dan" if key == "agent" else "other" for key in scope}
    hybrid.create(CreateMemory(content="Dan saw a platypus at the zoo", thread="t", **other)).unwrap()
    hybrid.create(CreateMemory(content="an unrelated remark about lunch", thread="t", **scope)).unwrap()
    hybrid.create(CreateMemory(content="Dan fed the platypus", thread="t", **other)).unwrap()
    assert ranking(hybrid, "platypus", mode=mode, **scope) == [] or mode == "hybrid"
    if mode == "hybrid":  # found on the dense side only: its first-stage score is its own cosine's share
        first_stage = evolve(hybrid, policy=evolve(hybrid.policy, rerank=False))
        [(content, score, similarity)] = ranking(first_stage, "platypus", mode=mode, **scope)
        assert content == "an unrelated remark about lunch"
        assert score == pytest.approx(0.5 * similarity, abs=1e-3)


def test_a_memory_that_changes_scope_leaves_its_old_neighbours(hybrid: MemoryService) -> None:
    first = hybrid.add(CreateMemory(content="Dan: the platypus swam", path="chat/a", thread="t", agent="dan")).unwrap()
    hybrid.add(CreateMemory(content="Carol: lunch?", path="chat/b", thread="t", agent="dan")).unwrap()
    assert [c for c, _, _ in ranking(hybrid, "platypus", mode="keyword")] == ["Dan: the platypus swam", "Carol: lunch?"]
    hybrid.update(UpdateMemory(ref="chat/b", agent="carol")).unwrap()
    assert [c for c, _, _ in ranking(hybrid, "platypus", mode="keyword")] == [first.memory.content]
    assert hybrid.keywords is not None
    assert hybrid.keywords.neighbours("default", [first.memory.id]).unwrap() == {first.memory.id: (None, None)}


def test_reindex_keeps_a_batch_of_turns_in_its_order(hybrid: MemoryService) -> None:
    """One batch shares its created_at; reindex rebuilds each thread in the order it was saved, not by id."""
    turns = [f"turn {n} of the chat" for n in range(12)]
    made = hybrid.create_many([CreateMemory(content=t, thread="chat") for t in turns]).unwrap()
    hybrid.create_many([CreateMemory(content=f"fact {n}") for n in range(5)]).unwrap()
    ids = [view.memory.id for view in made]
    assert hybrid.keywords is not None
    before = hybrid.keywords.neighbours("default", ids).unwrap()
    assert before[ids[3]] == (ids[2], ids[4])
    hybrid.reindex().unwrap()
    assert hybrid.keywords.neighbours("default", ids).unwrap() == before


def test_an_import_that_changes_a_memorys_scope_moves_it_out_of_its_thread(hybrid: MemoryService) -> None:
    made = hybrid.create_many(
        [CreateMemory(content=t, thread="t", agent="dan") for t in ("Dan: the platypus swam", "Dan: lunch?")]
    ).unwrap()
    first, second = (view.memory for view in made)
    assert hybrid.keywords is not None
    assert hybrid.keywords.neighbours("default", [first.id]).unwrap() == {first.id: (None, second.id)}
    hybrid.import_memories([evolve(second, agent="carol")]).unwrap()
    assert hybrid.keywords.neighbours("default", [first.id]).unwrap() == {first.id: (None, None)}
    assert [c for c, _, _ in ranking(hybrid, "platypus", mode="keyword", agent="carol")] == []


VIOLIN = [
    "Calvin's instrument is the violin",
    "Calvin bought a new violin bow",
    "Calvin's violin teacher is strict",
    "Calvin joined an orchestra with his violin",
    "Calvin tunes the violin daily",
    "Weekly violin lessons happen in Tokyo",  # the answer that never says "Calvin" nor "instrument"
    "Dana grows tomatoes on her balcony",
    "Dana adopted a grey cat",
    "Dana runs a bakery downtown",
    "Dana's sister lives in Lisbon",
    "Dana collects old maps",
]
INSTRUMENT = "Which instrument does Calvin play?"


def test_independent_memories_rank_a_deep_page_as_the_first_page(hybrid: MemoryService) -> None:
    """Memories saved without a thread: the first 10 of a 100-deep ranking are the first page."""
    animals = ["cat", "dog", "owl", "fox", "elk", "yak", "emu", "bee"]
    facts = [f"Dana's {animals[n % 8]} number {n} likes the {animals[(n * 3) % 8]} park {n % 7}" for n in range(160)]
    hybrid.create_many([CreateMemory(content=fact) for fact in [*facts, *VIOLIN]]).unwrap()
    for query in (INSTRUMENT, "Which park does Dana's cat like?", "owl number"):
        deep = ranking(hybrid, query, limit=100)
        assert ranking(hybrid, query, limit=10) == deep[:10]
        assert ranking(hybrid, query, limit=10, offset=10) == deep[10:20]


def test_a_filtered_search_ranks_a_deep_page_as_the_first_page(hybrid: MemoryService) -> None:
    """However deep a page ranks, the keyword side reads the same hits: here the 810 best keyword hits fail
    the tag filter, more than a first page asks the index for (DEPTH * FILTERED_REACH), and a deep page
    must not find the project's own hits behind them when the first page cannot."""
    noise = [CreateMemory(content=f"comet orbit log {i}", tags=["sky"]) for i in range(810)]
    animals = ["cat", "dog", "owl", "fox", "elk", "yak"]
    own = [f"the {animals[i % 6]} watched a comet from hill {i}" for i in range(5)]
    own += [f"the {animals[i % 6]} slept under tree {i}" for i in range(25)]
    hybrid.create_many([*noise, *(CreateMemory(content=text, tags=["ground"]) for text in own)]).unwrap()
    deep = ranking(hybrid, "comet orbit", tags=["ground"], limit=100)
    assert ranking(hybrid, "comet orbit", tags=["ground"], limit=10) == deep[:10]
    assert ranking(hybrid, "comet orbit", tags=["ground"], limit=10, offset=10) == deep[10:20]
