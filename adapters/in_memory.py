"""In-memory implementations of the storage and embedding ports, for unit tests and embedding apps."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence

from attrs import define, field, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.batches import InProcessJournal
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.ports import KeywordEntry, Vector
from agent_memory.domain.thread_keys import THREAD_JOIN, KeywordScope, thread_in_scope


def _cosine(a: Vector, b: Vector) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


@define
class InMemoryVectorStore:
    """A VectorStore in a dict: brute-force cosine, the reference filter semantics."""

    model: str | None = None
    records: dict[str, tuple[Memory, tuple[float, ...]]] = field(factory=dict)

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        for memory, vector in zip(memories, embeddings, strict=True):
            self.records[memory.id] = (memory, tuple(vector))
        return Success(None)

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        return Success([self.records[i][0] for i in ids if i in self.records])

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        return Success({i for i in ids if i in self.records and where.matches(self.records[i][0])})

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        scored = [(m, _cosine(embedding, v)) for m, v in self.records.values() if where.matches(m)]
        scored.sort(key=lambda pair: pair[1], reverse=True)
        return Success(scored[:limit])

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        return Success([m for m, _ in self.records.values() if where.matches(m)])

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        for memory in memories:
            if memory.id not in self.records:
                return Failure(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=memory.id))
        for memory in memories:
            self.records[memory.id] = (memory, self.records[memory.id][1])
        return Success(list(memories))

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        for memory, vector in zip(memories, embeddings, strict=True):
            self.records[memory.id] = (memory, tuple(vector))
        return Success(list(memories))

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        for memory_id in ids:
            self.records.pop(memory_id, None)
        return Success(None)

    def count(self) -> Result[int, DomainError]:
        return Success(len(self.records))

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        return Success(())

    def embedding_model(self) -> Result[str | None, DomainError]:
        return Success(self.model)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        return Success({i: _cosine(embedding, self.records[i][1]) for i in ids if i in self.records})

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))
        self.records = {m.id: (m, tuple(v)) for m, v in zip(memories, embeddings, strict=True)}
        self.model = embedding_model
        return Success(None)


@define
class InMemoryCategories:
    """A CategoryRegistry in a dict."""

    described: dict[str, str] = field(factory=dict)

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        return Success(dict(self.described))

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        self.described[str(category)] = description
        return Success(None)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        for category in categories:
            self.described.pop(str(category), None)
        return Success(None)


@define
class InMemoryCatalog:
    """A StoreCatalog of InMemoryVectorStores; `unreachable` simulates a backend that is down."""

    embedder_name: str | None = None
    stores: dict[str, InMemoryVectorStore] = field(factory=dict)
    registries: dict[str, InMemoryCategories] = field(factory=dict)
    unreachable: bool = False

    @property
    def backend(self) -> str:
        return "memory"

    def open(self, name: str, *, create: bool) -> Result[InMemoryVectorStore, DomainError]:
        if self.unreachable:
            return Failure(DomainError(ErrorCode.BACKEND_UNAVAILABLE, "The in-memory backend is switched off."))
        if name not in self.stores:
            if not create:
                return Failure(DomainError(ErrorCode.STORE_NOT_FOUND, f"Store '{name}' does not exist."))
            self.stores[name] = InMemoryVectorStore(model=self.embedder_name)
        return Success(self.stores[name])

    def categories(self, name: str) -> Result[InMemoryCategories, DomainError]:
        return self.open(name, create=False).map(lambda _: self.registries.setdefault(name, InMemoryCategories()))

    def names(self) -> Result[list[str], DomainError]:
        return Success(sorted(self.stores))

    def keep_warm(self) -> None:
        """Nothing to prepare: searches are as fast on the first request as on the next ones."""

    def health(self) -> Result[Mapping[str, str], DomainError]:
        if self.unreachable:
            return Failure(DomainError(ErrorCode.BACKEND_UNAVAILABLE, "The in-memory backend is switched off."))
        return Success({"location": "memory"})


_WORD = re.compile(r"\w+")


@define
class HashingEmbedder:
    """A deterministic bag-of-words embedder (feature hashing): shared words give similar vectors.

    For unit tests only: it knows no synonyms, so it proves plumbing, not semantics. With a `window` (in words)
    it reads a document's first `window` words, as a model reads its first tokens, and `embed_parts` gives the
    rest in windows of that many words overlapping by a quarter; without one (the default) it reads all of a
    text and a text has no parts.
    """

    dimension: int = 64
    name: str = "hashing-bow"
    window: int | None = None

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        for word in _WORD.findall(text.lower()):
            bucket = int(hashlib.blake2b(word.encode(), digest_size=4).hexdigest(), 16) % self.dimension
            vector[bucket] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def _windows(self, text: str) -> list[str]:
        """The text's windows of `window` words (one, the whole text, without a window)."""
        words = text.split()
        if self.window is None or len(words) <= self.window:
            return [text]
        step = self.window - self.window // 4
        found = [" ".join(words[: self.window])]
        start = step
        while start - step + self.window < len(words):
            found.append(" ".join(words[start : start + self.window]))
            start += step
        return found

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        return Success([self._vector(self._windows(t)[0]) for t in texts])

    def embed_query(self, text: str) -> Result[Vector, DomainError]:
        return Success(self._vector(text))

    def embed_parts(self, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        return Success([[self._vector(w) for w in self._windows(t)[1:]] for t in texts])

    def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
        """Longer than the window in words (never, without a window)."""
        return Success([self.window is not None and len(t.split()) > self.window for t in texts])

    def part_spans(self, texts: Sequence[str]) -> Result[list[list[tuple[int, int]]], DomainError]:
        """Where each later window lies in its text: from its first word's start to its last word's end."""
        found: list[list[tuple[int, int]]] = []
        for text in texts:
            words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
            count = len(self._windows(text)) - 1
            step = (self.window or 1) - (self.window or 1) // 4
            spans = []
            for number in range(1, count + 1):
                chosen = words[number * step : number * step + (self.window or 1)]
                spans.append((chosen[0][0], chosen[-1][1]))
            found.append(spans)
        return Success(found)


@frozen
class TableEmbedder:
    """An embedder that looks each text up in a table of vectors: a unit test says what is similar to what,
    instead of what words happen to hash to. A text outside the table is a KeyError (a test's mistake)."""

    table: Mapping[str, Vector]
    name: str = "meanings"
    dimension: int = 3

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        return Success([self.table[text] for text in texts])

    def embed_query(self, text: str) -> Result[Vector, DomainError]:
        return Success(self.table[text])

    def embed_parts(self, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        return Success([[] for _ in texts])

    def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
        return Success([False for _ in texts])

    def part_spans(self, texts: Sequence[str]) -> Result[list[list[tuple[int, int]]], DomainError]:
        return Success([[] for _ in texts])


@define
class InMemoryPartVectors:
    """PartVectors in dicts: brute-force cosine over a store's parts."""

    parts: dict[str, dict[str, list[Vector]]] = field(factory=dict)

    def put(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        held = self.parts.setdefault(store, {})
        for memory_id, vectors in parts.items():
            if vectors:
                held[memory_id] = list(vectors)
            else:
                held.pop(memory_id, None)
        return Success(None)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        for memory_id in ids:
            self.parts.get(store, {}).pop(memory_id, None)
        return Success(None)

    def rebuild(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        self.parts[store] = {i: list(v) for i, v in parts.items() if v}
        return Success(None)

    def _best(self, store: str, embedding: Vector) -> dict[str, float]:
        return {i: max(_cosine(embedding, v) for v in vs) for i, vs in self.parts.get(store, {}).items()}

    def nearest(self, store: str, embedding: Vector, limit: int) -> Result[list[tuple[str, float]], DomainError]:
        best = sorted(self._best(store, embedding).items(), key=lambda pair: (-pair[1], pair[0]))
        return Success(best[:limit])

    def similarities(self, store: str, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        best = self._best(store, embedding)
        return Success({i: best[i] for i in ids if i in best})

    def holding(self, store: str, ids: Sequence[str]) -> Result[set[str], DomainError]:
        held = self.parts.get(store, {})
        return Success({i for i in ids if i in held})

    def nearest_parts(
        self, store: str, embedding: Vector, ids: Sequence[str]
    ) -> Result[dict[str, tuple[int, float]], DomainError]:
        found: dict[str, tuple[int, float]] = {}
        for memory_id in ids:
            scores = [_cosine(embedding, v) for v in self.parts.get(store, {}).get(memory_id, [])]
            if scores:
                best = max(range(len(scores)), key=scores.__getitem__)
                found[memory_id] = (best + 1, scores[best])
        return Success(found)


@define
class InMemoryKeywordIndex:
    """A KeywordIndex in dicts: scores by the rarer query words a memory (or, at half weight, a neighbour) holds."""

    entries: dict[str, dict[str, KeywordEntry]] = field(factory=dict)

    def _ordered(self, store: str, thread: str) -> list[str]:
        return [i for i, e in self.entries.get(store, {}).items() if e.thread == thread]

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        for entry in entries:
            self.entries.setdefault(store, {})[entry.id] = entry
        return Success(None)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        for memory_id in ids:
            self.entries.get(store, {}).pop(memory_id, None)
        return Success(None)

    def count(self, store: str) -> Result[int, DomainError]:
        return Success(len(self.entries.get(store, {})))

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]:
        found: dict[str, tuple[str | None, str | None]] = {}
        for memory_id in ids:
            entry = self.entries.get(store, {}).get(memory_id)
            if entry is None:
                continue
            order = self._ordered(store, entry.thread)
            at = order.index(memory_id)
            found[memory_id] = (order[at - 1] if at > 0 else None, order[at + 1] if at + 1 < len(order) else None)
        return Success(found)

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        texts = {
            i: set(_WORD.findall(e.text.lower()))
            for i, e in self.entries.get(store, {}).items()
            if (thread_prefix is None or e.thread == thread_prefix or e.thread.startswith(thread_prefix + THREAD_JOIN))
            and thread_in_scope(e.thread, scope)
        }
        words = set(_WORD.findall(query.lower()))
        total = len(texts) or 1
        weight = {w: math.log(1 + total / (1 + sum(w in d for d in texts.values()))) for w in words}
        links = self.neighbours(store, list(texts)).value_or({})

        def score(memory_id: str) -> float:
            own = sum(weight[w] for w in words & texts[memory_id])
            near = [n for n in links.get(memory_id, (None, None)) if n is not None]
            return own + 0.5 * sum(sum(weight[w] for w in words & texts[n]) for n in near)

        scored = sorted(((i, score(i)) for i in texts), key=lambda pair: (-pair[1], pair[0]))
        hits = [(i, s) for i, s in scored if s > 0][:limit]
        best = hits[0][1] if hits else 1.0
        return Success([(i, s / best) for i, s in hits])

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        self.entries[store] = {e.id: e for e in entries}
        return Success(None)


class KillableJournal(InProcessJournal):
    """The in-process BatchJournal with a simulated crash: `writer_died` makes every running batch interrupted."""

    def writer_died(self) -> None:
        for batch in list(self.running.values()):
            self.release(batch)
