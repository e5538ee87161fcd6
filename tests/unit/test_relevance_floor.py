"""The relevance floor (issue 28) and the model's relevance rule (issue 40): a search returns nothing when nothing
stored is related to the query, only the related hits otherwise, and the scope's memories for a broad question."""

from pathlib import Path

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import InMemoryCatalog, InMemoryKeywordIndex, TableEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.context import SearchPolicy
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import Vector
from agent_memory.domain.search.hybrid import MIN_SIMILARITY
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule, is_broad
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

# what each text means, as a unit vector: the first two are close (cosine 0.8), the third is unrelated to both
MEANINGS: dict[str, Vector] = {
    "The user drinks green tea every morning": [1.0, 0.0, 0.0],
    "favourite hot beverage?": [0.8, 0.6, 0.0],
    "quantum chromodynamics lecture": [0.0, 0.0, 1.0],
    "morning star": [0.05, 0.0, 0.9987],  # shares a word with the memory, means something else
    "The printer is out of toner": [0.0, 0.0, -1.0],  # unrelated to the tea and the beverage (cosine 0)
    "The user once tried coffee": [0.6, -0.05, 0.7984],  # cosine 0.45 to the beverage question
    "what do you know about me?": [0.0, 1.0, 0.0],  # names no subject: cosine 0 to the tea, 0.6 to the beverage
    "what do you remember?": [0.0, 1.0, 0.0],  # names no subject, and nobody in particular
}
TEA = "The user drinks green tea every morning"


def tea_drinker(clock: FixedClock, policy: SearchPolicy) -> MemoryService:
    """A service over the meanings above holding one memory."""
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="meanings"),
        embedder=TableEmbedder(MEANINGS),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
        policy=policy,
    )
    service.create(CreateMemory(content="The user drinks green tea every morning")).unwrap()
    return service


@pytest.fixture
def floored(clock: FixedClock) -> MemoryService:
    return tea_drinker(clock, SearchPolicy(min_similarity=0.3))


