"""What a search works from: its plan (mode, page, filters, relevance judging) and the sides a ranking is computed
from (the dense hits, the keyword hits that pass the filters, their records and thread neighbours)."""

from __future__ import annotations

import math
from collections.abc import Callable

from attrs import frozen

from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, ScoredMemory
from agent_memory.domain.search.about_user import asks_about_user
from agent_memory.domain.search.hybrid import SearchMode
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule, coverage, is_broad, subject_words
from agent_memory.domain.thread_keys import KeywordScope, keyword_scope, thread_of

Links = dict[str, tuple[str | None, str | None]]  # a memory's previous and next neighbour in its thread


@frozen
class Sides:
    """What a ranking is computed from: the candidates' records, their cosines, keyword scores and neighbours."""

    memories: dict[str, Memory]
    candidates: list[str]
    similarity: dict[str, float]
    keyword_side: KeywordSide
    links: Links
    pool: list[str]  # the first DEPTH of each side: what the learnt second stage reorders

    @property
    def keyword(self) -> dict[str, float]:
        """bm25 / the best, per keyword hit that passed the filters."""
        return self.keyword_side.scores


@frozen
class Round:
    """One round of the blend: the dense side's hits, the keyword side's scores and their records."""

    dense: list[tuple[Memory, float]]
    keyword: KeywordSide


@frozen
class Reach:
    """How deep the keyword index is asked, in hits per hit needed, the hits' records already read, and the
    hits the store already said the filter rejects (never read)."""

    ratio: float
    read: tuple[Memory, ...]
    rejected: frozenset[str] = frozenset()


def sifts(where: MemoryFilter, reach: Reach) -> bool:
    """Whether the keyword side asks the store which hits pass before reading them: under a tag or path
    filter (the keyword index narrows by namespace and scope labels only, so most hits may fail), or once an
    earlier ask showed that many fail (deleted, expired); otherwise nearly every hit passes and one read of
    them all is cheaper than a check and then a read."""
    return bool(where.tags) or where.path is not None or where.path_prefix is not None or reach.ratio > 1.0


@frozen
class KeywordSide:
    """The keyword hits that pass the search's filters, scored bm25 / the best of them, and their records."""

    scores: dict[str, float]
    memories: list[Memory]
    pooled: list[str]  # the hits the pool takes: the first DEPTH among the first DEPTH * FILTERED_REACH hits


@frozen(kw_only=True)
class SearchPlan:
    """What a search does, from its checked command: the mode, the page, the filters and how hits are judged."""

    mode: SearchMode
    query: str
    store: str
    limit: int
    floor: float
    where: MemoryFilter
    relevance: float = 0.0  # the relevance floor: the similarity the best candidate needs (0: off, no judging)
    rule: RelevanceRule = UNCALIBRATED  # the model's own (SearchPolicy.relevance)
    rerank: bool = True  # hybrid and keyword rankings go through the learnt second stage (SearchPolicy.rerank)

    @property
    def judged(self) -> bool:
        """Whether hits are judged for relevance at all: a relevance floor of 0 turns it off (every candidate)."""
        return self.relevance > 0.0

    @property
    def broad(self) -> bool:
        """Whether the question names no subject of its own (domain.search.relevance.is_broad)."""
        return is_broad(self.query)

    @property
    def about_user(self) -> bool:
        """Whether a broad question asks about the one asking ("what do you know about me?"), judging on (issue 48):
        its answer is the memories about the user first, not whatever clears the relevance line."""
        return self.judged and self.broad and asks_about_user(self.query)

    def related(self, best: float) -> bool:
        """Whether a search has anything related to the query: the best candidate's similarity (or a thread
        neighbour's) reaches the floor and the model's keep line (decision 24)."""
        return not self.judged or best >= max(self.relevance, self.rule.floor, self.rule.keep)

    def line(self, best: float) -> float:
        """The similarity each hit (or its thread neighbour) needs when the best has `best` (0: judging off)."""
        return self.rule.line(best) if self.judged else -math.inf

    def related_hits(
        self, hits: list[ScoredMemory], similarity: Callable[[ScoredMemory], float]
    ) -> list[ScoredMemory] | None:
        """The hits related to the query, in their order (all of them when judging is off), or None when none is:
        the best similarity under the floor, or no hit with the evidence the model's rule asks for."""
        if not hits or not self.judged:
            return hits
        if not self.related(max(similarity(hit) for hit in hits)):
            return None
        asked = subject_words(self.query)
        return self.rule.related_hits(hits, similarity, lambda hit: coverage(asked, hit.memory.content))

    @property
    def thread_prefix(self) -> str | None:
        """The keyword side's restriction to the filter's namespace (None: the whole store)."""
        return thread_of(self.where.namespace) if self.where.namespace else None

    @property
    def keyword_scope(self) -> KeywordScope | None:
        """The keyword side's restriction to the filter's scope labels (None: any scope)."""
        return keyword_scope(self.where)


def parse_mode(raw: str) -> SearchMode:
    """The search mode a caller named; InvalidValue naming the modes otherwise."""
    try:
        return SearchMode(str(raw).strip().lower())
    except ValueError:
        names = ", ".join(m.value for m in SearchMode)
        raise InvalidValue(f"Unknown search mode {raw!r}: use one of {names}.") from None
