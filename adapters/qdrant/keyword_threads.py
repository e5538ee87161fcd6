"""The keyword index's points in Qdrant: the payload of each memory's point, and its place in its thread (a linked list
of points, so that each vector can be recomputed from its own and its neighbours' texts)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from attrs import define, field
from qdrant_client import QdrantClient, models

from agent_memory.adapters.qdrant import layout
from agent_memory.adapters.qdrant.local_commit import one_commit
from agent_memory.adapters.qdrant.terms import memory_weights, sparse_vector
from agent_memory.adapters.shared.batching import chunks
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.thread_keys import THREAD_JOIN, KeywordScope, scope_labels

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
#   scope            the thread's scope labels by position ("2:p3": project p3), [] when it holds none: `scope`
#                    matches them (points written before this field have none, and every scoped search keeps them)
#   seq              its position in the thread (0, 1, …; gaps after removals)
#   prev_id/next_id  its neighbours in the thread, null at the ends (the tail is the one with next_id null)
#   content          the memory's text, so that its neighbours' vectors can be recomputed

TERMS = "terms"  # the named sparse vector (IDF modifier)

KEYWORD_POINT_IDS = uuid.UUID("0b6f3a52-9c1e-4d8a-b7e4-2f5d9a1c8e63")  # uuid5 namespace for ids that are no UUID
TAIL_CANDIDATES = 16  # a thread has one tail; more only after racing writers, and the latest one wins

KEYWORD_PAYLOAD_FIELDS = ("id", "thread", "thread_prefixes", "next_id", "scope")  # indexed on a server

Payload = dict[str, Any]


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


def scope_terms(thread: str) -> list[str]:
    """The thread's scope labels as payload terms, each with its position ("2:p3" = project p3); [] when the
    thread holds none, which every scoped search keeps."""
    labels = scope_labels(thread)
    return [] if labels is None else [f"{position}:{label}" for position, label in enumerate(labels)]


def scope_filter(scope: KeywordScope) -> models.Filter:
    """The points whose thread holds the scope's labels, or no labels at all (`thread_in_scope`)."""
    wanted: list[models.Condition] = [
        match_value("scope", f"{position}:{label}") for position, label in enumerate(scope) if label is not None
    ]
    unlabelled = models.IsEmptyCondition(is_empty=models.PayloadField(key="scope"))
    return models.Filter(should=[models.Filter(must=wanted), unlabelled])


@define
class Link:
    """One memory's position in its thread, and its text."""

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
            "scope": scope_terms(self.thread),
            "seq": self.seq,
            "prev_id": self.prev,
            "next_id": self.next,
            "content": self.text,
        }


def payload_text(payload: Payload, key: str) -> str:
    value = payload[key]
    if not isinstance(value, str):
        raise ValueError(f"expected text in {key!r}, got {value!r}")
    return value


def _optional_text(payload: Payload, key: str) -> str | None:
    return None if payload.get(key) is None else payload_text(payload, key)


def link_from_payload(payload: Payload | None) -> Link:
    """The Link a point holds; KeyError/ValueError when it was not written by this adapter."""
    data = payload or {}
    seq = data["seq"]
    if not isinstance(seq, int):
        raise ValueError(f"expected an integer in 'seq', got {seq!r}")
    return Link(
        id=payload_text(data, "id"),
        thread=payload_text(data, "thread"),
        seq=seq,
        prev=_optional_text(data, "prev_id"),
        next=_optional_text(data, "next_id"),
        text=payload_text(data, "content"),
    )


def _sparse_point_size(point: models.PointStruct) -> int:
    vector = point.vector.get(TERMS) if isinstance(point.vector, dict) else None
    terms = len(vector.indices) if isinstance(vector, models.SparseVector) else 0
    return 6 * len(str((point.payload or {}).get("content", ""))) + 40 * terms + 1024


def match_value(key: str, value: str) -> models.FieldCondition:
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
        for page in chunks(wanted, layout.SCAN_PAGE):
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
                must=[match_value("thread", thread), models.IsNullCondition(is_null=models.PayloadField(key="next_id"))]
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
        vector: dict[str, models.Vector] = {TERMS: sparse_vector(weights)} if weights else {}  # no content word: none
        return models.PointStruct(id=point_id(link.id), vector=vector, payload=link.payload())

    def _text_of(self, memory_id: str | None) -> str | None:
        link = None if memory_id is None else self.links.get(memory_id)
        return None if link is None else link.text

    def flush(self) -> None:
        """Write the changed points, then delete the removed ones (in local mode, as one commit)."""
        points = self.points()
        gone = [point_id(i) for i in self.removed]
        with one_commit(self.client, self.collection):
            for batch in layout.request_batches(points, _sparse_point_size):
                self.client.upsert(self.collection, points=batch, wait=True)
            for page in chunks(gone, layout.MAX_BATCH_POINTS):
                selector = models.PointIdsList(points=list(page))
                self.client.delete(self.collection, points_selector=selector, wait=True)
        self.changed.clear()
        self.removed.clear()
