"""Second-stage ranking of the hybrid candidates: a learnt model over signals every store has (issue 13).

No cross-encoder installs offline from a package (BENCHMARKS.md, "Stronger dense side and cross-encoders"),
so the second stage reads what the first one already gathered: both sides' scores and ranks, the
thread neighbours' cosines and keyword scores, how much of the question a memory's words cover (and
the question's names and word pairs), the memory's length, whether it is itself a question, and how
much it shares with the first ranking's best memories. A logistic model over these features and their
pairwise products (its weights are package data, `ranker_weights.json`, fitted by `bench/research/ltr.py` on
both LoCoMo protocols at once, checked by leave-one-conversation-out) scores every candidate; ties keep the first ranking's
order. Three guards keep it from extrapolating on data unlike LoCoMo: features are held to their training
range, no candidate is scored above one that beats it by DOMINANCE_MARGIN on both first-stage
signals, and a memory longer than any it was fitted on takes the better of its learnt and its first-stage
place (issue 48). It only reorders candidates that already passed every filter, so it can never surface a
memory the search would not return.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections import Counter
from collections.abc import Mapping, Sequence

from attrs import frozen

from agent_memory.domain.search.hybrid import DENSE_WEIGHT, NEIGHBOUR_COSINE
from agent_memory.domain.search.ranker_weights import RankerModel, fitted_model
from agent_memory.domain.search.tokens import STOP_WORDS, WORD, content_words

FEATURES = (
    "cos",  # the memory's cosine to the question
    "cos_gap",  # its cosine minus the best candidate's
    "neighbour_cos",  # the sum of its thread neighbours' cosines
    "keyword",  # bm25 / best, the question's words
    "fused",  # the first stage's fused score
    "first_rank",  # 1 / (1 + rank) in the first stage's final ranking
    "dense_rank",  # 1 / (1 + rank) by cosine among the candidates
    "keyword_rank",  # 1 / (1 + rank) among the keyword hits (1/101 when not one)
    "coverage",  # share of the question's words (stemmed) the memory has
    "names",  # share of the question's capitalised words the memory has
    "length",  # log(1 + the memory's content words)
    "is_question",  # the memory ends with "?"
    "threaded",  # the memory has a thread neighbour
    "question_length",  # the question's distinct content words
    "rare_coverage",  # coverage weighted by rarity among the candidates
    "word_pairs",  # share of the question's adjacent word pairs the memory has
    "neighbour_keyword",  # the best keyword score of a thread neighbour
    "neighbour_cos_gap",  # the best neighbour cosine minus the best candidate's (−1 when none)
    "shared_with_best",  # rarity-weighted share of its words the first ranking's best memory has (mean on ties)
    "shared_with_top5",  # the same, averaged over the first ranking's best five (ties at the cut come in)
)
_COS, _NEIGHBOUR_COS, _KEYWORD, _LENGTH = (FEATURES.index(n) for n in ("cos", "neighbour_cos", "keyword", "length"))
DOMINANCE_MARGIN: float | None = 0.2  # how much better on both sides a dominator must be (None: no cap)
MISSING_RANK = 100  # the rank a memory gets on a side that did not return it
SCORE_DIGITS = 6  # scores equal to this many decimals share a rank (tied_ranks)
TEXTS_KEPT = 2048  # candidates' texts whose words are kept read (text_words): about twenty searches' worth
KEPT_TEXT_CHARS = 1000  # the longest text whose words are kept


@frozen
class Candidates:
    """What the first stage knows about one search: its final order and the signals behind it."""

    query: str
    first: Sequence[tuple[str, float]]  # the first stage's final ranking with its scores, best first
    texts: Mapping[str, str]  # content per candidate
    similarity: Mapping[str, float]  # cosine per candidate and per thread neighbour
    keyword: Mapping[str, float]  # bm25 / best per keyword hit, the question's words
    links: Mapping[str, tuple[str | None, str | None]]  # thread neighbours (before, after)


def stem(word: str) -> str:
    """A language-light stem: a word's first six letters ("adopt", "adoption" and "adopting" meet)."""
    return word[:6]


