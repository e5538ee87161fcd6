"""The keyword side inside Qdrant: per store a collection of BM25-weighted sparse term vectors, ranked with IDF."""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, TypeVar

import snowballstemmer
from attrs import define, field
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ApiException
from returns.result import Result, Success

from agent_memory.adapters import qdrant_store
from agent_memory.adapters.qdrant_store import GENERATION, SCAN_PAGE, QdrantCatalog, request_batches
from agent_memory.adapters.sqlite_keywords import STOP_WORDS, query_terms
from agent_memory.domain.errors import DomainError
from agent_memory.domain.ports import THREAD_JOIN, KeywordEntry

T = TypeVar("T")

# --- layout -----------------------------------------------------------------------------------
#
# Store s's keyword index is the alias `<alias of s>.keywords` (`memories.keywords`, `memories--work.keywords`)
# over a physical collection `<that alias>.gen-<token>`: a rebuild fills a new generation and switches the
# alias in one request, as the memory collections do, so readers see the old index or the new one. The name
# holds ".", which store names never do, so QdrantCatalog never takes it for a store. On a Qdrant server the
# index is shared by every machine that uses the server, unlike a local SQLite file.
#
# One point per memory: the point id is the memory id (a UUID; any other id goes through uuid5), the sparse
# vector TERMS is scored with Qdrant's IDF modifier, and the payload is
#   id               the memory id as given
#   thread           the memory's thread (thread_of(namespace))
#   thread_prefixes  the thread and every thread above it ("a/b" → ["a", "a/b"]): `thread_prefix` matches one
#   seq              its place in the thread (0, 1, …; gaps after removals)
#   prev_id/next_id  its neighbours in the thread, null at the ends (the tail is the one with next_id null)
#   content          the memory's text, so that its neighbours' vectors can be recomputed

KEYWORDS_SUFFIX = ".keywords"
FIRST_GENERATION = "0"  # deterministic, so two processes creating one index on a server meet on one collection
TERMS = "terms"  # the named sparse vector (IDF modifier)

# --- weights ----------------------------------------------------------------------------------
#
# BM25F over a memory and its thread neighbours, as FTS5's bm25 with column weights (1, 0.5, 0.5) ranks in
# SqliteKeywordIndex: a term's frequency is tf(own) + NEIGHBOUR_WEIGHT × (tf(previous) + tf(next)), saturated
# once, and the length is the content words of all three. The vector holds that term-frequency part; Qdrant's
# IDF modifier multiplies in idf(t) = ln(1 + (N − n + 0.5)/(n + 0.5)) at query time, and the query's terms weigh
# 1.0 each, so a score is Σ idf(t) · weight(t) over the query's terms.
# (Own and neighbour weights saturated apart and then added ranked worse: LoCoMo keyword recall@10 0.67 against
# 0.71 this way, the figure SQLite gives.)

K1 = 1.2  # term-frequency saturation, as in fastembed's Bm25 and Lucene
B = 0.75  # length normalisation, likewise
# A fixed stand-in for the mean length of a memory, in content words (after stop words): Qdrant keeps no such
# statistic and a moving one would change every stored vector. Memories are a sentence or a short paragraph;
# fastembed's 256 suits passages and would leave length normalisation nearly inert here. A memory is weighed
# with its two neighbours, so the mean length of that window is three times this.
AVERAGE_LENGTH = 16.0
NEIGHBOUR_WEIGHT = 0.5  # the previous and next memories' words (own words: 1.0), as in SqliteKeywordIndex

# Terms become sparse indices through the first 4 bytes of blake2b, cut to 31 bits: stable across processes
# and machines (Python's hash() is not) and needs no vocabulary to share. Two terms may share an index: with a
# vocabulary of V terms about V²/2³² pairs do (≈2 at 100 000 terms); they then count as one word, which only
# blurs two rare words into each other, never breaks a search.
INDEX_MASK = 0x7FFFFFFF

KEYWORD_POINT_IDS = uuid.UUID("0b6f3a52-9c1e-4d8a-b7e4-2f5d9a1c8e63")  # uuid5 namespace for ids that are no UUID
TAIL_CANDIDATES = 16  # a thread has one tail; more only after racing writers, and the latest one wins

KEYWORD_PAYLOAD_FIELDS = ("id", "thread", "thread_prefixes", "next_id")  # indexed on a server

Payload = dict[str, Any]


# --- terms ------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # the tokens of `query_terms` (a test holds the two together)
_STEMMER = snowballstemmer.stemmer("english")  # Porter2; its objects keep state, hence the lock
_STEM_LOCK = threading.Lock()


