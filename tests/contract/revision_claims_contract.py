"""The revision claims' contract (adapters/revision_claims.py): of writers that read one revision of a memory exactly
one wins, and a winner's late write never stays over a later revision, over every Ledger adapter with its store."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from attrs import evolve
from returns.result import Failure, Result, Success

from agent_memory.adapters.claimed_store import ClaimedStore
from agent_memory.adapters.path_claims import PathClaims
from agent_memory.adapters.revision_claims import RevisionClaims, revision_key
from agent_memory.adapters.shared.ledger import Ledger
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import Vector, VectorStore
from tests.contract.vector_store_contract import SIMILARITY_TOLERANCE, axis, full_memory

Engine = tuple[VectorStore, Ledger]  # one store of an engine and the ledger beside it (both empty)


def memory(name: str, **changes: object) -> Memory:
    fields: dict[str, object] = {"namespace": (), "path": MemoryPath(("notes", name)), "deleted": False}
    fields |= {"deleted_at": None, "expires_at": None, "revision": 0}
    return full_memory(id=str(uuid.uuid5(uuid.NAMESPACE_URL, name)), **(fields | changes))


class PausingStore:
    """A store whose next write runs `pause` first, once: a writer that won its claim and stopped (SIGSTOP, a GC)
    before its write reached the engine. `pause` may be a death: raising there means the write never lands."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.pause: Callable[[], None] | None = None

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        self._paused()
        return self.inner.update_metadata(memories)

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        self._paused()
        return self.inner.replace(memories, embeddings)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _paused(self) -> None:
        pause, self.pause = self.pause, None
        if pause is not None:
            pause()


class Died(Exception):
    """The writer's process ended where it was (its write never sent)."""


def conflict(result: Result[Any, DomainError]) -> DomainError:
    assert isinstance(result, Failure), result
    error: DomainError = result.failure()
    assert error.code is ErrorCode.CONFLICT, error
    return error


def stored(store: VectorStore, memory_id: str) -> Memory:
    found = store.get([memory_id])
    assert isinstance(found, Success), found
    (one,) = found.unwrap()
    return one


def as_stored(result: Result[list[Memory], DomainError], store: VectorStore) -> bool:
    """Whether a write went through and answered its memories as the store now holds them (the revision claimed)."""
    assert isinstance(result, Success), result
    return result.unwrap() == [stored(store, memory.id) for memory in result.unwrap()]


