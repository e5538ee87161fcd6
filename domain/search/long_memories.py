"""Search's view of a store whose long memories have later parts: a hit on any part finds the memory, shows the part."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import evolve, frozen
from returns.result import Result, Success

from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import MatchedPart, Memory, ScoredMemory
from agent_memory.domain.ports import Embedder, PartVectors, Vector, VectorStore

PART_REACH = 4  # memories with parts asked per memory the page holds


@frozen
class WithParts:
    """A VectorStore for one search whose dense similarity of a memory is the best of its own vector (its first
    window) and its later parts' (PartVectors); every other call goes to the store as it is.

    `query` adds the memories whose parts are nearest, each once, kept only when `passing` keeps their id, read and
    checked against the filter as keyword-only hits are (so namespaces, scopes, tags, expiry and soft deletion hold
    for parts too); `similarities` (keyword-only hits, thread neighbours) takes the same maximum. A store without
    long memories costs one lookup of its parts per call, which finds none.
    """

    store: VectorStore
    parts: PartVectors
    name: str

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        return self.store.query(embedding, where, limit).bind(
            # deeper than the page: another namespace's long memories must not crowd this one's out (`passing` drops them)
            lambda pairs: self.parts.nearest(self.name, embedding, limit * PART_REACH).bind(
                lambda hits: self._merged(embedding, where, limit, pairs, hits)
            )
        )

    def _merged(
        self,
        embedding: Vector,
        where: MemoryFilter,
        limit: int,
        pairs: list[tuple[Memory, float]],
        hits: list[tuple[str, float]],
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        if not hits:
            return Success(pairs)
        part = dict(hits)
        # a page the store filled: a part no nearer than its last memory cannot enter it
        bar = pairs[-1][1] if len(pairs) >= limit else -2.0
        own = {m.id for m, _ in pairs}
        new = [i for i, score in hits if i not in own and score > bar]
        scored = [(m, max(s, part.get(m.id, s))) for m, s in pairs]
        if not new:
            return Success(_best_first(scored, limit))
        return self.store.passing(new, where).bind(
            lambda passed: self._added(embedding, where, limit, scored, part, [i for i in new if i in passed])
        )

    def _added(
        self,
        embedding: Vector,
        where: MemoryFilter,
        limit: int,
        scored: list[tuple[Memory, float]],
        part: dict[str, float],
        ids: list[str],
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        if not ids:
            return Success(_best_first(scored, limit))
        return Result.do(
            _best_first(
                [
                    *scored,
                    *((m, max(part[m.id], own.get(m.id, -1.0))) for m in memories if m.id in part and where.matches(m)),
                ],
                limit,
            )
            for memories in self.store.get(ids)
            for own in self.store.similarities(embedding, ids)
        )

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        return self.store.similarities(embedding, ids).bind(
            lambda own: self.parts.similarities(self.name, embedding, ids).map(
                lambda part: own | {i: max(s, own.get(i, s)) for i, s in part.items() if i in own}
            )
        )

    # --- the rest of the store, as it is ------------------------------------------------------------------

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        return self.store.add(memories, embeddings)

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        return self.store.get(ids)

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        return self.store.scan(where)

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        return self.store.update_metadata(memories)

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        return self.store.replace(memories, embeddings)

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        return self.store.remove(ids)

    def count(self) -> Result[int, DomainError]:
        return self.store.count()

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self.store.embedding_model()

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return self.store.problems()

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return self.store.advisories()

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        return self.store.passing(ids, where)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        return self.store.rebuild(memories, embeddings, embedding_model)


def _best_first(pairs: list[tuple[Memory, float]], limit: int) -> list[tuple[Memory, float]]:
    return sorted(pairs, key=lambda pair: -pair[1])[:limit]


def shown_parts(
    parts: PartVectors, embedder: Embedder, store: str, embedding: Vector, hits: Sequence[ScoredMemory]
) -> Result[tuple[ScoredMemory, ...], DomainError]:
    """The hits, each one that a part answered (`answering_spans`) showing that part (ScoredMemory.part): its text
    and where it lies in the content."""
    similarity = {hit.memory.id: hit.similarity for hit in hits}
    return answering_spans(parts, embedder, store, embedding, [hit.memory for hit in hits], similarity).map(
        lambda spans: tuple(
            evolve(hit, part=MatchedPart.of(hit.memory.content, *spans[hit.memory.id]))
            if hit.memory.id in spans
            else hit
            for hit in hits
        )
    )


def answering_spans(
    parts: PartVectors,
    embedder: Embedder,
    store: str,
    embedding: Vector,
    memories: Sequence[Memory],
    similarity: Mapping[str, float],
) -> Result[dict[str, tuple[int, int]], DomainError]:
    """Per memory whose similarity is that of one of its parts (its nearest part is as near, to 4 places, as
    `similarity` says: the part, not the memory's own vector, answered), where that part lies in its content
    (Embedder.part_spans). One lookup of the memories' parts by id (a store without long memories finds none); only
    the memories a part answered are cut again. A part the spans do not place (parts cut from another text, before a
    reindex) is left out."""
    if not memories:
        return Success({})
    return parts.nearest_parts(store, embedding, [m.id for m in memories]).bind(
        lambda nearest: _placed(embedder, [m for m in memories if m.id in nearest], nearest, similarity)
    )


def _placed(
    embedder: Embedder,
    longs: list[Memory],
    nearest: dict[str, tuple[int, float]],
    similarity: Mapping[str, float],
) -> Result[dict[str, tuple[int, int]], DomainError]:
    answered = [
        m
        for m in longs
        if m.id in nearest and m.id in similarity and round(nearest[m.id][1], 4) >= round(similarity[m.id], 4)
    ]
    if not answered:
        return Success({})

    def placed(spans: list[list[tuple[int, int]]]) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        for memory, cut in zip(answered, spans, strict=True):
            number = nearest[memory.id][0]
            if 1 <= number <= len(cut):
                found[memory.id] = cut[number - 1]
        return found

    return embedder.part_spans([m.content for m in answered]).map(placed)