def tied_ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """Each id's rank by score, best 0, tied scores sharing the rank of the first of them: ids (random) never
    decide a feature. Scores are compared to SCORE_DIGITS places: a cosine read back from the store's query
    or computed for a keyword hit differs in the last float32 digits, and that must not move a rank."""
    ranks: dict[str, int] = {}
    ordered = sorted(((i, round(score, SCORE_DIGITS)) for i, score in scores.items()), key=lambda pair: -pair[1])
    for position, (memory_id, score) in enumerate(ordered):
        tied = position > 0 and score == ordered[position - 1][1]
        ranks[memory_id] = ranks[ordered[position - 1][0]] if tied else position
    return ranks


def text_words(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    """A candidate's words as the features read them: its content words stemmed (in order, repeats kept), their
    set, and all its words lower-cased (for names). Kept for short texts: the same memories come back search after
    search, and reading their words was a third of the second stage's time; a long one is read each time (the
    cache stays a few megabytes whatever the memories)."""
    return _kept_words(text) if len(text) <= KEPT_TEXT_CHARS else _read_words(text)


def _read_words(text: str) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    words = tuple(stem(w) for w in content_words(text))
    return words, frozenset(words), frozenset(w.lower() for w in WORD.findall(text))


_kept_words = functools.lru_cache(maxsize=TEXTS_KEPT)(_read_words)


def features(found: Candidates) -> list[list[float]]:
    """One row of FEATURES per candidate, in the first stage's order."""
    order = [memory_id for memory_id, _ in found.first]
    if not order:
        return []
    cos = {i: found.similarity.get(i, 0.0) for i in order}
    best_cos = max(cos.values())
    first_rank = tied_ranks(dict(found.first))
    dense_rank = tied_ranks(cos)
    keyword_rank = tied_ranks(found.keyword)
    question_words = [stem(w) for w in content_words(found.query)]
    asked = set(question_words)
    pairs = set(itertools.pairwise(question_words))
    names = {w.lower() for w in WORD.findall(found.query) if w[0].isupper() and len(w) > 1} - STOP_WORDS
    read = {i: text_words(found.texts[i]) for i in order}
    tokens = {i: words for i, (words, _, _) in read.items()}
    stems = {i: own for i, (_, own, _) in read.items()}
    frequency: Counter[str] = Counter()
    for distinct in stems.values():
        frequency.update(distinct)
    rarity = {t: math.log((len(order) + 1) / (n + 0.5)) for t, n in frequency.items()}
    asked_rarity = {t: math.log((len(order) + 1) / (frequency.get(t, 0) + 0.5)) for t in asked}
    asked_total = sum(asked_rarity.values()) or 1.0

    own_rarity = {i: sum(rarity[t] for t in stems[i]) or 1.0 for i in order}

    def shared(a: str, b: str) -> float:
        if a == b:
            return 1.0
        return sum(rarity[t] for t in stems[a] & stems[b]) / own_rarity[a]

    best = [i for i in order if first_rank[i] == 0]
    head = [i for i in order if first_rank[i] < 5]
    rows = []
    for i in order:
        before, after = found.links.get(i, (None, None))
        neighbours = [n for n in (before, after) if n is not None]
        text = found.texts[i]
        own = stems[i]
        words = tokens[i]
        neighbour_cos = sum(found.similarity.get(n, 0.0) for n in neighbours)
        keyword = found.keyword.get(i, 0.0)
        lowered = read[i][2]
        rows.append(
            [
                cos[i],
                cos[i] - best_cos,
                neighbour_cos,
                keyword,
                DENSE_WEIGHT * (cos[i] + NEIGHBOUR_COSINE * neighbour_cos) + (1 - DENSE_WEIGHT) * keyword,
                1.0 / (1 + first_rank[i]),
                1.0 / (1 + dense_rank[i]),
                1.0 / (1 + keyword_rank.get(i, MISSING_RANK)),
                len(asked & own) / len(asked) if asked else 0.0,
                len(names & lowered) / len(names) if names else 0.0,
                math.log1p(len(words)),
                1.0 if text.rstrip().endswith("?") else 0.0,
                1.0 if neighbours else 0.0,
                float(len(asked)),
                sum(asked_rarity[t] for t in asked & own) / asked_total,
                len(pairs & set(itertools.pairwise(words))) / len(pairs) if pairs else 0.0,
                max((found.keyword.get(n, 0.0) for n in neighbours), default=0.0),
                max((found.similarity.get(n, 0.0) - best_cos for n in neighbours), default=-1.0),
                sum(shared(i, j) for j in best) / len(best),
                sum(shared(i, j) for j in head) / len(head),
            ]
        )
    return rows


def model_score(row: Sequence[float], model: RankerModel | None = None) -> float:
    """The model's logit for one row (the fitted model unless one is given): features held to the range the
    model was fitted on, standardised, their weights, then each pair's product's (pairs a ≤ b in row order after
    the linear weights, as `bench/research/ltr.py` fits them)."""
    model = fitted_model() if model is None else model
    bounds = zip(row, model.low, model.high, model.mean, model.spread, strict=True)
    x = [(min(max(v, low), high) - m) / s for v, low, high, m, s in bounds]  # never past what it was fitted on
    weights = model.weights
    size = len(x)
    total: float = model.bias + sum(map(operator.mul, weights[:size], x))  # each sum runs in C, in the fitted order
    at = size
    for a in range(size):
        total += x[a] * sum(map(operator.mul, weights[at : at + size - a], x[a:]))
        at += size - a
    return total


def rerank(found: Candidates) -> list[tuple[str, float]]:
    """The candidates by the model's probability that each holds what the question asks, best first, never
    above a candidate that beats them on both sides (`dominance_capped`); a memory longer than any the model was
    fitted on takes the better of its place by the model and its place in the first stage (`beyond_length`)."""
    rows = features(found)
    model = fitted_model()
    probabilities = [1.0 / (1.0 + math.exp(-max(min(model_score(row, model), 50.0), -50.0))) for row in rows]
    sides = [signals(row) for row in rows]
    capped = probabilities if DOMINANCE_MARGIN is None else dominance_capped(probabilities, sides, DOMINANCE_MARGIN)
    learnt = sorted(range(len(rows)), key=lambda n: (-capped[n], n))
    beyond = beyond_length(rows, model)
    place = {n: position for position, n in enumerate(learnt)}
    # a long memory takes the better of its two places; at a tie it goes first (the model may not bury it)
    order = sorted(range(len(rows)), key=lambda n: (min(place[n], n), 0, n) if n in beyond else (place[n], 1, n))
    scores = [capped[n] for n in order]
    for position in range(len(order) - 2, -1, -1):  # a lifted memory scores as what it passed: scores never rise
        scores[position] = max(scores[position], scores[position + 1])
    return [(found.first[n][0], score) for n, score in zip(order, scores, strict=True)]


def beyond_length(rows: Sequence[Sequence[float]], model: RankerModel) -> set[int]:
    """The rows of memories longer than any the model was fitted on (its `length` over the fitted range): its text
    features (coverage, word pairs, words shared with the best) are read over a whole long text, a combination it
    never saw, and a 700-word note matched exactly by one sentence scored 0.003 (issue 48): the model may lift
    it over its first-stage place, not sink it under."""
    return {n for n, row in enumerate(rows) if row[_LENGTH] > model.high[_LENGTH]}


def signals(row: Sequence[float]) -> tuple[float, float]:
    """A row's two first-stage signals: the dense score (own cosine + neighbours' share) and the keyword score."""
    return row[_COS] + NEIGHBOUR_COSINE * row[_NEIGHBOUR_COS], row[_KEYWORD]


def dominance_capped(scores: Sequence[float], sides: Sequence[tuple[float, float]], margin: float = 0.0) -> list[float]:
    """Each score capped at the capped score of every candidate that beats it by at least `margin` on both
    sides (and strictly on one): the learnt model reorders what the two signals leave open, and never lifts
    a memory over one that clearly matches the question better by meaning and by words (a model fitted on
    conversations must not extrapolate its way past that on data unlike them). Dominators always have the
    larger sum, so one pass in that order suffices; a tie in capped score keeps the dominator first (it is
    ahead in the first stage, the sort's secondary key)."""
    by_sum = sorted(range(len(scores)), key=lambda n: -(sides[n][0] + sides[n][1]))
    capped = list(scores)
    done: list[int] = []
    for n in by_sum:
        dense, keyword = sides[n]
        for m in done:
            if capped[m] >= capped[n]:
                continue  # it could not lower this score: skip the comparison
            other_dense, other_keyword = sides[m]
            ahead = other_dense >= dense + margin and other_keyword >= keyword + margin
            if ahead and (other_dense > dense or other_keyword > keyword):
                capped[n] = capped[m]
        done.append(n)
    return capped
