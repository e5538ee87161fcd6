"""The KeywordIndex contract: one base class of tests that every keyword index adapter subclasses.

A subclass provides an `index` fixture (a fresh, empty KeywordIndex) and, when its data outlives the
object (`durable = True`), `reopen`, which opens the same data afresh as a new process would.
Adapter-specific behaviour (stop words, stemming, diacritic folding, file errors) lives in the subclasses.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import ClassVar

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Success

from agent_memory.domain.model import Memory
from agent_memory.domain.ports import KeywordEntry, KeywordIndex
from agent_memory.domain.thread_keys import KeywordScope, thread_key, thread_of
from tests.contract.vector_store_contract import ok

STORE = "default"
MANY_IDS = 1201  # more than two batches of the SQLite adapter's 500-id `IN (…)` lookups
Neighbours = dict[str, tuple[str | None, str | None]]
Hits = list[tuple[str, float]]


# --- data -------------------------------------------------------------------------------------


def entry(memory_id: str, text: str, thread: str = "t") -> KeywordEntry:
    return KeywordEntry(memory_id, text, thread)


def filler(count: int = 6) -> list[KeywordEntry]:
    """Unrelated memories, one thread each, so that every query word stays rare (bm25 idf > 0)."""
    words = ["lorem ipsum", "dolor sit", "amet consectetur", "adipiscing elit", "sed eiusmod", "tempor incididunt"]
    return [entry(f"filler-{i}", f"{words[i % len(words)]} {i}", f"filler/{i}") for i in range(count)]


def chain(ids: Sequence[str]) -> Neighbours:
    """The neighbours of ids that form one thread, in this order."""
    return {
        memory_id: (ids[at - 1] if at > 0 else None, ids[at + 1] if at + 1 < len(ids) else None)
        for at, memory_id in enumerate(ids)
    }


def ids_of(hits: Hits) -> list[str]:
    return [memory_id for memory_id, _ in hits]


def scores_of(hits: Hits) -> dict[str, float]:
    return dict(hits)


def assert_well_formed(hits: Hits, limit: int) -> None:
    """Up to `limit` distinct (id, score) pairs, best first, scores in (0, 1] and the best exactly 1.0."""
    assert isinstance(hits, list)
    assert len(hits) <= limit
    assert len(set(ids_of(hits))) == len(hits), hits
    for memory_id, score in hits:
        assert isinstance(memory_id, str)
        assert isinstance(score, float)
        assert 0.0 < score <= 1.0, hits
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True), hits
    if hits:
        assert hits[0][1] == 1.0, hits


def scoped(memory_id: str, text: str, namespace: tuple[str, ...], **scope: object) -> KeywordEntry:
    """An entry whose thread is the one the domain writes for a memory of that namespace and scope."""
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    memory = Memory(id=str(uuid.uuid4()), content=text, created_at=moment, updated_at=moment, namespace=namespace)
    return KeywordEntry(memory_id, text, thread_key(attrs.evolve(memory, **scope)))


def search(
    index: KeywordIndex,
    query: str,
    limit: int = 100,
    *,
    store: str = STORE,
    prefix: str | None = None,
    scope: KeywordScope | None = None,
) -> Hits:
    hits = ok(index.search(store, query, limit, thread_prefix=prefix, scope=scope))
    assert_well_formed(hits, limit)
    return hits


def found(
    index: KeywordIndex,
    query: str,
    *,
    store: str = STORE,
    prefix: str | None = None,
    scope: KeywordScope | None = None,
) -> set[str]:
    return set(ids_of(search(index, query, store=store, prefix=prefix, scope=scope)))


# --- a reference model for the generated sequences of writes ------------------------------------

POOL = [f"m{i}" for i in range(8)]
POOL_THREADS = ["a", "a/b", "c"]
FRUIT = ["kiwi", "mango", "papaya", "guava", "lychee"]


def pool_thread(memory_id: str) -> str:
    """A memory keeps its thread for life (a memory's namespace never changes)."""
    return POOL_THREADS[int(memory_id[1:]) % len(POOL_THREADS)]


class Model:
    """What any KeywordIndex must hold after a sequence of writes: entries in arrival order."""

    def __init__(self) -> None:
        self.entries: list[KeywordEntry] = []

    def upsert(self, entries: Sequence[KeywordEntry]) -> None:
        for new in entries:
            at = next((i for i, old in enumerate(self.entries) if old.id == new.id), None)
            if at is None:
                self.entries.append(new)
            else:
                self.entries[at] = new

    def remove(self, ids: Sequence[str]) -> None:
        self.entries = [e for e in self.entries if e.id not in ids]

    def rebuild(self, entries: Sequence[KeywordEntry]) -> None:
        self.entries = list(entries)

    def neighbours(self) -> Neighbours:
        links: Neighbours = {}
        for thread in {e.thread for e in self.entries}:
            links |= chain([e.id for e in self.entries if e.thread == thread])
        return links

    def found(self, word: str) -> set[str]:
        """Ids whose own text, or whose previous or next memory's text, holds `word`."""
        text = {e.id: e.text.split() for e in self.entries}
        return {
            memory_id
            for memory_id, (before, after) in self.neighbours().items()
            if any(n is not None and word in text[n] for n in (memory_id, before, after))
        }


_text = st.lists(st.sampled_from(FRUIT), min_size=1, max_size=3).map(lambda words: " ".join([*words, "note"]))
_pair = st.tuples(st.sampled_from(POOL), _text)
_gone = st.tuples(st.sampled_from([*POOL, "unknown"]), st.just(""))
Operation = tuple[str, list[tuple[str, str]]]  # ("upsert" | "remove" | "rebuild", [(id, text)])
_operation: st.SearchStrategy[Operation] = st.one_of(
    st.tuples(st.just("upsert"), st.lists(_pair, min_size=1, max_size=4)),
    st.tuples(st.just("remove"), st.lists(_gone, min_size=1, max_size=3)),
    st.tuples(st.just("rebuild"), st.lists(_pair, max_size=6, unique_by=lambda pair: pair[0])),
)


# --- the contract -----------------------------------------------------------------------------


class KeywordIndexContract:
    """Every promise of KeywordIndex (domain/ports.py), for any adapter."""

    durable: ClassVar[bool] = True  # the data outlives the object: `reopen` gives a new one over it

    @pytest.fixture
    def index(self, tmp_path: object) -> KeywordIndex:
        raise NotImplementedError("subclasses provide a fresh, empty KeywordIndex")

    def reopen(self, index: KeywordIndex) -> KeywordIndex:
        """A new index over the same data (a new connection, process-like), to prove writes are durable."""
        raise NotImplementedError

    def test_count_follows_upserts_removals_and_rebuilds(self, index: KeywordIndex) -> None:
        assert index.count(STORE) == Success(0)
        ok(index.upsert(STORE, [entry("a", "alpha"), entry("b", "beta"), entry("c", "gamma")]))
        ok(index.upsert(STORE, [entry("a", "alpha again")]))  # an update, not a fourth memory
        assert index.count(STORE) == Success(3)
        ok(index.remove(STORE, ["b"]))
        assert index.count(STORE) == Success(2)
        assert index.count("other-store") == Success(0)
        ok(index.rebuild(STORE, [entry("x", "one"), entry("y", "two"), entry("z", "three"), entry("w", "four")]))
        assert index.count(STORE) == Success(4)

    def _require_durable(self) -> None:
        if not self.durable:
            pytest.skip("this adapter keeps its data in the object only (no persistence to test)")

    # --- search: shape, limits, queries that match nothing

    def test_an_empty_index_finds_nothing(self, index: KeywordIndex) -> None:
        assert search(index, "banana") == []

    def test_an_unknown_store_is_empty_not_an_error(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana bread")]))
        assert search(index, "banana", store="elsewhere") == []
        assert ok(index.neighbours("elsewhere", ["a"])) == {}
        ok(index.remove("elsewhere", ["a"]))
        assert ids_of(search(index, "banana")) == ["a"]

    def test_no_hits_is_an_empty_list(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana bread"), *filler()]))
        assert search(index, "zucchini") == []

    def test_a_query_of_punctuation_only_finds_nothing(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana bread, (baked) - 'twice'!"), *filler()]))
        for query in ["", "   ", "?!", "...", "— , ; : - ( ) [ ] { } \" ' * ^ + _ %", "\n\t"]:
            assert search(index, query) == [], query

    def test_query_syntax_is_taken_literally(self, index: KeywordIndex) -> None:
        """Quotes, operators and brackets in a query are words or nothing, never an error."""
        ok(index.upsert(STORE, [entry("a", "banana bread"), entry("b", "cherry pie", "u"), *filler()]))
        for query in ['banana"', '"banana', "banana*", "(banana", "banana)", "content:banana", "^banana", "-banana"]:
            assert ids_of(search(index, query)) == ["a"], query
        for query in ["NEAR(banana cherry)", "banana OR cherry", "banana AND cherry", "banana NOT cherry"]:
            assert found(index, query) == {"a", "b"}, query
        for query in ['"', "*", "(", ")", "NEAR(", "AND", "OR", "NOT", ":"]:
            assert search(index, query) == [], query

    def test_every_query_is_answered(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana bread"), entry("b", "Zürich café 東京"), *filler()]))

        @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
        @given(query=st.text(max_size=40), limit=st.integers(min_value=1, max_value=20))
        def check(query: str, limit: int) -> None:
            search(index, query, limit)

        check()

    def test_hits_are_best_first_with_the_best_at_one(self, index: KeywordIndex) -> None:
        """More of the query's words rank higher (same lengths, one thread each: no neighbours)."""
        ok(
            index.upsert(
                STORE,
                [
                    entry("one", "banana word word", "t1"),
                    entry("three", "banana cherry plum", "t2"),
                    entry("none", "apple word word", "t3"),
                    entry("two", "banana cherry word", "t4"),
                    *filler(),
                ],
            )
        )
        hits = search(index, "plum banana cherry")
        assert ids_of(hits) == ["three", "two", "one"]
        assert hits[0][1] == 1.0 and hits[1][1] < 1.0 and hits[2][1] < hits[1][1]

    def test_rarer_words_weigh_more(self, index: KeywordIndex) -> None:
        common = [entry(f"common-{i}", f"cherry word {i}", f"c/{i}") for i in range(5)]
        ok(index.upsert(STORE, [*common, entry("rare", "banana word 9", "r"), *filler()]))
        hits = search(index, "banana cherry")
        assert ids_of(hits)[0] == "rare" and len(hits) == 6
        assert max(score for memory_id, score in hits[1:]) < 1.0

    def test_limit_caps_the_hits_and_keeps_the_best(self, index: KeywordIndex) -> None:
        query = ["kiwi", "mango", "papaya", "guava"]
        entries = [entry(f"m{i:02}", " ".join(query[: 1 + i % 4] + ["word"] * (3 - i % 4)), f"t{i}") for i in range(30)]
        ok(index.upsert(STORE, [*entries, *filler()]))
        everything = search(index, " ".join(query))
        assert len(everything) == 30 and len(set(scores_of(everything).values())) == 4
        for limit in (1, 3, 7, 8, 9, 29, 30, 31, 100):
            hits = search(index, " ".join(query), limit)
            assert len(hits) == min(limit, 30)
            assert hits[0][1] == 1.0
            full = scores_of(everything)
            for memory_id, score in hits:
                assert score == pytest.approx(full[memory_id])
            left_out = [score for memory_id, score in everything if memory_id not in scores_of(hits)]
            if left_out:
                assert max(left_out) <= min(score for _, score in hits) + 1e-9

    # --- search: own words and the neighbours' words

    def test_own_words_rank_above_a_neighbour_only_match(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("own", "banana bread"), entry("next", "gamma delta"), *filler()]))
        hits = search(index, "banana")
        assert ids_of(hits) == ["own", "next"]
        assert 0.0 < hits[1][1] < 1.0

    def test_a_neighbours_words_find_a_memory_without_the_word(self, index: KeywordIndex) -> None:
        """The previous and the next memory of a thread both lend their words (conversation turns)."""
        ok(index.upsert(STORE, [entry("q", "favourite fruit"), entry("a", "a ripe banana"), entry("z", "thanks")]))
        ok(index.upsert(STORE, filler()))
        assert found(index, "banana") == {"q", "a", "z"}
        assert ids_of(search(index, "banana"))[0] == "a"
        assert found(index, "favourite") == {"q", "a"}  # the next memory lends its words to the previous one
        assert found(index, "thanks") == {"a", "z"}

    def test_only_the_immediate_neighbours_lend_words(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry(f"m{i}", text) for i, text in enumerate(["banana", "b c", "d e", "f g"])]))
        ok(index.upsert(STORE, filler()))
        assert found(index, "banana") == {"m0", "m1"}

    def test_a_neighbours_words_lift_a_memory(self, index: KeywordIndex) -> None:
        """Same own text, same length: the memory whose neighbour also holds the word ranks higher."""
        ok(
            index.upsert(
                STORE,
                [
                    entry("lifted", "banana split", "t1"),
                    entry("lifter", "banana bread", "t1"),
                    entry("alone", "banana sundae", "t2"),
                    entry("plain", "cherry pie", "t2"),
                    *filler(),
                ],
            )
        )
        hits = scores_of(search(index, "banana"))
        assert set(hits) == {"lifted", "lifter", "alone", "plain"}
        assert hits["lifted"] > hits["alone"] and hits["lifter"] > hits["alone"]
        assert hits["alone"] > hits["plain"]

    def test_other_threads_lend_no_words(self, index: KeywordIndex) -> None:
        """Interleaved arrivals of two threads: a memory's neighbours are in its own thread only."""
        ok(
            index.upsert(
                STORE,
                [
                    entry("a1", "banana bread", "alpha"),
                    entry("b1", "cherry pie", "beta"),
                    entry("a2", "apple tart", "alpha"),
                    entry("b2", "plum jam", "beta"),
                    *filler(),
                ],
            )
        )
        assert found(index, "banana") == {"a1", "a2"}
        assert found(index, "cherry") == {"b1", "b2"}

    # --- upsert

    def test_upsert_appends_in_arrival_order_per_thread(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a1", "x", "alpha"), entry("b1", "x", "beta"), entry("a2", "x", "alpha")]))
        ok(index.upsert(STORE, []))
        ok(index.upsert(STORE, [entry("c1", "x", "alpha/c"), entry("b2", "x", "beta")]))
        ok(index.upsert(STORE, [entry("a3", "x", "alpha")]))
        ok(index.upsert(STORE, [entry("b3", "x", "beta"), entry("a4", "x", "alpha")]))
        every = ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "c1"]
        assert ok(index.neighbours(STORE, every)) == (
            chain(["a1", "a2", "a3", "a4"]) | chain(["b1", "b2", "b3"]) | chain(["c1"])
        )

    def test_ids_are_not_sorted(self, index: KeywordIndex) -> None:
        order = ["zeta", "alpha", "mu", "beta"]
        ok(index.upsert(STORE, [entry(i, "x") for i in order]))
        assert ok(index.neighbours(STORE, sorted(order))) == chain(order)

    def test_upsert_of_a_known_id_replaces_its_text_in_place(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "apple"), entry("b", "banana split"), entry("c", "cherry"), *filler()]))
        ok(index.upsert(STORE, [entry("b", "blueberry muffin")]))
        assert found(index, "split") == set()
        assert found(index, "banana") == set()  # neither b nor, through it, a and c
        hits = search(index, "blueberry")
        assert ids_of(hits)[0] == "b" and set(ids_of(hits)) == {"a", "b", "c"}
        assert found(index, "muffin") == {"a", "b", "c"}
        assert ok(index.neighbours(STORE, ["a", "b", "c"])) == chain(["a", "b", "c"])
        ok(index.upsert(STORE, [entry("d", "date")]))
        assert ok(index.neighbours(STORE, ["a", "b", "c", "d"])) == chain(["a", "b", "c", "d"])

    def test_a_replaced_text_is_what_the_neighbours_lend(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "apple"), entry("b", "banana"), entry("c", "cherry"), *filler()]))
        ok(index.upsert(STORE, [entry("a", "apricot"), entry("c", "currant")]))
        assert found(index, "apple") == set() and found(index, "cherry") == set()
        assert found(index, "apricot") == {"a", "b"}
        assert found(index, "currant") == {"b", "c"}

    def test_upsert_is_idempotent(self, index: KeywordIndex) -> None:
        entries = [entry("a", "banana"), entry("b", "cherry"), entry("c", "apple")]
        ok(index.upsert(STORE, [*entries, *filler()]))
        before = (search(index, "banana"), ok(index.neighbours(STORE, ["a", "b", "c"])))
        ok(index.upsert(STORE, entries))
        ok(index.upsert(STORE, [entries[1], entries[1]]))
        assert (search(index, "banana"), ok(index.neighbours(STORE, ["a", "b", "c"]))) == before

    def test_a_new_id_twice_in_one_batch_is_appended_once(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "x"), entry("b", "banana"), entry("b", "cherry"), entry("c", "x")]))
        assert ok(index.neighbours(STORE, ["a", "b", "c"])) == chain(["a", "b", "c"])
        ok(index.upsert(STORE, filler()))
        assert found(index, "banana") == set()
        assert ids_of(search(index, "cherry"))[0] == "b"

    # --- neighbours

    def test_neighbours_of_a_lone_memory_are_none(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("only", "x", "alone"), entry("other", "x", "elsewhere")]))
        assert ok(index.neighbours(STORE, ["only"])) == {"only": (None, None)}

    def test_entries_marked_alone_lend_and_borrow_nothing(self, index: KeywordIndex) -> None:
        """A memory saved without a thread: its own thread key, and no tail lookup before appending it."""
        alone = [
            KeywordEntry(f"fact{i}", text, f"ns/{i}", alone=True) for i, text in enumerate(["kiwi", "plum", "fig"])
        ]
        ok(index.upsert(STORE, [*alone, *filler()]))
        assert ok(index.neighbours(STORE, ["fact0", "fact1", "fact2"])) == {f"fact{i}": (None, None) for i in range(3)}
        assert search(index, "plum") == [("fact1", 1.0)]
        assert ids_of(search(index, "plum", prefix="ns")) == ["fact1"]
        ok(index.remove(STORE, ["fact1"]))
        assert search(index, "plum") == []

    def test_neighbours_omit_unknown_ids(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "x"), entry("b", "x")]))
        assert ok(index.neighbours(STORE, ["ghost", "b", "nobody"])) == {"b": ("a", None)}
        assert ok(index.neighbours(STORE, [])) == {}
        assert ok(index.neighbours(STORE, ["ghost"])) == {}

    def test_neighbours_of_many_ids_at_once(self, index: KeywordIndex) -> None:
        ids = [f"id-{i:05}" for i in range(MANY_IDS)]
        even, odd = ids[0::2], ids[1::2]
        ok(index.upsert(STORE, [entry(i, f"word{n}", "even" if n % 2 == 0 else "odd") for n, i in enumerate(ids)]))
        wanted = [*reversed(ids), "ghost-1", ids[0], "ghost-2"]
        assert ok(index.neighbours(STORE, wanted)) == chain(even) | chain(odd)

    # --- remove

    def test_remove_forgets_ids(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "apple"), entry("b", "banana"), entry("c", "cherry"), *filler()]))
        ok(index.remove(STORE, ["b"]))
        assert found(index, "banana") == set()
        assert ok(index.neighbours(STORE, ["b"])) == {}
        assert found(index, "apple") == {"a", "c"}  # a and c are now neighbours

    def test_remove_joins_the_neighbours(self, index: KeywordIndex) -> None:
        order = ["a", "b", "c", "d", "e", "f", "g"]
        ok(index.upsert(STORE, [entry(i, "x") for i in order]))
        ok(index.remove(STORE, ["b"]))
        assert ok(index.neighbours(STORE, order)) == chain(["a", "c", "d", "e", "f", "g"])
        ok(index.remove(STORE, ["a", "g"]))  # the first and the last
        assert ok(index.neighbours(STORE, order)) == chain(["c", "d", "e", "f"])
        ok(index.remove(STORE, ["e", "d"]))  # two adjacent ones in one call
        assert ok(index.neighbours(STORE, order)) == chain(["c", "f"])
        ok(index.remove(STORE, ["c", "f"]))
        assert ok(index.neighbours(STORE, order)) == {}

    def test_remove_of_unknown_ids_is_fine(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana"), entry("b", "cherry"), *filler()]))
        ok(index.remove(STORE, ["ghost", "a-not"]))
        ok(index.remove(STORE, []))
        ok(index.remove(STORE, ["a", "a"]))
        ok(index.remove(STORE, ["a"]))
        assert ok(index.neighbours(STORE, ["a", "b"])) == {"b": (None, None)}
        assert found(index, "banana") == set()

    def test_after_removing_the_last_new_ids_follow_the_new_last(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "x"), entry("b", "x"), entry("c", "x")]))
        ok(index.remove(STORE, ["c"]))
        ok(index.upsert(STORE, [entry("d", "x")]))
        assert ok(index.neighbours(STORE, ["a", "b", "c", "d"])) == chain(["a", "b", "d"])

    def test_a_removed_id_written_again_arrives_last(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "x"), entry("b", "banana"), entry("c", "x"), *filler()]))
        ok(index.remove(STORE, ["b"]))
        ok(index.upsert(STORE, [entry("b", "cherry")]))
        assert ok(index.neighbours(STORE, ["a", "b", "c"])) == chain(["a", "c", "b"])
        assert found(index, "banana") == set()
        assert found(index, "cherry") == {"b", "c"}

    # --- rebuild

    def test_rebuild_replaces_the_whole_store_in_the_order_given(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("old1", "banana"), entry("old2", "banana"), entry("kept", "banana")]))
        new = [
            entry("zz", "cherry pie", "one"),
            entry("kept", "plum jam", "two"),
            entry("aa", "cherry tart", "one"),
            entry("mm", "apple", "one"),
            entry("bb", "plum cake", "two"),
        ]
        ok(index.rebuild(STORE, new))
        ok(index.upsert(STORE, filler()))
        assert found(index, "banana") == set()
        assert ok(index.neighbours(STORE, ["old1", "old2"])) == {}
        assert ok(index.neighbours(STORE, [e.id for e in new])) == chain(["zz", "aa", "mm"]) | chain(["kept", "bb"])
        assert found(index, "cherry") == {"zz", "aa", "mm"}
        assert found(index, "plum") == {"kept", "bb"}

    def test_upsert_after_rebuild_appends_after_the_rebuilt_order(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("old", "x")]))
        ok(index.rebuild(STORE, [entry("b", "x"), entry("a", "x")]))
        ok(index.upsert(STORE, [entry("c", "x"), entry("old", "x")]))
        assert ok(index.neighbours(STORE, ["a", "b", "c", "old"])) == chain(["b", "a", "c", "old"])

    def test_rebuild_with_nothing_empties_the_store(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "banana")]))
        ok(index.rebuild(STORE, []))
        assert search(index, "banana") == [] and ok(index.neighbours(STORE, ["a"])) == {}

    def test_rebuild_of_an_unknown_store_creates_it(self, index: KeywordIndex) -> None:
        ok(index.rebuild("fresh", [entry("a", "banana"), entry("b", "cherry")]))
        assert ok(index.neighbours("fresh", ["a", "b"])) == chain(["a", "b"])
        assert found(index, "cherry", store="fresh") == {"a", "b"}

    # --- stores

    def test_stores_are_isolated(self, index: KeywordIndex) -> None:
        ok(index.upsert("one", [entry("a", "banana"), entry("b", "cherry"), entry("c", "apple")]))
        ok(index.upsert("two", [entry("c", "apple"), entry("a", "banana"), entry("z", "cherry")]))
        assert ok(index.neighbours("one", ["a", "b", "c", "z"])) == chain(["a", "b", "c"])
        assert ok(index.neighbours("two", ["a", "b", "c", "z"])) == chain(["c", "a", "z"])
        ok(index.remove("two", ["a"]))
        ok(index.upsert("one", [entry("c", "durian")]))
        assert ok(index.neighbours("one", ["a", "b", "c"])) == chain(["a", "b", "c"])
        assert ok(index.neighbours("two", ["a", "c", "z"])) == chain(["c", "z"])
        assert found(index, "banana", store="one") == {"a", "b"}
        assert found(index, "banana", store="two") == set()
        assert found(index, "apple", store="two") == {"c", "z"}
        assert found(index, "apple", store="one") == set()
        ok(index.rebuild("two", []))
        assert found(index, "durian", store="one") == {"b", "c"}

    # --- thread_prefix

    def test_a_thread_prefix_keeps_that_thread_and_those_under_it(self, index: KeywordIndex) -> None:
        threads = ["user", "user/a", "user/a/deep", "user/🧠", "username", "user-x", "users/a", "", "org/user", "User"]
        ok(index.upsert(STORE, [entry(f"in:{t}", f"banana {n}", t) for n, t in enumerate(threads)]))
        ok(index.upsert(STORE, filler()))
        assert found(index, "banana", prefix="user") == {"in:user", "in:user/a", "in:user/a/deep", "in:user/🧠"}
        assert found(index, "banana", prefix="user/a") == {"in:user/a", "in:user/a/deep"}
        assert found(index, "banana", prefix="user/a/deep") == {"in:user/a/deep"}
        assert found(index, "banana", prefix="org") == {"in:org/user"}
        assert found(index, "banana", prefix="use") == set()
        assert found(index, "banana", prefix="nobody") == set()
        assert found(index, "banana") == {f"in:{t}" for t in threads}

    def test_a_thread_prefix_is_the_thread_of_a_namespace(self, index: KeywordIndex) -> None:
        spaces = [("ünï", "日本"), ("ünï",), ("ünïx",), ("org", "acme", "bot"), ("org", "acme")]
        ok(index.upsert(STORE, [entry(thread_of(ns), f"banana {n}", thread_of(ns)) for n, ns in enumerate(spaces)]))
        assert found(index, "banana", prefix=thread_of(("ünï",))) == {"ünï/日本", "ünï"}
        assert found(index, "banana", prefix=thread_of(("org", "acme"))) == {"org/acme/bot", "org/acme"}

    def test_like_wildcards_in_a_thread_prefix_are_literal(self, index: KeywordIndex) -> None:
        threads = ["a%", "a%/x", "a%b", "abc", "ab/x", "a_", "a_/y", "ab", "aX/y", "%", "_", "%/z", "x"]
        ok(index.upsert(STORE, [entry(f"in:{t}", f"banana {n}", t) for n, t in enumerate(threads)]))
        assert found(index, "banana", prefix="a%") == {"in:a%", "in:a%/x"}
        assert found(index, "banana", prefix="a_") == {"in:a_", "in:a_/y"}
        assert found(index, "banana", prefix="%") == {"in:%", "in:%/z"}
        assert found(index, "banana", prefix="_") == {"in:_"}
        assert found(index, "banana", prefix="a") == set()

    def test_the_best_hit_under_a_prefix_scores_one(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [
                    entry("strong", "banana split sundae tonight", "org/a"),
                    entry("weak", "banana split for friends", "user/a"),
                    entry("weaker", "banana for my friends", "user/b"),
                    *filler(),
                ],
            )
        )
        everywhere = search(index, "banana split sundae")
        assert ids_of(everywhere) == ["strong", "weak", "weaker"] and everywhere[1][1] < 1.0
        within = search(index, "banana split sundae", prefix="user")
        assert ids_of(within) == ["weak", "weaker"]
        assert within[0][1] == 1.0 and within[1][1] < 1.0

    def test_a_thread_prefix_is_never_crowded_out(self, index: KeywordIndex) -> None:
        others = [entry(f"org-{i:02}", f"banana split {i}", f"org/{i}") for i in range(40)]
        mine = [entry(f"user-{i}", f"banana bread {i}", f"user/{i}") for i in range(3)]
        ok(index.upsert(STORE, [*others[:20], *mine, *others[20:], *filler()]))
        assert not set(ids_of(search(index, "banana split", 5))) & {e.id for e in mine}  # the setup crowds them out
        within = search(index, "banana split", 5, prefix="user")
        assert set(ids_of(within)) == {e.id for e in mine}
        assert len(search(index, "banana split", 2, prefix="user")) == 2
        assert set(ids_of(search(index, "banana split", 50, prefix="org"))) == {e.id for e in others}

    def test_neighbours_lend_words_under_a_prefix_too(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("q", "which fruit", "user/a"), entry("a", "banana", "user/a"), *filler()]))
        ok(index.upsert(STORE, [entry("o", "which fruit", "org/a"), entry("b", "banana", "org/a")]))
        assert found(index, "banana", prefix="user") == {"q", "a"}

    # --- scope

    def test_a_scope_never_leaves_out_a_thread_in_it(self, index: KeywordIndex) -> None:
        labels = ["", "p3", "p*", "p?", "p[3]", "[", "]", "a%b", "_", "ünï", "x/y"]  # wildcards of GLOB and LIKE
        rows = [
            scoped(f"{agent}|{project}|{n}", f"banana {n}", ("user",), agent=agent, project=project)
            for n, (agent, project) in enumerate(itertools.product(["", "bot", "b*"], labels))
        ]
        ok(index.upsert(STORE, [*rows, *filler()]))
        for project in labels:
            for agent in ("", "bot", "b*", None):
                inside = {e.id for e in rows if e.id.split("|")[1] == project and agent in (None, e.id.split("|")[0])}
                assert inside
                assert found(index, "banana", scope=(agent, None, project, None, None)) >= inside, (agent, project)

    def test_a_scope_with_a_prefix_keeps_both(self, index: KeywordIndex) -> None:
        rows = [
            scoped("mine", "banana", ("user", "a"), project="p3"),
            scoped("deeper", "banana", ("user", "a", "b"), project="p3", global_=True),
            scoped("other-tenant", "banana", ("org",), project="p3"),
        ]
        ok(index.upsert(STORE, [*rows, *filler()]))
        assert found(index, "banana", prefix="user", scope=(None, None, "p3", None, None)) >= {"mine", "deeper"}
        assert "other-tenant" not in found(index, "banana", prefix="user", scope=(None, None, "p3", None, None))
        assert "deeper" in found(index, "banana", prefix="user", scope=(None, None, None, None, "global"))

    def test_a_thread_without_scope_labels_is_in_every_scope(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("old", "banana", "user/a"), entry("older", "banana", "user"), *filler()]))
        assert found(index, "banana", prefix="user", scope=("bot", "", "p3", "", "")) == {"old", "older"}

    def test_a_scope_is_never_crowded_out(self, index: KeywordIndex) -> None:
        others = [scoped(f"p1-{i:02}", f"banana split {i}", ("user",), project="p1") for i in range(40)]
        mine = [scoped(f"p3-{i}", f"banana bread {i}", ("user",), project="p3", thread=f"s{i}") for i in range(3)]
        ok(index.upsert(STORE, [*others[:20], *mine, *others[20:], *filler()]))
        assert not set(ids_of(search(index, "banana split", 5, prefix="user"))) & {e.id for e in mine}
        within = search(index, "banana split", 5, prefix="user", scope=(None, None, "p3", None, None))
        assert set(ids_of(within)) == {e.id for e in mine}
        assert within[0][1] == 1.0
        assert found(index, "banana", scope=(None, None, "p", None, None)) == set()
        assert found(index, "banana", scope=(None, None, "p*", None, None)) == set()  # literal, not a wildcard

    def test_generated_scopes_never_lose_a_thread_in_them(self, index: KeywordIndex) -> None:
        stores = itertools.count()
        labels = st.sampled_from(["", "p", "p*", "?", "[x", "x]", "%", "_", "ü"])  # wildcards of GLOB and LIKE

        @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            rows=st.lists(st.tuples(labels, labels, labels, st.booleans()), min_size=1, max_size=12),
            pick=st.integers(min_value=0),
            kept=st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()),
        )
        def check(rows: list[tuple[str, str, str, bool]], pick: int, kept: tuple[bool, ...]) -> None:
            """The scope asks for some of one stored row's labels, so it always holds at least that row."""
            wanted = tuple(label if keep else None for label, keep in zip(rows[pick % len(rows)], kept, strict=True))
            store = f"scope-{next(stores)}"
            entries = [
                scoped(f"m{n}", f"banana {n}", ("user",), agent=a, project=p, type=t, global_=g)
                for n, (a, p, t, g) in enumerate(rows)
            ]
            ok(index.upsert(store, [*entries, *filler(30)]))
            agent, project, kind, is_global = wanted
            scope = (agent, None, project, kind, None if is_global is None else ("global" if is_global else ""))
            inside = {
                f"m{n}"
                for n, row in enumerate(rows)
                if all(w is None or w == held for w, held in zip(wanted, row, strict=True))
            }
            assert found(index, "banana", store=store, prefix="user", scope=scope) >= inside, (rows, wanted)

        check()

    # --- unicode

    def test_unicode_words_are_found_case_insensitively(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [
                    entry("de", "Büro in Zürich", "t1"),
                    entry("ru", "Привет мир", "t2"),
                    entry("ja", "東京 タワー", "t3"),
                    entry("fr", "une idée naïve", "t4"),
                    entry("emoji", "🧠 brain 🧠", "t5"),
                    *filler(),
                ],
            )
        )
        for query, expected in [
            ("zürich", "de"),
            ("ZÜRICH", "de"),
            ("büro?", "de"),
            ("привет", "ru"),
            ("МИР", "ru"),
            ("東京", "ja"),
            ("NAÏVE", "fr"),
            ("idée", "fr"),
            ("brain", "emoji"),
        ]:
            assert ids_of(search(index, query)) == [expected], query

    # --- generated sequences of writes against the reference model

    def test_generated_writes_match_the_reference_model(self, index: KeywordIndex) -> None:
        stores = itertools.count()

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(operations=st.lists(_operation, max_size=8))
        def check(operations: list[Operation]) -> None:
            store = f"gen-{next(stores)}"
            model = Model()
            for kind, pairs in operations:
                entries = [entry(i, text, pool_thread(i) if i in POOL else "t") for i, text in pairs]
                if kind == "remove":
                    ok(index.remove(store, [e.id for e in entries]))
                    model.remove([e.id for e in entries])
                elif kind == "upsert":
                    ok(index.upsert(store, entries))
                    model.upsert(entries)
                else:
                    ok(index.rebuild(store, entries))
                    model.rebuild(entries)
                assert ok(index.neighbours(store, [*POOL, "unknown"])) == model.neighbours(), operations
                for word in FRUIT:
                    assert found(index, word, store=store) == model.found(word), (word, operations)

        check()

    # --- durability

    def test_writes_are_durable(self, index: KeywordIndex) -> None:
        self._require_durable()
        ok(index.upsert(STORE, [entry("a", "apple", "u"), entry("x", "xigua", "v"), entry("b", "banana", "u")]))
        ok(index.upsert(STORE, [entry("c", "cherry", "u"), entry("y", "yuzu", "v"), *filler()]))
        ok(index.upsert(STORE, [entry("b", "blueberry", "u")]))
        ok(index.remove(STORE, ["x"]))
        ok(index.rebuild("other", [entry("o2", "orange"), entry("o1", "olive")]))
        ids = ["a", "b", "c", "x", "y"]
        queries = ["apple", "banana", "blueberry", "cherry", "xigua", "yuzu"]
        before = ({q: search(index, q) for q in queries}, ok(index.neighbours(STORE, ids)))
        fresh = self.reopen(index)
        assert ({q: search(fresh, q) for q in queries}, ok(fresh.neighbours(STORE, ids))) == before
        assert ok(fresh.neighbours("other", ["o1", "o2"])) == chain(["o2", "o1"])
        assert found(fresh, "blueberry", prefix="u") == {"a", "b", "c"}

    def test_a_reopened_index_appends_after_the_stored_order(self, index: KeywordIndex) -> None:
        self._require_durable()
        ok(index.upsert(STORE, [entry("a", "apple"), entry("b", "banana")]))
        fresh = self.reopen(index)
        ok(fresh.upsert(STORE, [entry("c", "cherry")]))
        ok(fresh.remove(STORE, ["a"]))
        assert ok(fresh.neighbours(STORE, ["a", "b", "c"])) == chain(["b", "c"])
        again = self.reopen(fresh)
        assert ok(again.neighbours(STORE, ["a", "b", "c"])) == chain(["b", "c"])
        assert found(again, "cherry") == {"b", "c"}


