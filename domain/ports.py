"""The ports: narrow Protocols the use cases need from storage, embeddings and time."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from attrs import frozen
from returns.result import Result

from agent_memory.domain.errors import DomainError
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import CategoryPath
from agent_memory.domain.search.relevance import RelevanceRule
from agent_memory.domain.thread_keys import KeywordScope

Vector = Sequence[float]
T = TypeVar("T")


class Clock(Protocol):
    """Tells the time. Promises an aware UTC datetime; nothing about monotonicity."""

    def now(self) -> datetime: ...


class Embedder(Protocol):
    """Turns text into unit-length vectors of a fixed dimension, locally.

    Promises: `name` and `dimension` are known without loading the model; the same text gives the
    same vector; documents and queries may be encoded differently (e5-style prefixes); a model that
    fails the adapter's check on this machine gives EMBEDDING_ERROR on every call, never vectors. Leaves
    out: batching strategy, threads, how the model is checked, and which model — the adapter's choice.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]: ...

    def embed_query(self, text: str) -> Result[Vector, DomainError]: ...

    def embed_parts(self, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        """For each text, the document vectors of its later parts: overlapping windows of the model's length over
        what lies beyond the first window (which `embed_documents` reads); [] for a text that fits in one window.

        Promises: the same text gives the same parts; a text within the window costs no model run. Leaves out:
        how windows are cut (tokens, words) and how much they overlap."""
        ...

    def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
        """For each text, whether it is longer than the model's window (whether `embed_parts` gives it parts).

        Promises: no model run (the tokenizer at most), and a text too short to exceed the window is answered
        without tokenizing, so `memory status` can ask it of a whole store. Leaves out: how length is counted."""
        ...

    def part_spans(self, texts: Sequence[str]) -> Result[list[list[tuple[int, int]]], DomainError]:
        """For each text, where each of its parts lies in it: (start, end) character offsets, one per vector
        `embed_parts` gives, in the same order ([] for a text within the window), so a search can show which part
        of a long memory answered (`text[start:end]` is the part's text, or its words with other spacing).

        Promises: no model run (the tokenizer at most); the same text gives the same spans. Leaves out: how parts
        are cut."""
        ...


@runtime_checkable
class CalibratedEmbedder(Protocol):
    """An embedder whose model carries its own relevance rule (domain.search.relevance), which the composition
    root hands to the domain in SearchPolicy.relevance.

    Promises: the rule reads this model's similarities (each model has its own scale), UNCALIBRATED when the
    model carries none. Leaves out: where the numbers are kept (a model directory's relevance.json)."""

    @property
    def relevance_rule(self) -> RelevanceRule: ...


@runtime_checkable
class DuplicateCalibrated(Protocol):
    """An embedder whose model carries the similarity at and over which two texts say the same thing (a
    near-duplicate, domain.duplicates), which the composition root hands to the domain in
    SearchPolicy.duplicate_similarity.

    Promises: the number is on this model's own cosine scale; None when the model carries none (then no create
    looks for duplicates unless a setting gives the number). Leaves out: where it is kept (a model directory's
    duplicates.json) and how it was chosen (bench/duplicates.py)."""

    @property
    def duplicate_similarity(self) -> float | None: ...


class VectorStore(Protocol):
    """One store's memories, each with its embedding, searchable by cosine similarity under a filter.

    Promises: every field of a Memory round-trips exactly (timestamps to the microsecond); `query`
    applies every condition of the MemoryFilter before ranking and returns at most `limit` pairs of
    (memory, similarity = 1 − cosine distance), most similar first; `get` omits unknown ids and
    returns soft-deleted memories too; writes are durable once the Result is a Success.
    `update_metadata` and `replace` answer the memories as written, one for each given, in order, each at the
    revision its write stored (what a `get` right after returns, unless another writer wrote it since): a store that
    referees writers across machines (a server engine's, adapters/claimed_store.py) writes a stored memory at the
    revision after the one it carries (`Memory.revision`, the one its writer read); any other keeps the one given.
    So a use case answers what it wrote without reading it back.
    Leaves out: confidence and decay (the domain computes them), keyword search, and transactions
    across calls. Library errors come back as STORAGE_ERROR or BACKEND_UNAVAILABLE failures.
    """

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]: ...

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]: ...

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]: ...

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]: ...

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]: ...

    def replace(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector]
    ) -> Result[list[Memory], DomainError]: ...

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]: ...

    def count(self) -> Result[int, DomainError]: ...

    def embedding_model(self) -> Result[str | None, DomainError]: ...

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        """Damage the store found and worked around (e.g. a file it could not read and skipped), each
        saying how to repair it; () when there is none. `memory status` reports them."""
        ...

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        """What works but wants a `memory reindex` (an index that lags its records, a hand-placed or copied file
        read under a name of its own until then), each saying what to run; () when there is none. `memory
        status` lists them as warnings: the store is still healthy."""
        ...

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        """Which of these ids name a stored memory that `where` keeps (every condition, as `query` applies
        them), without reading the records: the search reads only the keyword hits a filter keeps.

        Promises: exactly those ids (unknown ones left out, an empty `ids` gives an empty set). Leaves out:
        order, and the confidence floor (the domain computes it from the record, and still checks each record
        it reads against the filter)."""
        ...

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        """1 − cosine distance between `embedding` and each given id's stored vector (unknown ids omitted).

        Scores keyword-only hits and thread neighbours on the dense side, as `query` would have.
        """
        ...

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Replace the whole store's contents and recorded model at once (reindex).

        A crash part-way must leave either the old contents or the new ones readable, never neither.
        """
        ...


@frozen
class KeywordEntry:
    """What the keyword index holds for one memory: its text and the thread it was written in.

    Within a thread the index remembers the order memories arrived in, so each memory has a previous
    and a next neighbour (conversation turns) that lend it context. The domain names the thread
    (`thread_keys.thread_key`): the memory's namespace path, then everything two memories must share to be
    neighbours; the index only compares threads and matches their namespace prefix.
    """

    id: str
    text: str
    thread: str
    # no other entry ever shares this thread (a memory saved without a thread): the index need not look
    # for the thread's last entry before appending (one query per memory saved on a Qdrant server)
    alone: bool = False


class KeywordIndex(Protocol):
    """Full-text search (bm25) over memory contents, one index per store, kept beside the vectors.

    Promises: `search` returns up to `limit` (id, score) pairs, best first, scores in (0, 1] with the
    best hit at 1.0, ranking a memory by its own words and (with half the weight) its neighbours';
    `upsert` appends new ids at the end of their thread and replaces the text of known ids in place;
    `neighbours` gives each known id's previous and next id in its thread; `remove` forgets ids and
    joins their neighbours; `rebuild` replaces a store's whole index, in the order given.
    Leaves out: filters other than the thread prefix and scope (tags, paths), deletion flags and expiry
    (the search use case checks every hit against the VectorStore's record and asks again, deeper, while
    hits fail them), the order of hits with equal scores, and typo tolerance.
    """

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]: ...

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]: ...

    def search(
        self,
        store: str,
        query: str,
        limit: int,
        *,
        thread_prefix: str | None = None,
        scope: KeywordScope | None = None,
    ) -> Result[list[tuple[str, float]], DomainError]:
        """The best `limit` hits; with `thread_prefix`, only among memories whose thread is it or lies under it.

        Ranking (and the best-hit normalisation) happens after that restriction, so one tenant's hits are
        never crowded out by another's. The thread of a namespace is `thread_of(namespace)`.
        With `scope`, only among threads that hold those labels (`thread_in_scope`), so hits of another
        project or agent never crowd out the rest. An index may apply it loosely (a hit outside may slip in:
        the search checks every hit's record), but never leaves out a hit whose thread is in the scope.
        """
        ...

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]: ...

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]: ...

    def count(self, store: str) -> Result[int, DomainError]:
        """How many memories the store's index holds (0 for a store never indexed); `status` compares it."""
        ...


class PartVectors(Protocol):
    """The vectors of long memories' later parts (`Embedder.embed_parts`), one index per store, kept beside the
    keyword index: a memory longer than the model's window is found by a dense hit on any of its parts.

    Promises: `put` replaces each given id's parts (an empty list forgets them); `remove` forgets ids; `rebuild`
    replaces a store's whole index; `nearest` gives up to `limit` memory ids, each once with the best similarity
    (1 − cosine) of its parts, best first; `similarities` gives that best for the given ids that have parts;
    `holding` says which of the given ids have parts (a lookup: nothing is read but the ids, nothing is made);
    `nearest_parts` gives, for the given ids that have parts, which part is nearest (its number: 1 for the first
    vector `put` gave, in `Embedder.embed_parts`' order) and its similarity. Leaves out: every filter (the search keeps a hit only if `VectorStore.passing` keeps its id), a memory's first
    window (the VectorStore holds it), and which model made the vectors (reindex rebuilds them with the store).
    """

    def put(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]: ...

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]: ...

    def rebuild(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]: ...

    def nearest(self, store: str, embedding: Vector, limit: int) -> Result[list[tuple[str, float]], DomainError]: ...

    def similarities(
        self, store: str, embedding: Vector, ids: Sequence[str]
    ) -> Result[dict[str, float], DomainError]: ...

    def holding(self, store: str, ids: Sequence[str]) -> Result[set[str], DomainError]: ...

    def nearest_parts(
        self, store: str, embedding: Vector, ids: Sequence[str]
    ) -> Result[dict[str, tuple[int, float]], DomainError]: ...


