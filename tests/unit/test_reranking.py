"""The second-stage ranker: its features, its model arithmetic, and that it only ever reorders what it is given."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest

from agent_memory.domain.context import SearchPolicy
from agent_memory.domain.search import reranking
from agent_memory.domain.search.ranker_weights import fitted_model
from agent_memory.domain.search.reranking import (
    FEATURES,
    Candidates,
    dominance_capped,
    features,
    model_score,
    rerank,
)


def found(**overrides: object) -> Candidates:
    texts = {
        "a": "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
        "b": "Melanie: That sounds great! What did you do there?",
        "c": "Caroline: We talked about adoption agencies and counselling courses.",
        "d": "Melanie: I painted a sunrise over the lake last week.",
    }
    values: dict[str, object] = {
        "query": "What did Caroline research about adoption?",
        "first": [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)],
        "texts": texts,
        "similarity": {"a": 0.5, "b": 0.3, "c": 0.45, "d": 0.1, "z": 0.6},
        "keyword": {"c": 1.0, "a": 0.4},
        "links": {"a": (None, "b"), "b": ("a", "c"), "c": ("b", "z"), "d": (None, None)},
    }
    values.update(overrides)
    return Candidates(**values)  # type: ignore[arg-type]


def test_one_row_of_every_feature_per_candidate_in_the_first_stage_order() -> None:
    rows = features(found())
    assert len(rows) == 4 and all(len(row) == len(FEATURES) for row in rows)
    named = [dict(zip(FEATURES, row, strict=True)) for row in rows]
    a, b, c, d = named
    assert a["first_rank"] == 1.0 and d["first_rank"] == 0.25
    assert a["cos_gap"] == 0.0 and d["cos_gap"] == pytest.approx(-0.4)
    assert c["neighbour_cos"] == pytest.approx(0.3 + 0.6)  # a neighbour outside the candidates still lends its cosine
    assert c["keyword_rank"] == 1.0 and b["keyword_rank"] == pytest.approx(1 / 101)
    assert c["coverage"] == pytest.approx(2 / 3)  # "research" is not in it; "caroline" and "adoption" are
    assert a["names"] == 1.0 and d["names"] == 0.0
    assert b["is_question"] == 1.0 and a["is_question"] == 0.0
    assert d["threaded"] == 0.0 and a["threaded"] == 1.0
    assert d["neighbour_cos_gap"] == -1.0
    assert a["shared_with_best"] == 1.0


def test_the_model_is_a_logistic_score_over_features_and_their_pairwise_products() -> None:
    """model_score equals the numpy form the bench fits (bench/research/ltr.py: clip to the fitted range,
    standardise, expand, then a dot product)."""
    row = features(found())[2]
    model = fitted_model()
    inside = np.clip(np.array(row), model.low, model.high)
    x = (inside - np.array(model.mean)) / np.array(model.spread)
    pairs = [x[a] * x[b] for a in range(len(x)) for b in range(a, len(x))]
    expected = float(np.dot(np.concatenate([x, pairs]), model.weights) + model.bias)
    assert model_score(row) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert len(model.weights) == len(FEATURES) + len(FEATURES) * (len(FEATURES) + 1) // 2


# rows of FEATURES and the logits the fitted model gives them (bench/research/ltr.py --write of 2026-11-27, the
# model refitted without keyword feedback): the data file must give exactly these, so a refit changes them here
FIXED_ROWS = [
    ([0.0] * 20, -7.261082241578206),
    (
        [
            0.82,
            -0.03,
            1.1,
            0.7,
            0.64,
            0.5,
            0.33,
            0.25,
            0.6,
            0.5,
            2.3,
            0.0,
            1.0,
            4.0,
            0.55,
            0.33,
            0.4,
            -0.1,
            0.2,
            0.15,
        ],
        -2.2229286303887603,
    ),
    (
        [5.0, -5.0, 9.0, 2.0, 3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 1.0, 40.0, 1.0, 1.0, 2.0, 3.0, 1.0, 1.0],
        -12.959179112939044,
    ),
    (
        [
            0.41,
            -0.4,
            0.0,
            0.0,
            0.2,
            0.0909,
            0.1,
            0.0099,
            0.25,
            0.0,
            1.6,
            1.0,
            0.0,
            2.0,
            0.1,
            0.0,
            0.0,
            -1.0,
            0.05,
            0.07,
        ],
        -6.350999074691034,
    ),
]


@pytest.mark.parametrize(("row", "logit"), FIXED_ROWS)
def test_the_weights_read_from_package_data_score_as_the_generated_module_did(row: list[float], logit: float) -> None:
    # to the last few bits only: Python 3.12's sum() adds floats with compensation, 3.11's does not
    assert model_score(row) == pytest.approx(logit, rel=1e-12, abs=1e-12)


def test_the_model_was_fitted_on_the_features_the_ranker_computes() -> None:
    """Renaming, reordering or adding a feature without refitting (bench/research/ltr.py --write) fails here."""
    model = fitted_model()
    assert model.features == FEATURES
    assert len(model.low) == len(model.high) == len(model.mean) == len(model.spread) == len(FEATURES)


def test_reranking_permutes_its_candidates_and_scores_them_as_probabilities() -> None:
    ranked = rerank(found())
    assert sorted(i for i, _ in ranked) == ["a", "b", "c", "d"]
    assert all(0.0 < score < 1.0 for _, score in ranked)
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert rerank(found(first=[])) == []


def test_equal_scores_keep_the_first_stage_order(monkeypatch: pytest.MonkeyPatch) -> None:
    model = fitted_model()
    flat = attrs.evolve(model, weights=tuple(0.0 for _ in model.weights))
    monkeypatch.setattr(reranking, "fitted_model", lambda: flat)
    reordered = [("d", 0.9), ("b", 0.8), ("a", 0.7), ("c", 0.6)]
    assert [i for i, _ in rerank(found(first=reordered))] == ["d", "b", "a", "c"]
    assert all(score == pytest.approx(1 / (1 + math.exp(-model.bias))) for _, score in rerank(found()))


def test_ties_in_the_first_stage_share_a_rank_so_ids_never_decide() -> None:
    tied = [("a", 0.9), ("b", 0.5), ("c", 0.5), ("d", 0.1)]
    rows = {
        i: dict(zip(FEATURES, row, strict=True)) for (i, _), row in zip(tied, features(found(first=tied)), strict=True)
    }
    assert rows["b"]["first_rank"] == rows["c"]["first_rank"] == 0.5
    assert rows["d"]["first_rank"] == 0.25


def test_the_ranker_is_on_by_default() -> None:
    assert SearchPolicy().rerank is True


def test_no_candidate_passes_one_that_beats_it_on_both_sides() -> None:
    """The model may prefer b, but a is at least as good by meaning and by words: b is capped at a's score."""
    capped = dominance_capped([0.2, 0.9, 0.5], [(0.8, 1.0), (0.3, 0.0), (0.9, 0.0)])
    assert capped == [0.2, 0.2, 0.5]  # b (0.3, 0.0) is beaten by a and by c; c is not beaten by a (more cosine)
    assert dominance_capped([0.4, 0.6], [(0.5, 0.5), (0.5, 0.5)]) == [0.4, 0.6]  # equal on both sides: free


