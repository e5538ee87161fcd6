"""The search handler: a plan from the command, then semantic fetching or the hybrid and keyword blend."""

from __future__ import annotations

import math
from collections.abc import Callable

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.commands import SearchMemories
from agent_memory.domain.context import Context, optional_category
from agent_memory.domain.decay import oldest_anchor_for
from agent_memory.domain.errors import DomainError, invalid_input
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, ScoredMemory, check_store_name
from agent_memory.domain.paging import page_problem
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.ports import Vector, VectorStore
from agent_memory.domain.results import validated
from agent_memory.domain.search.about_user import about_user, user_names
from agent_memory.domain.search.hybrid import DEPTH, SearchMode, fuse
from agent_memory.domain.search.long_memories import WithParts, shown_parts
from agent_memory.domain.search.reranking import Candidates, rerank
from agent_memory.domain.search.search_plan import (
    KeywordSide,
    Links,
    Reach,
    Round,
    SearchPlan,
    Sides,
    parse_mode,
    sifts,
)
from agent_memory.domain.tenancy import Guard
from agent_memory.domain.views import SearchResults

MAX_SEARCH_LIMIT = 1000  # the deepest a search ranks: limit + offset of one page
FILTERED_REACH = 16  # the keyword index is asked for up to DEPTH * FILTERED_REACH hits when filters reject hits


