"""The evidence a hit needs to stay in an answer (issue 40): the question's subject words, or a similarity of its own,
or one close to the best hit's; an answer with no such hit is empty (a broad question's scope answer aside)."""

import attrs
import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import InMemoryCatalog, InMemoryKeywordIndex, TableEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.context import SearchPolicy
from agent_memory.domain.ports import Vector
from agent_memory.domain.search.relevance import RelevanceRule, coverage, subject_words
from agent_memory.domain.service import MemoryService

TEA = "The user drinks green tea every morning"
COFFEE = "The user once tried coffee"
TONER = "The printer is out of toner"
# what each text means, as a unit vector (cosines to the tea question: tea 0.6, coffee 0.3, toner 0; to the wifi
# question: coffee 0.35, tea 0, toner -0.4)
MEANINGS: dict[str, Vector] = {
    TEA: [1.0, 0.0, 0.0],
    COFFEE: [0.5, 0.0, 0.866],
    TONER: [0.0, 0.0, -1.0],
    "which tea does the user like?": [0.6, 0.8, 0.0],
    "what's the office wifi password?": [0.0, 0.9165, 0.4],
}
# relevance 0 at 0.1, 1 at 0.8; a hit needs 0.2 and to be within 0.5 of the best, and then half the question's
# subject words, or 0.5 on its own, or to be within 0.05 of the best
RULE = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.5, alone=0.5, cover=0.5, close=0.05)
WITHOUT_EVIDENCE = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.5)


def store(clock: FixedClock, rule: RelevanceRule) -> MemoryService:
    """A small store under a model with `rule`: the tea, the coffee and the toner."""
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="meanings"),
        embedder=TableEmbedder(MEANINGS),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
        policy=SearchPolicy(min_similarity=0.2, relevance=rule),
    )
    service.create_many([CreateMemory(content=text) for text in (TEA, COFFEE, TONER)]).unwrap()
    return service


def found(service: MemoryService, query: str, mode: str) -> list[str]:
    results = service.search(SearchMemories(query=query, mode=mode)).unwrap()
    assert not results.broad
    return [hit.memory.content for hit in results.results]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_an_answer_keeps_the_hit_with_the_questions_words_and_drops_one_with_neither_words_nor_similarity(
    clock: FixedClock, mode: str
) -> None:
    assert found(store(clock, RULE), "which tea does the user like?", mode) == [TEA]  # coffee: 0.3, no "tea"
    assert found(store(clock, WITHOUT_EVIDENCE), "which tea does the user like?", mode) == [TEA, COFFEE]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_question_nothing_answers_is_answered_empty_though_a_hit_clears_the_similarity_lines(
    clock: FixedClock, mode: str
) -> None:
    assert found(store(clock, RULE), "what's the office wifi password?", mode) == []  # coffee at 0.35, no word
    assert found(store(clock, WITHOUT_EVIDENCE), "what's the office wifi password?", mode) == [COFFEE]


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_hit_close_enough_needs_no_words(clock: FixedClock, mode: str) -> None:
    alone = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.5, alone=0.3, cover=0.5)
    assert found(store(clock, alone), "what's the office wifi password?", mode) == [COFFEE]  # 0.35 over 0.3
    assert found(store(clock, alone), "which tea does the user like?", mode) == [TEA, COFFEE]


def test_a_questions_subject_words_leave_out_stop_words_and_words_that_name_no_subject() -> None:
    assert subject_words("which tea does the user like?") == {"tea", "like"}
    assert subject_words("what do you know about me?") == frozenset()
    assert coverage(subject_words("which editor theme does the user like"), "User prefers dark themes") == 1 / 3
    assert coverage(subject_words("Adoption agencies"), "Caroline is adopting a child") == 0.5  # "adopti…" meets
    assert coverage(frozenset(), TEA) == 0.0


def test_a_rule_without_evidence_keeps_every_hit_over_its_lines() -> None:
    hits = [("a", 0.6), ("b", 0.3), ("c", 0.05)]
    kept = WITHOUT_EVIDENCE.related_hits(hits, lambda hit: hit[1], lambda hit: 0.0)
    assert kept == hits[:2]
    assert RULE.related_hits(hits, lambda hit: hit[1], lambda hit: 0.0) == [("a", 0.6)]  # the best, alone
    assert RULE.related_hits(hits[1:], lambda hit: hit[1], lambda hit: 0.0) is None  # no words, under alone