def test_a_memory_that_matches_nothing_never_outranks_one_that_matches_both() -> None:
    """Near-identical best hits push several features far outside what the model was fitted on; the cap
    keeps a one-letter memory below every memory that beats it on both sides."""
    walruses = {f"w{n}": f"Walrus fact number {n} about tusks and ice." for n in range(5)}
    texts = {**walruses, "x": "x", "n": "The user edits code in Neovim with a dark theme."}
    first = [*((f"w{n}", 0.88 - n / 100) for n in range(5)), ("x", 0.09), ("n", 0.08)]
    similarity = {**{f"w{n}": 0.76 - n / 100 for n in range(5)}, "x": 0.18, "n": 0.16}
    keyword = {f"w{n}": 1.0 for n in range(5)}
    ranked = rerank(
        Candidates(
            query="walrus tusks",
            first=first,
            texts=texts,
            similarity=similarity,
            keyword=keyword,
            links={},
        )
    )
    assert {i for i, _ in ranked[:5]} == set(walruses)


def test_features_are_held_to_the_range_the_model_was_fitted_on() -> None:
    row = features(found())[0]
    far = [v * 1000 for v in row]
    model = fitted_model()
    held = [min(max(v, low), high) for v, low, high in zip(far, model.low, model.high, strict=True)]
    assert model_score(far) == pytest.approx(model_score(held))
    assert far != held


def test_a_memory_longer_than_any_the_model_was_fitted_on_is_not_sunk_under_its_first_stage_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 48: a long note matched exactly by its last sentence scored 0.003 and fell below ten alike notes; past
    the fitted length the model may lift a memory over its first-stage place but not sink it under."""
    long_note = " ".join(f"The crate of violins bound for Oslo was weighed at the port on day {n}." for n in range(60))
    texts = {**found().texts, "long": long_note}
    similarity = {**found().similarity, "long": 0.99}
    first = [("a", 0.9), ("long", 0.85), ("b", 0.8), ("c", 0.7), ("d", 0.6)]
    rows = features(found(first=first, texts=texts, similarity=similarity))
    assert rows[1][FEATURES.index("length")] > fitted_model().high[FEATURES.index("length")]
    assert rows[0][FEATURES.index("length")] <= fitted_model().high[FEATURES.index("length")]
    model = fitted_model()
    # a model that reads length as a reason to sink a memory: the longest last, the rest by their first-stage order
    length = FEATURES.index("length")
    sinking = attrs.evolve(
        model, weights=tuple(-50.0 if n == length else 0.0 for n in range(len(model.weights))), bias=0.0
    )
    monkeypatch.setattr(reranking, "fitted_model", lambda: sinking)
    for position in range(5):  # wherever the first stage puts it, it stays at least there
        placed = [p for p in first if p[0] != "long"]
        placed.insert(position, ("long", 0.85))
        ranked = rerank(found(first=placed, texts=texts, similarity=similarity))
        assert [i for i, _ in ranked].index("long") <= position
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    # one the model lifts keeps the model's place (the guard never lowers it): length read as a reason to rise
    lifting = attrs.evolve(sinking, weights=tuple(-w for w in sinking.weights))
    monkeypatch.setattr(reranking, "fitted_model", lambda: lifting)
    ranked = rerank(found(first=[*first[:1], *first[2:], first[1]], texts=texts, similarity=similarity))
    assert ranked[0][0] == "long"


def test_a_candidates_words_are_kept_only_for_short_texts_and_read_the_same_either_way() -> None:
    reranking._kept_words.cache_clear()
    short = "Caroline adopted a dog named Max in Paris last spring."
    long = " ".join(["Melanie painted the sunrise over the lake"] * 40)  # past KEPT_TEXT_CHARS
    assert len(long) > reranking.KEPT_TEXT_CHARS >= len(short)
    for text in (short, long, short, long):
        words, own, lowered = reranking.text_words(text)
        assert (words, own, lowered) == reranking._read_words(text)
        assert own == frozenset(words)
    assert "adopte" in reranking.text_words(short)[1] and "caroline" in reranking.text_words(short)[2]
    assert reranking._kept_words.cache_info().currsize == 1  # the long text was read each time, never kept
    assert reranking._kept_words.cache_info().hits == 3