class RevisionClaimsContract:
    """Subclasses provide an `engine` fixture: an empty store of the engine and the ledger beside it."""

    def writers(self, engine: Engine) -> tuple[VectorStore, PausingStore, ClaimedStore, ClaimedStore]:
        """The store, and two machines' writers over it (the first one can be paused before its engine write)."""
        inner, ledger = engine
        pausing = PausingStore(inner)
        return inner, pausing, ClaimedStore(pausing, PathClaims(ledger)), ClaimedStore(inner, PathClaims(ledger))

    def test_of_two_writers_that_read_one_revision_exactly_one_is_stored_and_the_other_told_so(
        self, engine: Engine
    ) -> None:
        inner, _, a, b = self.writers(engine)
        x = memory("x")
        a.add([x], [axis(0)]).unwrap()
        assert as_stored(a.update_metadata([evolve(x, tags=("from-a",))]), inner)
        error = conflict(b.update_metadata([evolve(x, tags=("from-b",), deleted=True)]))  # b read revision 0 too
        assert x.id in error.message and "revision 1" in error.message and "Nothing was written" in error.message
        now = stored(inner, x.id)
        assert (now.tags, now.deleted, now.revision) == (("from-a",), False, 1)
        assert as_stored(b.update_metadata([evolve(now, deleted=True)]), inner)  # read again: it goes through
        assert (stored(inner, x.id).deleted, stored(inner, x.id).revision) == (True, 2)

    def test_of_writers_racing_from_one_revision_exactly_one_wins(self, engine: Engine) -> None:
        inner, ledger = engine
        x = memory("x")
        inner.add([x], [axis(0)]).unwrap()
        count = 6
        start = threading.Barrier(count)
        answers: list[Result[list[Memory], DomainError]] = [
            Failure(DomainError(ErrorCode.STORAGE_ERROR, "not run"))
        ] * count

        def write(n: int) -> None:
            writer = ClaimedStore(inner, PathClaims(ledger))  # each a machine of its own
            start.wait()
            answers[n] = writer.update_metadata([evolve(x, tags=(f"w{n}",))])

        threads = [threading.Thread(target=write, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [n for n, answer in enumerate(answers) if isinstance(answer, Success)]
        assert len(winners) == 1, answers
        assert all(conflict(answers[n]) for n in range(count) if n not in winners)
        assert as_stored(answers[winners[0]], inner)
        assert stored(inner, x.id).tags == (f"w{winners[0]}",)

    def test_a_winner_paused_past_a_later_revision_puts_that_revision_back_and_is_told_conflict(
        self, engine: Engine
    ) -> None:
        inner, pausing, a, b = self.writers(engine)
        x = memory("x")
        b.add([x], [axis(0)]).unwrap()
        seen: list[Result[list[Memory], DomainError]] = []

        def meanwhile() -> None:  # while a sleeps holding revision 1, unwritten: b writes twice
            seen.append(b.update_metadata([evolve(x, tags=("b-first",))]))  # read revision 0: a's 1 won
            seen.append(b.update_metadata([evolve(stored(inner, x.id), tags=("b-second",))]))

        pausing.pause = meanwhile
        error = conflict(a.update_metadata([evolve(x, tags=("a",))]))
        assert "revision 2" in error.message
        assert "revision 1" in conflict(seen[0]).message  # and b found a's revision 1 in place (rolled forward)
        assert as_stored(seen[1], inner)
        now = stored(inner, x.id)
        assert (now.tags, now.revision) == (("b-second",), 2)  # a's stale write did not stay

    def test_a_winner_that_died_before_its_write_is_applied_by_the_next_writer(self, engine: Engine) -> None:
        inner, pausing, a, b = self.writers(engine)
        x = memory("x")
        b.add([x], [axis(0)]).unwrap()

        def die() -> None:
            raise Died

        pausing.pause = die
        with pytest.raises(Died):
            a.replace([evolve(x, content="the winner's text")], [axis(3)])
        assert stored(inner, x.id).content == x.content  # its claim stands, its write never landed
        conflict(b.update_metadata([evolve(x, tags=("b",))]))
        now = stored(inner, x.id)
        assert (now.content, now.revision) == ("the winner's text", 1)  # rolled forward, with the claim's vector
        assert inner.similarities(axis(3), [x.id]).unwrap()[x.id] > 1 - SIMILARITY_TOLERANCE
        assert as_stored(b.update_metadata([evolve(now, tags=("b",))]), inner)
        assert stored(inner, x.id).revision == 2

    def test_a_write_answers_each_memory_at_the_revision_it_claimed_as_a_following_get_returns_it(
        self, engine: Engine
    ) -> None:
        inner, ledger = engine
        x, y = memory("x"), memory("y", path=None)
        writer = ClaimedStore(inner, PathClaims(ledger))
        writer.add([x, y], [axis(0), axis(1)]).unwrap()
        written = writer.update_metadata([evolve(x, tags=("one",)), evolve(y, tags=("one",))]).unwrap()
        assert [m.revision for m in written] == [1, 1]  # the revision after the one each carried (read)
        assert written == [stored(writer, x.id), stored(writer, y.id)] == [stored(inner, x.id), stored(inner, y.id)]
        (moved,) = writer.replace(
            [evolve(written[0], content="moved", path=MemoryPath(("notes", "z")))], [axis(2)]
        ).unwrap()
        assert moved == stored(writer, x.id) and moved.revision == 2
        (again,) = writer.update_metadata([evolve(moved, deleted=True)]).unwrap()
        assert again == stored(inner, x.id) and again.revision == 3

    def test_a_writer_that_read_an_older_revision_than_stored_claims_nothing(self, engine: Engine) -> None:
        inner, ledger = engine
        x = memory("x")
        writer = ClaimedStore(inner, PathClaims(ledger))
        writer.add([x], [axis(0)]).unwrap()
        writer.update_metadata([evolve(x, tags=("one",))]).unwrap()
        conflict(writer.update_metadata([evolve(x, tags=("stale",))]))
        assert set(ledger.read([revision_key("default", x.id, n) for n in (1, 2)]).unwrap()) == {
            revision_key("default", x.id, 1)
        }

    def test_an_id_removed_and_added_back_is_adopted_never_rolled_forward_to_its_state_before(
        self, engine: Engine
    ) -> None:
        inner, _, a, b = self.writers(engine)
        x = memory("x", path=None)
        a.add([x], [axis(0)]).unwrap()
        a.update_metadata([evolve(x, tags=("changed",))]).unwrap()  # a batch's change at revision 1
        a.remove([x.id]).unwrap()  # the batch rolled back: removed, and put back as it was (revision 0)
        a.add([x], [axis(0)]).unwrap()
        conflict(b.update_metadata([evolve(x, source="b")]))  # revision 1 is taken: the record is adopted
        now = stored(inner, x.id)
        assert (now.tags, now.revision) == (x.tags, 2)
        assert as_stored(b.update_metadata([evolve(now, source="b")]), inner)
        assert stored(inner, x.id).source == "b"

    def test_a_write_of_several_memories_that_loses_one_writes_none_and_puts_back_the_won(self, engine: Engine) -> None:
        inner, ledger = engine
        x, y = memory("x"), memory("y")
        writer = ClaimedStore(inner, PathClaims(ledger))
        writer.add([x, y], [axis(0), axis(1)]).unwrap()
        RevisionClaims(ledger)._claim("default", y.id, 1, (evolve(y, tags=("other",), revision=1), None))
        conflict(writer.update_metadata([evolve(x, tags=("both",)), evolve(y, tags=("both",))]))
        assert stored(inner, x.id).tags == x.tags  # x won revision 1, then revision 2 put it back as it was
        assert stored(inner, y.id).tags == ("other",)  # y's winner rolled forward
        assert as_stored(writer.update_metadata([evolve(stored(inner, x.id), tags=("again",))]), inner)
        assert (stored(inner, x.id).tags, stored(inner, x.id).revision) == (("again",), 3)
