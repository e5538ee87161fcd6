"""Memory revisions in the Ledger: which write of an existing memory wins, decided by the engine's insert-if-absent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence

from attrs import evolve
from returns.result import Failure, Result

from agent_memory.adapters.shared.boundary import Abort, as_result, value_of
from agent_memory.adapters.shared.ledger import Ledger, LedgerRecord
from agent_memory.adapters.shared.plain import memory_from_plain, plain_memory
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector, VectorStore

KIND = "rev"
PROBE = 8  # revisions read per round trip when looking for a memory's newest
UNREADABLE = (ValueError, KeyError, TypeError)  # a claim whose text holds no memory (written by a bug): refused

Pair = tuple[Memory | None, Memory]  # a memory as stored now (None: not stored) and as the writer wants it
Image = tuple[Memory | None, Vector | None]  # a revision's after-image: the memory (None: removed for good), and its
# vector when that write re-embedded it
Claimed = Callable[[Sequence[Pair], Callable[[], Result[None, DomainError]]], Result[None, DomainError]]


def revision_key(store: str, memory_id: str, revision: int) -> str:
    return f"{KIND}/{store}/{memory_id}/{revision:08d}"


class RevisionClaims:
    """Revisions of each stored memory: records `rev/<store>/<id>/<n>`, n = 1, 2, …, each inserted only if absent
    (Ledger.claim), never changed or removed, each holding its after-image (the memory's plain JSON, and its vector
    when that write re-embedded it). A write of an existing memory claims revision r + 1, r being the revision it
    READ (`Memory.revision`, carried from the use case's read to the store's write), so of writers that read the same
    revision, on any machines and after any pause, exactly one wins; the others are refused (CONFLICT naming the
    revision that won) and nothing of theirs is written. The claim is the commit; the record write applies it:
    - a loser first brings the record up to the newest revision (a winner may have died between its claim and its
      write: without this the memory could never be written again, every reader reading the revision before);
    - a winner whose record write lands after a later revision's (it paused after its claim) writes the newest
      revision's state back over its stale one, then answers CONFLICT.
    Why a field rather than a per-thread remembrance of reads: the revision must be the one the use case decided on,
    and the use cases read a memory more than once (load, then the store's own read before writing); a field travels
    with the Memory through `evolve`, costs one stored key (read as 0 in older records), needs no hook in the read
    paths and no state per thread, and says in every answer which revision a caller saw.
    A memory removed for good (`removed`) claims its next revision as a removal, so that an id added again later (a
    batch rolled back puts back what it replaced; an import) is adopted at that revision, never rolled forward to
    a state from before its removal.
    A write of several memories is one claim per memory: a loss after wins puts the won ones back by claiming their
    next revision with the state they had (nothing was written yet), then answers CONFLICT.
    Leaves out: a winner killed between its late (stale) write and its check leaves that stale state readable until
    the next write of the memory (which finds the record behind the newest claim and puts the newest back); and a
    memory whose put-back state needs a vector no revision record holds (a several-memory re-embedding write undone
    after another writer applied its claim) is a STORAGE_ERROR asking for its content to be updated again.
    """

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def write(
        self, inner: VectorStore, pairs: Sequence[Pair], embeddings: Sequence[Vector] | None, claimed: Claimed
    ) -> Result[list[Memory], DomainError]:
        """Write the pairs' memories (re-embedded when `embeddings` is given) at their next revision, by `claimed`
        (which holds the paths they move to around the write it is given), the revisions claimed inside it: the
        memories as written (a stored one at the revision it claimed, one not stored yet at its own)."""
        stale = next(
            (
                _conflict(after.id, before.revision, after.revision)
                for before, after in pairs
                if before is not None and before.revision > after.revision
            ),
            None,
        )
        if stale is not None:  # stored is already past what this writer read: refused before anything is taken
            return Failure(stale)
        bumped = [(before, evolve(after, revision=after.revision + 1) if before else after) for before, after in pairs]
        vectors = list(embeddings) if embeddings is not None else None

        def commit() -> Result[None, DomainError]:
            return as_result(lambda: self._commit(inner, pairs, bumped, vectors))

        return (
            claimed(bumped, commit)
            .bind(lambda _: as_result(lambda: self._checked(inner, bumped)))
            .map(lambda _: [after for _, after in bumped])
        )

    def void(self, inner: VectorStore, memory: Memory, revision: int) -> Result[Memory | None, DomainError]:
        """Make sure that a write of `memory` at `revision` (a move or a restore whose writer claimed the path and
        then stopped, before claiming the revision) can never land: bring the record up to its newest revision, and
        while it is just below `revision`, claim `revision` with the memory as it is (and write that). The memory as
        it stands then (None: removed for good): where it is says whether that write landed first."""

        def run() -> Memory | None:
            while True:
                self._settle(inner, memory.store, memory.id)
                found = value_of(inner.get([memory.id]))
                if not found or found[0].revision != revision - 1:
                    return found[0] if found else None
                kept = evolve(found[0], revision=revision)
                if self._claim(memory.store, memory.id, revision, (kept, None)) is None:
                    value_of(inner.update_metadata([kept]))
                    return kept

        return as_result(run)

    def removed(self, gone: Sequence[Memory]) -> Result[None, DomainError]:
        """After memories were removed for good: each one with revisions claims its next as a removal (one ledger
        read for them all; a memory never changed in place costs nothing more)."""

        def run() -> None:
            keys = {revision_key(m.store, m.id, m.revision + 1): m for m in gone}
            found = value_of(self.ledger.read(list(keys))) if keys else {}
            for key, memory in keys.items():
                if memory.revision == 0 and key not in found:
                    continue
                while True:  # a removal is not conditional: it takes the revision after the newest, whatever it is
                    newest = max(self._images(memory.store, memory.id, memory.revision), default=memory.revision)
                    if self._claim(memory.store, memory.id, newest + 1, (None, None)) is None:
                        break

        return as_result(run)

    # --- helpers (plain: they raise Abort, the port methods convert)

    def _commit(
        self, inner: VectorStore, pairs: Sequence[Pair], bumped: Sequence[Pair], vectors: list[Vector] | None
    ) -> None:
        """Claim each stored memory's next revision; all won: write; one lost: put back those won (claiming their
        next revision with the state they had), bring the lost one's record up to its newest, CONFLICT."""
        won: list[tuple[Memory, Memory]] = []  # (as stored, as written)
        for index, ((before, read), (_, after)) in enumerate(zip(pairs, bumped, strict=True)):
            if before is None:
                continue
            image = (after, None if vectors is None else vectors[index])  # a re-embedding write keeps its vector
            stored = self._claim(after.store, after.id, after.revision, image)
            if stored is None:
                won.append((before, after))
                continue
            for kept, ours in won:  # never written: their next revision says they are as they were
                self._claim(kept.store, kept.id, ours.revision + 1, (evolve(kept, revision=ours.revision + 1), None))
                self._settle(inner, kept.store, kept.id)  # its record at that revision: the next writer reads it
            newest = self._settle(inner, after.store, after.id)
            raise Abort(_conflict(after.id, max(newest, after.revision), read.revision))
        memories = [after for _, after in bumped]
        value_of(inner.update_metadata(memories) if vectors is None else inner.replace(memories, vectors))

    def _checked(self, inner: VectorStore, bumped: Sequence[Pair]) -> None:
        """After the write: a memory whose later revision was claimed meanwhile (this writer paused between its claim
        and its write) gets that revision's state back, and the answer is CONFLICT."""
        overtaken = [
            (after, self._settle(inner, after.store, after.id))
            for before, after in bumped
            if before is not None and self._images(after.store, after.id, after.revision)
        ]
        for after, newest in overtaken[:1]:
            raise Abort(
                DomainError(
                    ErrorCode.CONFLICT,
                    f"Memory {after.id} was changed by another writer (revision {newest} won) while this write "
                    f"(revision {after.revision}) was on its way; the state of revision {newest} is in place again. "
                    "Read it again and retry.",
                    path=after.id,
                )
            )

    def _settle(self, inner: VectorStore, store: str, memory_id: str) -> int:
        """Write the newest revision's after-image over the record until the record is at its newest revision (a
        later one may be claimed, or a stale write land, meanwhile): the revision it is at."""
        while True:
            found = value_of(inner.get([memory_id]))
            if not found:
                return 0  # removed for good meanwhile: nothing to bring up to date
            current = found[0]
            images = self._images(store, memory_id, current.revision)
            if not images:
                return current.revision
            newest = max(images)
            memory, vector = images[newest]
            if memory is None:  # removed for good at `newest`, and added again since: that record is the memory now
                memory = evolve(current, revision=newest)
            if memory.content != current.content and vector is None:
                vector = next(
                    (v for n in sorted(images, reverse=True) if (v := _vector_of(images[n], memory.content))), None
                )
                if vector is None:
                    raise Abort(
                        DomainError(
                            ErrorCode.STORAGE_ERROR,
                            f"Memory {memory_id}: revision {newest} changed its text but no revision record since "
                            f"revision {current.revision} holds the vector of that text. Update its content again.",
                            path=memory_id,
                        )
                    )
            value_of(inner.update_metadata([memory]) if vector is None else inner.replace([memory], [vector]))

    def _claim(self, store: str, memory_id: str, revision: int, image: Image) -> LedgerRecord | None:
        """Claim one revision with its after-image: None when this call's record was stored, else the winner's."""
        memory, vector = image
        token = uuid.uuid4().hex  # tells this claim from an identical one of another writer
        held = None if memory is None else plain_memory(memory)
        text = json.dumps({"memory": held, "vector": None if vector is None else list(vector)})
        record = LedgerRecord(
            key=revision_key(store, memory_id, revision),
            store=store,
            kind=KIND,
            seq=revision,
            fields={"token": token, "memory": memory_id},
            text=text,
        )
        stored = value_of(self.ledger.claim(record))
        return None if stored.fields.get("token") == token else stored

    def _images(self, store: str, memory_id: str, after: int) -> dict[int, Image]:
        """The after-images of the revisions claimed after `after` (revisions are claimed one after another)."""
        images: dict[int, Image] = {}
        start = after + 1
        while True:
            keys = {revision_key(store, memory_id, n): n for n in range(start, start + PROBE)}
            found = value_of(self.ledger.read(list(keys)))
            for key, record in found.items():
                images[keys[key]] = _image(record)
            if len(found) < PROBE:
                return images
            start += PROBE


def _image(record: LedgerRecord) -> Image:
    try:
        held = json.loads(record.text)
        vector, memory = held.get("vector"), held["memory"]
        return (
            None if memory is None else memory_from_plain(memory),
            None if vector is None else [float(x) for x in vector],
        )
    except UNREADABLE as error:
        raise Abort(
            DomainError(ErrorCode.STORAGE_ERROR, f"Revision record {record.key} holds no memory.", cause=str(error))
        ) from error


def _vector_of(image: Image, content: str) -> Vector | None:
    memory, vector = image
    return vector if memory is not None and memory.content == content else None


def _conflict(memory_id: str, won: int, read: int) -> DomainError:
    return DomainError(
        ErrorCode.CONFLICT,
        f"Memory {memory_id} was changed by another writer: revision {won} won (this write read revision {read}). "
        "Nothing was written; read it again and retry.",
        path=memory_id,
    )