class CategoryRegistry(Protocol):
    """The categories of one store that carry a description or exist without memories.

    Promises: `describe_all` maps every registered category path ("a/b") to its description ("" when
    none); `put` registers or re-describes one; `remove` forgets some. Leaves out: categories that only
    exist because memories lie under them (the use cases derive those from memory paths).
    """

    def describe_all(self) -> Result[Mapping[str, str], DomainError]: ...

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]: ...

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]: ...


class StoreCatalog(Protocol):
    """The stores of one backend, by name, each an isolated VectorStore.

    Promises: `open(name, create=True)` makes a missing store; `open(name, create=False)` on a
    missing store is a STORE_NOT_FOUND failure; `health` reaches the backend and reports where it
    lives (fields for `memory status`), or fails with BACKEND_UNAVAILABLE. Leaves out: migrations.
    """

    @property
    def backend(self) -> str: ...

    def open(self, name: str, *, create: bool) -> Result[VectorStore, DomainError]: ...

    def categories(self, name: str) -> Result[CategoryRegistry, DomainError]:
        """The category registry of an existing store (STORE_NOT_FOUND otherwise)."""
        ...

    def names(self) -> Result[list[str], DomainError]: ...

    def health(self) -> Result[Mapping[str, str], DomainError]: ...

    def keep_warm(self) -> None:
        """This process keeps the catalog open for many requests (a server): prepare what makes its searches
        fast, in the background. Returns at once; no operation ever waits for it (a no-op where nothing needs it).
        """
        ...