def _fold(word: str) -> str:
    """The word without diacritics, as FTS5's `remove_diacritics` folds them: "Zürich" → "zurich"."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c)).lower()


@lru_cache(maxsize=1 << 16)
def term_of(word: str) -> str:
    """The indexed form of a content word: folded and stemmed ("running" → "run", "café" → "cafe")."""
    folded = _fold(word)
    with _STEM_LOCK:
        return str(_STEMMER.stemWord(folded))


def content_words(text: str) -> list[str]:
    """`query_terms` with repeats kept: lower-cased words, stop words and one-letter tokens dropped."""
    return [word for word in _WORD.findall(text.lower()) if word not in STOP_WORDS and len(word) > 1]


def document_terms(text: str) -> list[str]:
    """A text's terms, each as often as it occurs (what its term frequencies count)."""
    return [term for word in content_words(text) if (term := term_of(word))]


def term_index(term: str) -> int:
    """The sparse index of a term: stable everywhere (see INDEX_MASK for collisions)."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big") & INDEX_MASK


def term_frequencies(text: str) -> tuple[Counter[int], int]:
    """How often each term index occurs in the text, and its length in terms (indices shared count as one)."""
    terms = document_terms(text)
    return Counter(term_index(term) for term in terms), len(terms)


def memory_weights(own: str, before: str | None, after: str | None) -> dict[int, float]:
    """tf·(k1+1) / (tf + k1·(1 − b + b·len/avg)) per term, tf and len over the memory and its neighbours."""
    frequencies, length = term_frequencies(own)
    weighted: dict[int, float] = dict(frequencies)
    for neighbour in (before, after):
        if neighbour is None:
            continue
        counts, words = term_frequencies(neighbour)
        length += words
        for index, count in counts.items():
            weighted[index] = weighted.get(index, 0.0) + NEIGHBOUR_WEIGHT * count
    saturation = K1 * (1 - B + B * length / (3 * AVERAGE_LENGTH))
    return {index: tf * (K1 + 1) / (tf + saturation) for index, tf in weighted.items()}


def query_vector(query: str) -> models.SparseVector | None:
    """The query's terms at weight 1.0 each; None when it has no content word."""
    indices = sorted({term_index(term) for word in query_terms(query) if (term := term_of(word))})
    return models.SparseVector(indices=indices, values=[1.0] * len(indices)) if indices else None


def _sparse(weights: dict[int, float]) -> models.SparseVector:
    indices = sorted(weights)
    return models.SparseVector(indices=indices, values=[weights[index] for index in indices])


# --- points -----------------------------------------------------------------------------------


def point_id(memory_id: str) -> str:
    """The point of a memory: its own id when that is a canonical UUID (memory ids are), else a uuid5 of it."""
    try:
        if str(uuid.UUID(memory_id)) == memory_id:
            return memory_id
    except ValueError:
        pass
    return str(uuid.uuid5(KEYWORD_POINT_IDS, memory_id))


def thread_prefixes(thread: str) -> list[str]:
    """The thread and every thread it lies under: "user/a" → ["user", "user/a"] ("" → [""])."""
    labels = thread.split(THREAD_JOIN)
    return [THREAD_JOIN.join(labels[:depth]) for depth in range(1, len(labels) + 1)]


@define
class Link:
    """One memory's place in its thread, and its text."""

    id: str
    thread: str
    seq: int
    prev: str | None
    next: str | None
    text: str

    def payload(self) -> Payload:
        return {
            "id": self.id,
            "thread": self.thread,
            "thread_prefixes": thread_prefixes(self.thread),
            "seq": self.seq,
            "prev_id": self.prev,
            "next_id": self.next,
            "content": self.text,
        }


def _text(payload: Payload, key: str) -> str:
    value = payload[key]
    if not isinstance(value, str):
        raise ValueError(f"expected text in {key!r}, got {value!r}")
    return value


def _optional_text(payload: Payload, key: str) -> str | None:
    return None if payload.get(key) is None else _text(payload, key)


def link_from_payload(payload: Payload | None) -> Link:
    """The Link a point holds; KeyError/ValueError when it was not written by this adapter."""
    data = payload or {}
    seq = data["seq"]
    if not isinstance(seq, int):
        raise ValueError(f"expected an integer in 'seq', got {seq!r}")
    return Link(
        id=_text(data, "id"),
        thread=_text(data, "thread"),
        seq=seq,
        prev=_optional_text(data, "prev_id"),
        next=_optional_text(data, "next_id"),
        text=_text(data, "content"),
    )