def found(service: MemoryService, query: str, **options: object) -> list[str]:
    results = service.search(SearchMemories(query=query, **options)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_an_unrelated_query_finds_nothing_and_a_related_one_finds_the_memory(floored: MemoryService, mode: str) -> None:
    assert found(floored, "quantum chromodynamics lecture", mode=mode) == []
    assert found(floored, "favourite hot beverage?", mode=mode) == [TEA]


def test_a_shared_word_alone_is_not_related(floored: MemoryService) -> None:
    assert found(floored, "morning star") == []  # the word "morning", but a similarity of 0.05
    assert found(floored, "morning star", mode="keyword") == [TEA]  # words only: no floor


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_without_a_calibrated_rule_the_floor_empties_an_answer_but_never_thins_one(
    floored: MemoryService, mode: str
) -> None:
    """A model without a relevance rule (UNCALIBRATED): once one memory is related, the usual ranking stands, weaker
    hits stay behind it, on every page (decision 21 as it was)."""
    floored.create(CreateMemory(content="The printer is out of toner")).unwrap()
    assert found(floored, "favourite hot beverage?", mode=mode) == [TEA, "The printer is out of toner"]
    assert found(floored, "favourite hot beverage?", mode=mode, limit=1, offset=1) == ["The printer is out of toner"]
    assert found(floored, "quantum chromodynamics lecture", mode=mode) == []


def test_the_floor_is_lowered_or_switched_off_per_call(floored: MemoryService) -> None:
    assert found(floored, "quantum chromodynamics lecture", min_similarity=0.0) == [
        "The user drinks green tea every morning"
    ]
    assert found(floored, "favourite hot beverage?", min_similarity=0.9) == []


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_a_floor_out_of_range_is_invalid_input(floored: MemoryService, bad: float) -> None:
    failure = floored.search(SearchMemories(query="favourite hot beverage?", min_similarity=bad)).failure()
    assert failure.code is ErrorCode.INVALID_INPUT and "min-similarity" in failure.message


def test_a_service_built_by_hand_has_no_floor_its_embedder_was_not_calibrated_for(clock: FixedClock) -> None:
    service = tea_drinker(clock, SearchPolicy())
    assert found(service, "quantum chromodynamics lecture") == ["The user drinks green tea every morning"]


def test_the_settings_default_to_the_calibrated_floor_and_switch_it_off(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert load_settings({}, home).unwrap().min_similarity == MIN_SIMILARITY == 0.2
    assert load_settings({}, {**home, "MEMORY_MIN_SIMILARITY": "0"}).unwrap().min_similarity == 0.0
    assert load_settings({}, {**home, "MEMORY_MIN_SIMILARITY": "0.25"}).unwrap().min_similarity == 0.25
    assert "min_similarity" in str(load_settings({}, {**home, "MEMORY_MIN_SIMILARITY": "2"}).failure())


@pytest.mark.parametrize(("environment", "expected"), [({}, []), ({"MEMORY_MIN_SIMILARITY": "0"}, [TEA])])
def test_a_service_built_from_the_settings_has_the_floor_unless_it_is_switched_off(
    tmp_path: Path, clock: FixedClock, environment: dict[str, str], expected: list[str]
) -> None:
    settings = load_settings({"data_dir": str(tmp_path)}, {"HOME": str(tmp_path), **environment}).unwrap()
    service = build_service(
        settings,
        catalog=InMemoryCatalog(embedder_name="meanings"),
        embedder=TableEmbedder(MEANINGS),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
    ).unwrap()
    service.create(CreateMemory(content=TEA)).unwrap()
    assert found(service, "quantum chromodynamics lecture") == expected
    assert found(service, "favourite hot beverage?") == [TEA]


RULE = RelevanceRule(unrelated=0.1, keep=0.3, related=0.8)  # a model's numbers: relevance 0 at 0.1, 1 at 0.8


def ruled(clock: FixedClock, rule: RelevanceRule = RULE) -> MemoryService:
    service = tea_drinker(clock, SearchPolicy(min_similarity=0.2, relevance=rule))
    service.create(CreateMemory(content="The printer is out of toner")).unwrap()
    return service


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_the_rule_thins_an_answer_to_its_related_hits_on_every_page(clock: FixedClock, mode: str) -> None:
    service = ruled(clock)
    assert found(service, "favourite hot beverage?", mode=mode) == [TEA]  # the printer (cosine 0) is dropped
    assert found(service, "favourite hot beverage?", mode=mode, limit=1, offset=1) == []
    assert found(service, "quantum chromodynamics lecture", mode=mode) == []  # nothing reaches keep
    assert found(service, "favourite hot beverage?", mode=mode, min_similarity=0.0) == [
        TEA,
        "The printer is out of toner",
    ]  # a floor of 0 switches every judgement off


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_hit_far_under_the_best_leaves_the_answer_by_the_spread(clock: FixedClock, mode: str) -> None:
    service = ruled(clock, RelevanceRule(unrelated=0.1, keep=0.3, related=0.8, spread=0.2))
    service.create(CreateMemory(content="The user once tried coffee")).unwrap()  # 0.45: over keep, 0.35 under 0.8
    assert found(service, "favourite hot beverage?", mode=mode) == [TEA]
    wider = ruled(clock, RULE)
    wider.create(CreateMemory(content="The user once tried coffee")).unwrap()
    assert found(wider, "favourite hot beverage?", mode=mode) == [TEA, "The user once tried coffee"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_each_hit_carries_its_relevance_on_the_models_scale(clock: FixedClock, mode: str) -> None:
    service = ruled(clock)
    query = "The user drinks green tea every morning" if mode == "keyword" else "favourite hot beverage?"
    hits = service.search(SearchMemories(query=query, mode=mode, min_similarity=0.0)).unwrap().results
    assert hits
    for hit in hits:
        assert 0.0 <= hit.relevance <= 1.0
        assert hit.relevance == RULE.relevance(hit.similarity)
    by_content = {hit.memory.content: hit.relevance for hit in hits}
    if mode != "keyword":
        assert by_content == {TEA: 1.0, "The printer is out of toner": 0.0}  # 0.8 → 1, 0 → 0 (clamped)
    assert RULE.relevance(0.45) == 0.5 and UNCALIBRATED.relevance(0.45) == 0.45  # uncalibrated: the similarity


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_broad_question_answers_the_scopes_memories_by_what_matters(clock: FixedClock, mode: str) -> None:
    service = tea_drinker(clock, SearchPolicy(min_similarity=0.2, relevance=RULE))  # the tea first, then later:
    clock.advance(hours=1)
    service.create(CreateMemory(content="The printer is out of toner")).unwrap()
    answer = service.search(SearchMemories(query="what do you remember?", mode=mode)).unwrap()
    assert answer.broad  # nothing is related (cosine 0 to both): the scope's memories, equally confident, latest first
    assert [hit.memory.content for hit in answer.results] == ["The printer is out of toner", TEA]
    assert [hit.relevance for hit in answer.results] == [0.0, 0.0]
    about_me = service.search(SearchMemories(query="what do you know about me?", mode=mode)).unwrap()
    assert about_me.broad  # about the one asking: the memory about the user first (issue 48)
    assert [hit.memory.content for hit in about_me.results] == [TEA, "The printer is out of toner"]
    unrelated = service.search(SearchMemories(query="quantum chromodynamics lecture", mode=mode)).unwrap()
    assert not unrelated.broad and unrelated.results == ()
    related = service.search(SearchMemories(query="favourite hot beverage?", mode=mode)).unwrap()
    assert not related.broad


@pytest.mark.parametrize(
    ("question", "broad"),
    [
        ("what do you know about me?", True),
        ("tell me everything you remember", True),
        ("give me a summary of everything", True),
        ("what have we talked about so far", True),
        ("anything I should know before my shift?", True),
        ("how tall am I", False),
        ("anything about the deploy?", False),
        ("Sofia", False),
        ("do I have a cat", False),
    ],
)
def test_a_question_is_broad_when_it_names_no_subject(question: str, broad: bool) -> None:
    assert is_broad(question) is broad


@pytest.mark.parametrize("bad", [{"unrelated": -0.1}, {"keep": 1.5}, {"spread": 2.0}])
def test_a_rule_holds_similarities_between_0_and_1(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        RelevanceRule(**{"unrelated": 0.1, "keep": 0.3, "related": 0.8, **bad})  # type: ignore[arg-type]


def test_the_line_a_hit_needs_is_keep_or_the_spread_under_the_best_and_nothing_uncalibrated() -> None:
    spread = RelevanceRule(unrelated=0.1, keep=0.25, related=0.6, spread=0.3)
    assert spread.line(0.9) == pytest.approx(0.6) and spread.line(0.4) == 0.25
    assert RULE.line(0.9) == 0.3  # no spread: keep alone
    assert UNCALIBRATED.line(0.9) == float("-inf")  # a model without a rule thins no answer