class WriteLocks(Protocol):
    """Serialises the changes to one store: every read-modify-write, path check and reindex runs alone.

    Promises: `exclusive(store, work)` runs `work` while no other `exclusive` on the same store runs, in
    this process or (for a lock kept on disk) in any other process on this machine using the same lock
    directory, or (for a lease held in a Chroma or Qdrant server) on any machine using that server, and
    returns work's Result; it is reentrant within one thread; a lock not had within the adapter's timeout is
    a STORAGE_ERROR failure saying the store is busy. Leaves out: readers (they never wait).
    """

    def exclusive(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]: ...


@frozen
class PendingBatch:
    """What a batch of writes to one store will do, recorded before its first write so a crash can be undone:
    the ids it creates and the memories it replaces as they were before (an import's known ids that change).

    `key` is the journal's name for the record (given by `BatchJournal.begin`, "" before)."""

    store: str
    created: tuple[str, ...]
    replaced: tuple[Memory, ...] = ()
    key: str = ""

    @property
    def size(self) -> int:
        return len(self.created) + len(self.replaced)


class BatchJournal(Protocol):
    """Makes a batch of writes to one store one unit: whole, or (after a crash or a failure) rolled back.

    Promises: `begin` records the batch durably before the caller's first write and marks it running (held by
    this process) until `commit`, `drop` or `release`; `commit` forgets it, which is the commit point: the
    batch then stands, and after it the caller may acknowledge (a journal may refuse to commit, say because
    the caller who would read the acknowledgement is gone: the caller then rolls the batch back); `drop`
    forgets a batch the caller rolled back; `release` stops holding one without forgetting it (a rollback that
    failed: the next open retries it); `interrupted(store)` gives the store's batches whose writer is gone
    (died, or released them), never one still running, and reads nothing into being (no journal yet: none).
    Leaves out: the writes and their undoing (the use cases do both), a batch over several stores (each
    store's part is its own unit), and exclusion: call every method under the store's write lock (WriteLocks).
    """

    @property
    def hides_unfinished(self) -> bool:
        """Whether every read of the journaled stores leaves a batch's records out until it commits (a server
        engine's commit marks): then only writers roll an interrupted batch back, and a reader never lists batches
        nor waits for a write lock; else the store's next open, reader or writer, rolls it back."""
        ...

    def begin(self, batch: PendingBatch) -> Result[PendingBatch, DomainError]: ...

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]: ...

    def drop(self, batch: PendingBatch) -> Result[None, DomainError]: ...

    def release(self, batch: PendingBatch) -> Result[None, DomainError]: ...

    def interrupted(self, store: str) -> Result[tuple[PendingBatch, ...], DomainError]: ...