def _sparse_point_size(point: models.PointStruct) -> int:
    vector = point.vector.get(TERMS) if isinstance(point.vector, dict) else None
    terms = len(vector.indices) if isinstance(vector, models.SparseVector) else 0
    return 6 * len(str((point.payload or {}).get("content", ""))) + 40 * terms + 1024


def _pages(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _match(key: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


# --- one write's view of a store's threads ----------------------------------------------------


@define
class Window:
    """The links one operation touches: read from the collection on demand, changed here, written back at once.

    `fresh` marks a collection known to be empty (a rebuild's new generation), which is then never read.
    """

    client: QdrantClient = field(repr=False)
    collection: str
    fresh: bool = False
    links: dict[str, Link] = field(factory=dict)
    absent: set[str] = field(factory=set)
    tails: dict[str, str | None] = field(factory=dict)  # a thread's last id, once known
    changed: dict[str, None] = field(factory=dict)  # ids whose point must be rewritten, in order
    removed: dict[str, None] = field(factory=dict)

    # --- reading

    def load(self, ids: Iterable[str | None]) -> None:
        """Read the links of these ids that are not known yet (None and unknown ids are skipped)."""
        wanted = list(dict.fromkeys(i for i in ids if i is not None and i not in self.links and i not in self.absent))
        if self.fresh:
            self.absent.update(wanted)
            return
        for page in _pages(wanted, SCAN_PAGE):
            points = self.client.retrieve(
                self.collection, ids=[point_id(i) for i in page], with_payload=True, with_vectors=False
            )
            for point in points:
                link = link_from_payload(point.payload)
                self.links.setdefault(link.id, link)
            self.absent.update(i for i in page if i not in self.links)

    def link(self, memory_id: str | None) -> Link | None:
        self.load([memory_id])
        return None if memory_id is None else self.links.get(memory_id)

    def tail(self, thread: str) -> Link | None:
        """The last link of a thread: the one without a next."""
        if thread not in self.tails:
            self.tails[thread] = None if self.fresh else self._stored_tail(thread)
        return self.link(self.tails[thread])

    def _stored_tail(self, thread: str) -> str | None:
        points, _ = self.client.scroll(
            self.collection,
            scroll_filter=models.Filter(
                must=[_match("thread", thread), models.IsNullCondition(is_null=models.PayloadField(key="next_id"))]
            ),
            limit=TAIL_CANDIDATES,
            with_payload=True,
            with_vectors=False,
        )
        found = [link_from_payload(point.payload) for point in points]
        if not found:
            return None
        last = max(found, key=lambda link: link.seq)
        self.links.setdefault(last.id, last)
        return last.id

    # --- changing

    def put(self, entry: KeywordEntry) -> None:
        """Replace a known id's text in place, or append a new id at the end of its thread."""
        known = self.link(entry.id)
        if known is None:
            self._append(entry)
        elif known.text != entry.text:
            known.text = entry.text
            self._touch(known.id, known.prev, known.next)

    def _append(self, entry: KeywordEntry) -> None:
        tail = None if entry.alone else self.tail(entry.thread)
        link = Link(
            id=entry.id,
            thread=entry.thread,
            seq=0 if tail is None else tail.seq + 1,
            prev=None if tail is None else tail.id,
            next=None,
            text=entry.text,
        )
        if tail is not None:
            tail.next = link.id
            self._touch(tail.id)
        self.links[link.id] = link
        self.absent.discard(link.id)
        self.removed.pop(link.id, None)
        self.tails[link.thread] = link.id
        self._touch(link.id)

    def unlink(self, memory_id: str) -> None:
        """Forget an id and join its neighbours (unknown ids are skipped)."""
        link = self.link(memory_id)
        if link is None:
            return
        self.load([link.prev, link.next])
        before, after = self.link(link.prev), self.link(link.next)
        if before is not None:
            before.next = link.next
            self._touch(before.id)
        if after is not None:
            after.prev = link.prev
            self._touch(after.id)
        if link.next is None:
            self.tails[link.thread] = link.prev
        del self.links[memory_id]
        self.absent.add(memory_id)
        self.changed.pop(memory_id, None)
        self.removed[memory_id] = None

    def _touch(self, *ids: str | None) -> None:
        self.changed.update((i, None) for i in ids if i is not None)

    # --- writing

    def points(self) -> list[models.PointStruct]:
        """The points of every changed link, each vector from its own and its neighbours' texts."""
        self.load(self.changed)
        kept = [self.links[i] for i in self.changed if i in self.links]
        self.load(neighbour for link in kept for neighbour in (link.prev, link.next))
        return [self._point(link) for link in kept]

    def _point(self, link: Link) -> models.PointStruct:
        weights = memory_weights(link.text, self._text_of(link.prev), self._text_of(link.next))
        vector: dict[str, models.Vector] = {TERMS: _sparse(weights)} if weights else {}  # no content word: none
        return models.PointStruct(id=point_id(link.id), vector=vector, payload=link.payload())

    def _text_of(self, memory_id: str | None) -> str | None:
        link = None if memory_id is None else self.links.get(memory_id)
        return None if link is None else link.text

    def flush(self) -> None:
        """Write the changed points, then delete the removed ones."""
        for batch in request_batches(self.points(), _sparse_point_size):
            self.client.upsert(self.collection, points=batch, wait=True)
        gone = [point_id(i) for i in self.removed]
        for page in _pages(gone, qdrant_store.MAX_BATCH_POINTS):
            self.client.delete(self.collection, points_selector=models.PointIdsList(points=list(page)), wait=True)
        self.changed.clear()
        self.removed.clear()


# --- collections ------------------------------------------------------------------------------


def _aliases(client: QdrantClient) -> dict[str, str]:
    return {alias.alias_name: alias.collection_name for alias in client.get_aliases().aliases}


def _create_collection(client: QdrantClient, name: str, *, server: bool) -> None:
    """A sparse-only collection for one store's keywords; an existing one is kept (another process made it)."""
    if not client.collection_exists(name):
        try:
            client.create_collection(
                name,
                vectors_config={},
                sparse_vectors_config={TERMS: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
        except (ApiException, ValueError):
            if not client.collection_exists(name):
                raise
    if server:  # local mode ignores payload indexes
        for key in KEYWORD_PAYLOAD_FIELDS:
            client.create_payload_index(name, field_name=key, field_schema=models.PayloadSchemaType.KEYWORD, wait=True)


def _point_alias(client: QdrantClient, alias: str, target: str, *, replacing: bool) -> None:
    """Create `alias` → `target`, or move it there, in one request."""
    operations: list[models.AliasOperations] = []
    if replacing:
        operations.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
    operations.append(
        models.CreateAliasOperation(create_alias=models.CreateAlias(collection_name=target, alias_name=alias))
    )
    client.update_collection_aliases(change_aliases_operations=operations)


# --- the index --------------------------------------------------------------------------------


@define
class QdrantKeywordIndex:
    """KeywordIndex inside the catalog's Qdrant: one sparse-vector collection per store, on the catalog's client.

    Sharing the catalog's client matters in local mode (one client per folder) and its Boundary turns every
    Qdrant exception into a DomainError. Writes are serialised within the process; Qdrant has no transactions,
    so two machines appending to one thread at the same moment may fork it until a `memory reindex`.
    """

    catalog: QdrantCatalog
    _write_lock: threading.Lock = field(factory=threading.Lock, init=False, repr=False)
    _ready: set[str] = field(factory=set, init=False, repr=False)  # aliases known to exist

    def alias_of(self, store: str) -> str:
        """The alias of a store's keyword collection."""
        return self.catalog.collection_of(store) + KEYWORDS_SUFFIX

    # --- the port

    def upsert(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        if not entries:
            return Success(None)

        def write(client: QdrantClient) -> None:
            window = Window(client, self._ensure(client, store))
            window.load(entry.id for entry in entries)
            for entry in entries:
                window.put(entry)
            window.flush()

        return self._write("index keywords", write)

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        if not ids:
            return Success(None)

        def delete(client: QdrantClient) -> None:
            alias = self._existing(client, store)
            if alias is None:
                return
            window = Window(client, alias)
            window.load(ids)
            for memory_id in ids:
                window.unlink(memory_id)
            window.flush()

        return self._write("remove keywords", delete)

    def search(
        self, store: str, query: str, limit: int, *, thread_prefix: str | None = None
    ) -> Result[list[tuple[str, float]], DomainError]:
        vector = query_vector(query)
        if vector is None or limit < 1:
            return Success([])
        where = None if thread_prefix is None else models.Filter(must=[_match("thread_prefixes", thread_prefix)])

        def find(client: QdrantClient) -> list[tuple[str, float]]:
            alias = self._existing(client, store)
            if alias is None:
                return []
            answer = client.query_points(
                alias, query=vector, using=TERMS, query_filter=where, limit=limit, with_payload=["id"]
            )
            return normalised([(_text(point.payload or {}, "id"), float(point.score)) for point in answer.points])

        return self._read("search keywords", find)

    def neighbours(
        self, store: str, ids: Sequence[str]
    ) -> Result[dict[str, tuple[str | None, str | None]], DomainError]:
        def find(client: QdrantClient) -> dict[str, tuple[str | None, str | None]]:
            alias = self._existing(client, store)
            if alias is None or not ids:
                return {}
            window = Window(client, alias)
            window.load(ids)
            return {i: (link.prev, link.next) for i in ids if (link := window.links.get(i)) is not None}

        return self._read("read keyword neighbours", find)

    def count(self, store: str) -> Result[int, DomainError]:
        def points(client: QdrantClient) -> int:
            alias = self._existing(client, store)
            return 0 if alias is None else int(client.count(alias, exact=True).count)

        return self._read("count keywords", points)

    def rebuild(self, store: str, entries: Sequence[KeywordEntry]) -> Result[None, DomainError]:
        """Fill a new generation in the order given, then switch the alias to it (readers see old or new)."""

        def replace(client: QdrantClient) -> str | None:
            alias = self.alias_of(store)
            live = _aliases(client).get(alias)
            generation = f"{alias}{GENERATION}{uuid.uuid4().hex[:12]}"
            self._drop_stale(client, alias, keep=live)
            _create_collection(client, generation, server=self.catalog.boundary.server)
            window = Window(client, generation, fresh=True)
            for entry in entries:
                window.put(entry)
            window.flush()
            _point_alias(client, alias, generation, replacing=live is not None)  # the commit point
            self._ready.add(alias)
            return live

        def drop(old: str | None) -> Result[None, DomainError]:
            # The rebuild is done; a generation left behind here is dropped by the next rebuild, so this
            # outcome is deliberately not reported.
            if old is not None:
                self._read(f"drop collection '{old}'", lambda client: client.delete_collection(old))
            return Success(None)

        return self._write("rebuild keywords", replace).bind(drop)

    # --- helpers

    def _read(self, doing: str, work: Callable[[QdrantClient], T]) -> Result[T, DomainError]:
        return self.catalog.connect().bind(lambda client: self.catalog.boundary.run(doing, lambda: work(client)))

    def _write(self, doing: str, work: Callable[[QdrantClient], T]) -> Result[T, DomainError]:
        """One write, whole: under the process's write lock and (local mode) the catalog's guard throughout."""
        with self._write_lock:
            return self._read(doing, work)

    def _existing(self, client: QdrantClient, store: str) -> str | None:
        """The store's keyword alias if it exists (reading a store never written is reading nothing)."""
        alias = self.alias_of(store)
        if alias not in self._ready and alias in _aliases(client):
            self._ready.add(alias)
        return alias if alias in self._ready else None

    def _ensure(self, client: QdrantClient, store: str) -> str:
        """The store's keyword alias, over a first generation made now when missing."""
        alias = self._existing(client, store)
        if alias is not None:
            return alias
        alias = self.alias_of(store)
        generation = alias + GENERATION + FIRST_GENERATION
        _create_collection(client, generation, server=self.catalog.boundary.server)
        try:
            _point_alias(client, alias, generation, replacing=False)
        except (ApiException, ValueError):  # another process made the alias meanwhile
            if alias not in _aliases(client):
                raise
        self._ready.add(alias)
        return alias

    def _drop_stale(self, client: QdrantClient, alias: str, *, keep: str | None) -> None:
        """Generations left by failed rebuilds (never the live one)."""
        prefix = alias + GENERATION
        for collection in client.get_collections().collections:
            if collection.name.startswith(prefix) and collection.name != keep:
                client.delete_collection(collection.name)


def normalised(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores divided by the best (best first, ties by id, the best exactly 1.0); non-positive scores left out."""
    kept = sorted(((memory_id, score) for memory_id, score in hits if score > 0), key=lambda hit: (-hit[1], hit[0]))
    if not kept:
        return []
    best = kept[0][1]
    return [(memory_id, min(1.0, score / best)) for memory_id, score in kept]


def keyword_index_for(catalog: QdrantCatalog) -> QdrantKeywordIndex:
    """The keyword index that lives in the catalog's own Qdrant (for the composition root)."""
    return QdrantKeywordIndex(catalog)