class RankingKeywordIndexContract(KeywordIndexContract):
    """What a real bm25 index adds to the port's promises: stemming, folded diacritics, counted repeats, stop words.

    The in-memory fake does none of these; the SQLite FTS5 and Qdrant sparse indexes both must.
    """

    def test_words_are_stemmed(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("run", "she was running late", "t1"), entry("x", "nothing here", "t2")]))
        ok(index.upsert(STORE, filler()))
        for query in ["run", "runs", "running", "RUNNING"]:
            assert ids_of(search(index, query)) == ["run"], query

    def test_diacritics_are_folded_both_ways(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [
                    entry("cafe-accent", "un café noir", "t1"),
                    entry("cafe-plain", "the cafe round the corner", "t2"),
                    entry("angstrom", "Ångström units", "t3"),
                    entry("zurich", "Zurich office", "t4"),
                    entry("vn", "Việt Nam trip", "t5"),
                    *filler(),
                ],
            )
        )
        for query in ["cafe", "café", "CAFÉ", "cafè"]:
            assert found(index, query) == {"cafe-accent", "cafe-plain"}, query
        assert ids_of(search(index, "ÅNGSTRÖM")) == ["angstrom"]
        assert ids_of(search(index, "zürich")) == ["zurich"]
        assert ids_of(search(index, "viet")) == ["vn"]

    def test_repeated_words_rank_higher(self, index: KeywordIndex) -> None:
        """bm25 counts occurrences (the in-memory fake does not)."""
        ok(
            index.upsert(
                STORE,
                [
                    entry("once", "banana cake word word", "t1"),
                    entry("thrice", "banana banana banana cake", "t2"),
                    entry("twice", "banana banana cake word", "t3"),
                    *filler(),
                ],
            )
        )
        hits = search(index, "banana")
        assert ids_of(hits) == ["thrice", "twice", "once"]
        assert hits[1][1] < 1.0 and hits[2][1] < hits[1][1]

    def test_a_query_of_stop_words_finds_nothing(self, index: KeywordIndex) -> None:
        ok(index.upsert(STORE, [entry("a", "what is the name of the cat and where is it"), *filler()]))
        for query in ["the", "what is the", "And, OR; not!", "where is it", "a b c x y z", "I", "the ?"]:
            assert search(index, query) == [], query

    def test_stop_words_do_not_change_the_ranking(self, index: KeywordIndex) -> None:
        ok(
            index.upsert(
                STORE,
                [entry("cat", "the cat sat on the mat", "t1"), entry("dog", "a dog on a log", "t2"), *filler()],
            )
        )
        assert search(index, "where is the cat and the dog?") == search(index, "cat dog")
        assert ids_of(search(index, "the cat")) == ["cat"]