class RefereedCommits(Protocol):
    """Commits a batch that only adds new memories without the store's write lock: the engine is the referee (a
    server engine's path claims and batch outcomes, each a write inserted there only if absent).

    Promises: `begin(batch)` names the batch (its key) and makes what it adds its own: invisible to every reader on
    every node, and left out of counts, until `commit`; it takes nothing exclusive. `commit(batch)` makes the whole
    batch visible at once by one conditional write, or refuses when a contender for one of its paths voided it
    first (DESTINATION_EXISTS naming the memory that took the path, or STORAGE_ERROR): of the batch's writer and
    any contender exactly one decides, after any pause. `abandon(batch)` voids it unless it committed: True when it
    is void (never shown; the caller may take its records out), False when its commit stood (an answer lost on the
    way). `forget(batch)` drops what the referee still keeps of a batch settled either way. `fence(store)`, called under
    the store's write lock by a writer that replaces the whole store (a reindex), decides every refereed batch begun
    before it (voided unless it committed) and, until `unfence(store)`, makes `begin` answer None (the caller then
    runs the batch under the write lock). Leaves out: near-duplicate
    policies that must see other creates (skip, update), changes of stored memories and keyed creates (those run
    under WriteLocks with the BatchJournal), and taking a dead writer's records out (they stay, never shown).
    """

    def begin(self, batch: PendingBatch) -> Result[PendingBatch | None, DomainError]: ...

    def commit(self, batch: PendingBatch) -> Result[None, DomainError]: ...

    def fence(self, store: str) -> Result[None, DomainError]: ...

    def unfence(self, store: str) -> Result[None, DomainError]: ...

    def abandon(self, batch: PendingBatch) -> Result[bool, DomainError]: ...

    def forget(self, batch: PendingBatch) -> Result[None, DomainError]: ...


class IdempotencyKeys(Protocol):
    """Remembers the keys of writes a caller may retry, each with a fingerprint of the request it came with, where
    every process that writes the store sees them (the engine's ledger on a server, the data folder otherwise).

    Promises: `remember(store, key, fingerprint)` stores the pair only if the store has no pair under `key`,
    atomically: of any number of racing calls, from any processes, exactly one stores; it answers the fingerprint
    stored under the key afterwards (the caller's own when it won, the first caller's otherwise). Leaves out: what
    the write stored (the memory's id is derived from the key, so the store itself answers that), and expiry (a
    key is kept as long as the data is).
    """

    def remember(self, store: str, key: str, fingerprint: str) -> Result[str, DomainError]: ...