def test_gap_and_spared_spare_a_hit_the_spread_cut_and_nothing_else() -> None:
    """Issue 48: a hit more than `spread` under the best stays when the answer's similarities run down to it in
    steps of at most `gap`, or when it has `spared` of the question's subject words; never under `keep`."""
    hits = ["best", "a", "b", "c", "worded", "low"]
    near = {"best": 0.9, "a": 0.8, "b": 0.7, "c": 0.5, "worded": 0.26, "low": 0.15}
    words = {"worded": 1.0, "low": 1.0}
    spread = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.3)

    def kept(rule: RelevanceRule) -> list[str] | None:
        return rule.related_hits(hits, near.__getitem__, lambda hit: words.get(hit, 0.0))

    assert kept(spread) == ["best", "a", "b"]  # 0.6 is the line
    assert kept(attrs.evolve(spread, gap=0.1)) == ["best", "a", "b"]  # 0.7 → 0.5 is a step of 0.2: the run ends
    assert kept(attrs.evolve(spread, gap=0.2)) == ["best", "a", "b", "c"]  # then 0.5 → 0.26 is wider
    assert kept(attrs.evolve(spread, gap=0.25)) == ["best", "a", "b", "c", "worded"]  # 0.15 is under keep
    assert kept(attrs.evolve(spread, spared=1.0)) == ["best", "a", "b", "worded"]  # its words; "low" under keep
    assert kept(attrs.evolve(spread, spared=1.0, gap=0.01)) == ["best", "a", "b", "worded"]
    assert spread.run_line([0.9, 0.8]) == float("inf")  # no gap: nothing spared by a run
    no_spread = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, gap=0.01, spared=0.5)
    assert kept(no_spread) == ["best", "a", "b", "c", "worded"]  # nothing to spare: keep alone decides


def test_relative_spares_a_hit_within_a_multiple_of_the_answers_own_spread() -> None:
    """Issue 48: `relative` reads the cut on the answer's own spread (its best less the median similarity over
    `keep`): a hit more than `spread` under the best stays when it is within `relative` times that of the best."""
    hits = ["best", "a", "b", "c", "worded", "low"]
    near = {"best": 0.9, "a": 0.8, "b": 0.7, "c": 0.5, "worded": 0.26, "low": 0.15}
    spread = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.3)

    def kept(rule: RelevanceRule) -> list[str] | None:
        return rule.related_hits(hits, near.__getitem__, lambda hit: 0.0)

    assert spread.relative_line(list(near.values())) == float("inf")  # no relative: nothing spared this way
    assert attrs.evolve(spread, relative=2.0).relative_line(list(near.values())) == pytest.approx(0.5)  # 0.9 − 2 × 0.2
    assert kept(attrs.evolve(spread, relative=1.0)) == ["best", "a", "b"]  # 0.7: no wider than the spread cut
    assert kept(attrs.evolve(spread, relative=2.0)) == ["best", "a", "b", "c"]
    assert kept(attrs.evolve(spread, relative=3.5)) == ["best", "a", "b", "c", "worded"]  # "low" is under keep
    assert kept(attrs.evolve(spread, relative=10.0)) == ["best", "a", "b", "c", "worded"]  # keep still holds
    with pytest.raises(ValueError, match="relative"):
        attrs.evolve(spread, relative=0.0)


def test_exempt_keeps_a_hit_with_the_questions_words_under_every_line() -> None:
    """Issue 48: with `exempt`, a hit having that share of the question's subject words stays whatever its
    similarity (under `keep` and the spread cut both: its words are its evidence); one with fewer words does not."""
    hits = ["best", "a", "c", "worded", "low", "half"]
    near = {"best": 0.9, "a": 0.8, "c": 0.5, "worded": 0.26, "low": 0.08, "half": 0.05}
    words = {"worded": 1.0, "low": 1.0, "half": 0.5}
    spread = RelevanceRule(unrelated=0.1, keep=0.2, related=0.8, spread=0.3)

    def kept(rule: RelevanceRule) -> list[str] | None:
        return rule.related_hits(hits, near.__getitem__, lambda hit: words.get(hit, 0.0))

    assert kept(spread) == ["best", "a"]
    assert kept(attrs.evolve(spread, exempt=1.0)) == ["best", "a", "worded", "low"]
    assert kept(attrs.evolve(spread, exempt=0.5)) == ["best", "a", "worded", "low", "half"]
    assert kept(attrs.evolve(spread, spread=None, exempt=1.0)) == ["best", "a", "c", "worded", "low"]
    with pytest.raises(ValueError, match="between 0 and 1"):
        attrs.evolve(spread, exempt=1.5)