def _page_problem(limit: int, offset: int) -> str | None:
    """What is wrong with a search page's limit and offset, or None (limit + offset is how deep it ranks)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        return f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit!r}."
    problem = page_problem(limit, offset, MAX_SEARCH_LIMIT)
    if problem is None and limit + offset > MAX_SEARCH_LIMIT:
        problem = f"limit + offset must be at most {MAX_SEARCH_LIMIT}, got {limit + offset}: narrow the search."
    return problem


def search_memories(ctx: Context, command: SearchMemories) -> Result[SearchResults, DomainError]:
    """Search under the filters: hybrid (default), semantic or keyword; hits offset … offset + limit of the
    ranking (`limit` of them whenever that many qualify), and whether more qualify after them."""
    return Searching(ctx).search(command)


@frozen
class Searching:
    """search: hybrid (default), semantic or keyword, under the command's filters and confidence floor."""

    ctx: Context

    def search(self, command: SearchMemories) -> Result[SearchResults, DomainError]:
        """Search under the filters: hybrid (default), semantic or keyword; hits offset … offset + limit of the
        ranking (`limit` of them whenever that many qualify), and whether more qualify after them.

        The ranking is computed for offset + limit + 1 hits (at most MAX_SEARCH_LIMIT), so a page is the
        same slice of the same ranking whatever page was asked before it."""
        limit = self.ctx.policy.default_limit if command.limit is None else command.limit
        problem = _page_problem(limit, command.offset)
        if problem is not None:
            return Failure(invalid_input(problem))
        window = limit + command.offset
        ranked = evolve(command, limit=min(window + 1, MAX_SEARCH_LIMIT))

        def page(found: SearchResults) -> SearchResults:
            return SearchResults(
                found.results[command.offset : window], len(found.results) > window, limit=limit, broad=found.broad
            )

        return (
            self.ctx.guard(command.namespace)
            .bind(lambda guard: self._plan(ranked, guard))
            .bind(lambda plan: self._run(plan, page))
        )

    def _plan(self, command: SearchMemories, guard: Guard) -> Result[SearchPlan, DomainError]:
        if not isinstance(command.query, str) or not command.query.strip():
            return Failure(invalid_input("The search query is empty: say what to look for."))
        limit = self.ctx.policy.default_limit if command.limit is None else command.limit
        floor = self.ctx.policy.min_confidence if command.min_confidence is None else command.min_confidence
        if not 0.0 <= floor <= 1.0:
            return Failure(invalid_input(f"min-confidence must be between 0 and 1, got {floor}."))
        relevance = self.ctx.policy.min_similarity if command.min_similarity is None else command.min_similarity
        if not 0.0 <= relevance <= 1.0:
            return Failure(invalid_input(f"min-similarity must be between 0 and 1, got {relevance}."))
        return optional_category(command.path_prefix).bind(
            lambda prefix: validated(
                lambda: evolve(
                    self._planned(command, guard, limit, floor, prefix),
                    relevance=relevance,
                    rule=self.ctx.policy.relevance,
                    rerank=self.ctx.policy.rerank,
                )
            )
        )

    def _planned(
        self, command: SearchMemories, guard: Guard, limit: int, floor: float, prefix: CategoryPath | None
    ) -> SearchPlan:
        """The plan of a checked command; raises InvalidValue for a bad mode or store name."""
        now = self.ctx.clock.now()
        return SearchPlan(
            mode=parse_mode(command.mode),
            query=command.query,
            store=check_store_name(command.store or self.ctx.policy.default_store),
            limit=limit,
            floor=floor,
            where=MemoryFilter(
                namespace=guard,
                agent=command.agent,
                personality=command.personality,
                project=command.project,
                type=command.type,
                global_=command.global_,
                tags=tuple(command.tags),
                path_prefix=prefix,
                alive_at=None if command.include_expired else now,
                oldest_anchor=oldest_anchor_for(floor, now, self.ctx.policy.decay_window_hours),
            ),
        )

    def _run(
        self, plan: SearchPlan, page: Callable[[SearchResults], SearchResults]
    ) -> Result[SearchResults, DomainError]:
        """The page of the ranking, its hits that a long memory's part answered showing that part."""

        def ranked(store: VectorStore, vector: Vector) -> Result[SearchResults, DomainError]:
            if plan.mode is SearchMode.SEMANTIC or self.ctx.keywords is None:
                found = self._fetch(store, vector, plan, max(plan.limit * 2, 20))
            else:
                found = self._blend(store, vector, plan, max(plan.limit, DEPTH))
            return found.map(page).bind(lambda shown: self._parts_shown(plan, vector, shown))

        parts = self.ctx.parts
        return (
            self.ctx.open_to_read(plan.store)
            .bind(self.ctx.check_model)
            .map(lambda store: store if parts is None else WithParts(store, parts, plan.store))
            .bind(lambda store: self.ctx.embedder.embed_query(plan.query).bind(lambda vector: ranked(store, vector)))
        )

    def _parts_shown(
        self, plan: SearchPlan, vector: Vector, found: SearchResults
    ) -> Result[SearchResults, DomainError]:
        """Each hit whose similarity is one of its parts' shows that part (domain.search.long_memories.shown_parts);
        not in a keyword search (its words may lie anywhere in the text) nor a broad answer (not ranked by meaning)."""
        parts = self.ctx.parts
        if parts is None or plan.mode is SearchMode.KEYWORD or found.broad or not found.results:
            return Success(found)
        return shown_parts(parts, self.ctx.embedder, plan.store, vector, found.results).map(
            lambda hits: evolve(found, results=hits)
        )

    def _fetch(
        self, store: VectorStore, vector: Vector, plan: SearchPlan, want: int
    ) -> Result[SearchResults, DomainError]:
        """Semantic: the store's nearest memories, asking for more until enough pass the confidence floor."""

        def qualify(pairs: list[tuple[Memory, float]]) -> Result[SearchResults, DomainError]:
            qualified = [
                self._hit(plan, memory, similarity, similarity)
                for memory, similarity in pairs
                if self.ctx.confidence_now(memory) >= plan.floor
            ]
            # nearest first: when the nearest that qualifies is unrelated, so is every memory deeper
            related = None if plan.about_user else plan.related_hits(qualified, lambda hit: hit.similarity)
            if related is None:
                return Success(self._broad(plan, qualified))
            line = plan.line(qualified[0].similarity) if qualified else -math.inf
            thinned = bool(qualified) and qualified[-1].similarity < line  # the rest of the store is further still
            if thinned or len(qualified) >= plan.limit or len(pairs) < want:
                return Success(SearchResults(tuple(related[: plan.limit]), limit=plan.limit))
            return self._fetch(store, vector, plan, want * 4)

        return store.query(vector, plan.where, want).bind(qualify)

    def _blend(
        self, store: VectorStore, vector: Vector, plan: SearchPlan, depth: int
    ) -> Result[SearchResults, DomainError]:
        """Hybrid and keyword: candidates from both sides, filtered, then ranked (domain.search.hybrid)."""
        keywords = self.ctx.keywords
        assert keywords is not None  # _run routes here only with a keyword index
        dense: Result[list[tuple[Memory, float]], DomainError] = (
            store.query(vector, plan.where, depth) if plan.mode is SearchMode.HYBRID else Success([])
        )
        gathered = Result.do(  # the dense side's records are read already: the keyword side does not read them again
            Round(pairs, keyword)
            for pairs in dense
            for keyword in self._keyword_side(store, plan, depth, Reach(1.0, tuple(m for m, _ in pairs)))
        )
        return gathered.bind(lambda candidates: self._rank(store, vector, plan, depth, candidates))

    def _keyword_side(
        self, store: VectorStore, plan: SearchPlan, depth: int, reach: Reach
    ) -> Result[KeywordSide, DomainError]:
        """The first `depth` keyword hits for the query that pass every filter and the confidence floor, best
        first, scored bm25 / the best of them: a scope filter or deleted memories never thin the keyword
        side's share of the pool, and a filtered search scores as if the store held only what passes.

        The index narrows by namespace and scope labels (agent, project, …) at most, so while hits that fail
        the other filters (tags, paths, deleted, expired, the floor) crowd out the rest it is asked again, as
        deep as the share that passed says it needs: at least four times deeper, at most DEPTH *
        FILTERED_REACH hits (or `depth`, when a page ranks deeper), the same bound for every page, so a deep
        page reads the same hits as the first. `reach` says how deep to ask first (hits asked per hit needed)
        and which records were already read."""
        keywords = self.ctx.keywords
        assert keywords is not None  # _blend runs only with a keyword index
        deepest = max(depth, DEPTH * FILTERED_REACH)  # the same for every page up to that deep: one ranking
        asked = min(deepest, math.ceil(depth * reach.ratio))

        def kept(hits: list[tuple[str, float]]) -> Result[KeywordSide, DomainError]:
            known = {m.id for m in reach.read} | reach.rejected
            unread = [i for i, _ in hits if i not in known]
            if not sifts(plan.where, reach):  # every hit likely passes: one read, no store-side check first
                return store.get(unread).bind(lambda memories: enough(hits, (*reach.read, *memories), reach.rejected))
            return store.passing(unread, plan.where).bind(
                lambda passed: store.get([i for i in unread if i in passed]).bind(
                    lambda memories: enough(
                        hits, (*reach.read, *memories), reach.rejected | {i for i in unread if i not in passed}
                    )
                )
            )

        def enough(
            hits: list[tuple[str, float]], read: tuple[Memory, ...], rejected: frozenset[str]
        ) -> Result[KeywordSide, DomainError]:
            hit = dict(hits)
            passing = {
                m.id: m
                for m in read
                if m.id in hit and plan.where.matches(m) and self.ctx.confidence_now(m) >= plan.floor
            }
            if len(passing) < depth and len(hits) == asked and asked < deepest:
                needed = math.ceil(depth * asked / max(len(passing), 1) * 1.25)
                deeper = Reach(min(deepest, max(asked * 4, needed)) / depth, read, rejected)
                return self._keyword_side(store, plan, depth, deeper)
            ordered = [(i, score) for i, score in hits if i in passing][:depth]
            best = max((score for _, score in ordered), default=1.0) or 1.0
            window = {i for i, _ in hits[: DEPTH * FILTERED_REACH]}  # what any page's search reads
            return Success(
                KeywordSide(
                    {i: score / best for i, score in ordered},
                    [passing[i] for i, _ in ordered],
                    [i for i, _ in ordered if i in window][:DEPTH],
                )
            )

        return keywords.search(
            plan.store, plan.query, asked, thread_prefix=plan.thread_prefix, scope=plan.keyword_scope
        ).bind(kept)

    def _rank(
        self, store: VectorStore, vector: Vector, plan: SearchPlan, depth: int, found: Round
    ) -> Result[SearchResults, DomainError]:
        keywords = self.ctx.keywords
        assert keywords is not None
        memories = {m.id: m for m in found.keyword.memories} | {m.id: m for m, _ in found.dense}
        candidates = [i for i, m in memories.items() if self.ctx.confidence_now(m) >= plan.floor]
        similarity = {m.id: s for m, s in found.dense}
        kept = set(candidates)  # the first DEPTH of each side, whatever the depth: every page reads the same pool
        pool = [i for i in dict.fromkeys([*(m.id for m, _ in found.dense[:DEPTH]), *found.keyword.pooled]) if i in kept]

        def score(links: Links) -> Result[SearchResults, DomainError]:
            wanted = {n for i in candidates for n in links.get(i, (None, None)) if n} | set(candidates)
            return store.similarities(vector, [i for i in wanted if i not in similarity]).map(
                lambda scored: self._ranked(
                    plan,
                    Sides(memories, candidates, similarity | scored, found.keyword, links, pool),
                )
            )

        exhausted = len(found.dense) < depth and len(found.keyword.scores) < depth
        if len(candidates) < plan.limit and not exhausted:
            return self._blend(store, vector, plan, depth * 4)
        return keywords.neighbours(plan.store, candidates).bind(score)

    def _ranked(self, plan: SearchPlan, sides: Sides) -> SearchResults:
        """Keyword: by bm25. Hybrid: fused (domain.search.hybrid), then the learnt second stage. The pool does not
        depend on how deep the page ranks, so neither does any score."""
        if plan.mode is SearchMode.KEYWORD:
            ranking = sorted(((i, sides.keyword.get(i, 0.0)) for i in sides.candidates), key=lambda p: (-p[1], p[0]))
            return self._results(plan, sides, ranking)
        ranking = fuse(sides.candidates, sides.similarity, sides.keyword, sides.links)
        return self._results(plan, sides, _second_stage(plan, sides, ranking))

    def _results(self, plan: SearchPlan, sides: Sides, ranking: list[tuple[str, float]]) -> SearchResults:
        """The first `limit` of the ranking's related hits (decision 24): a hit is related when its own similarity
        or a thread neighbour's (a reply is as related as what it answers) reaches the model's line
        (`RelevanceRule.line`, from the best of them) with the evidence the model asks for
        (`RelevanceRule.related_hits`); none is when the best is under the relevance floor or no hit has words or
        similarity enough (`SearchPlan.related_hits`). The candidates and their similarities do not depend on the
        page, so every page of one search keeps the same hits. A keyword search is words only: every hit shares a
        word with the query and stays. A broad question with nothing related answers the scope's memories
        (`_broad`)."""
        hits = [self._hit(plan, sides.memories[i], sides.similarity.get(i, 0.0), score) for i, score in ranking]
        if plan.mode is SearchMode.KEYWORD or not plan.judged:
            return SearchResults(tuple(hits[: plan.limit]), limit=plan.limit)
        near = {
            i: max(sides.similarity.get(n, 0.0) for n in (i, *sides.links.get(i, (None, None))) if n)
            for i, _ in ranking
        }
        related = None if plan.about_user else plan.related_hits(hits, lambda hit: near[hit.memory.id])
        if related is None:
            return self._broad(plan, hits)
        return SearchResults(tuple(related[: plan.limit]), limit=plan.limit)

    def _hit(self, plan: SearchPlan, memory: Memory, similarity: float, score: float) -> ScoredMemory:
        """One hit with its similarity, confidence now, rank score and relevance (the model's reading of it)."""
        relevance = plan.rule.relevance(similarity)
        return ScoredMemory(memory, round(similarity, 4), self.ctx.confidence_now(memory), round(score, 4), relevance)

    def _broad(self, plan: SearchPlan, hits: list[ScoredMemory]) -> SearchResults:
        """Nothing is related to the question: a broad one ("what do you know about me?") answers the candidates
        (the scope's memories nearest to it, every filter passed) ranked by what matters: confidence now (freshness,
        reinforcement), then the latest touched; any other question answers nothing. A broad question about the
        one asking ("me", "my", "the user": always answered here, its similarities say nothing) puts the memories
        about the user first (domain.search.about_user: a user type, or the user's words or names in the text)."""
        if not plan.broad or not hits:
            return SearchResults((), limit=plan.limit)

        def touched(hit: ScoredMemory) -> float:
            memory = hit.memory
            return max(memory.updated_at, memory.last_reinforced_at or memory.updated_at).timestamp()

        names = user_names(hit.memory.content for hit in hits) if plan.about_user else frozenset()

        def user_first(hit: ScoredMemory) -> int:
            return -about_user(hit.memory, names) if plan.about_user else 0

        ranked = sorted(hits, key=lambda hit: (user_first(hit), -hit.confidence, -touched(hit), hit.memory.id))
        return SearchResults(tuple(ranked[: plan.limit]), limit=plan.limit, broad=True)


def _second_stage(plan: SearchPlan, sides: Sides, first: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pool (the first DEPTH of each side) reordered by the learnt ranker (domain.search.reranking), the deeper
    candidates after it in the first stage's order. The ranker sees the keyword side only DEPTH deep, as
    the pool was drawn, so how deep a page ranks changes no score."""
    if not plan.rerank:
        return first
    pooled = set(sides.pool)
    shallow = {i: sides.keyword[i] for i in sides.keyword_side.pooled}
    head = rerank(
        Candidates(
            query=plan.query,
            first=fuse(sides.pool, sides.similarity, shallow, sides.links),
            texts={i: sides.memories[i].content for i in sides.pool},
            similarity=sides.similarity,
            keyword=shallow,
            links=sides.links,
        )
    )
    lowest = min((score for _, score in head), default=0.0)
    return head + [(i, min(score, lowest)) for i, score in first if i not in pooled]
