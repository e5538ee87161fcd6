"""Keyword pseudo-relevance feedback (RM3) for independent memories: the best hits' telling words searched again.

An independent memory (saved without a thread: a distilled fact, a note) has no neighbours to lend it
context, so a question that words its answer differently misses it on the keyword side. The fix is
to read the words of the best independent hits of the first ranking and look for them too
(BENCHMARKS.md, issue 13: +1.8 points recall@10 on LoCoMo facts by leave-one-conversation-out).
Memories of a thread keep today's ranking: when none of the best hits is independent nothing runs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from agent_memory.domain.search.tokens import content_words

FEEDBACK_MEMORIES = 5  # the best hits of the first ranking that feedback reads (only the independent ones)
EXPANSION_TERMS = 10  # words the feedback adds to the keyword side
EXPANSION_WEIGHT = 1.0  # the expansion's keyword score counts this much beside the question's own


def feedback_ranks(ranking: Sequence[tuple[str, float]], independent: Collection[str]) -> list[tuple[str, int]]:
    """The independent memories among the best FEEDBACK_MEMORIES of a ranking, each with its rank (0 best).

    Tied scores share a rank and a tie at the cut comes in whole, so the ids' order (random) never
    changes the feedback; a memory scored 0 matched nothing and is no evidence of anything.
    """
    chosen: list[tuple[str, int]] = []
    rank = 0
    for position, (memory_id, score) in enumerate(ranking):
        if position > 0 and score < ranking[position - 1][1]:
            rank = position  # a tie keeps the rank of the first of its scores
        if rank >= FEEDBACK_MEMORIES or score <= 0:
            break
        if memory_id in independent:
            chosen.append((memory_id, rank))
    return chosen


def expansion_query(
    query: str, feedback: Sequence[tuple[str, int]], pool: Sequence[str], count: int = EXPANSION_TERMS
) -> str:
    """The `count` words that best tell the feedback texts apart from the pool, joined by spaces.

    `feedback` holds (text, rank) pairs, rank 0 the best; weight(w) = Σ over feedback text d at rank r of
    1/(r+1) · tf(w, d)/|d| · log(N/df(w)), with df and N counted over the pool (the candidates the first
    ranking saw: the feedback texts are among them). The query's own words are left out: the first
    search had them. Words found in every pool text weigh nothing and are never chosen.
    """
    asked = set(content_words(query))
    frequency: Counter[str] = Counter()
    for text in pool:
        frequency.update(set(content_words(text)))
    size = max(len(pool), 1)
    weight: dict[str, float] = {}
    for text, rank in feedback:
        words = content_words(text)
        for word, times in Counter(words).items():
            if word in asked:
                continue
            rarity = math.log(size / max(frequency[word], 1))
            weight[word] = weight.get(word, 0.0) + times / len(words) / (rank + 1) * rarity
    best = sorted((pair for pair in weight.items() if pair[1] > 0), key=lambda pair: (-pair[1], pair[0]))
    return " ".join(word for word, _ in best[:count])


def expanded_keyword(
    keyword: Mapping[str, float], expansion: Mapping[str, float], independent: Collection[str]
) -> dict[str, float]:
    """The keyword side with the expansion: an independent memory's score plus EXPANSION_WEIGHT times its
    expansion score, every score then divided by the best so the best hit is 1 again (as bm25 / best)."""
    merged = dict(keyword)
    for memory_id, score in expansion.items():
        if memory_id in independent:
            merged[memory_id] = merged.get(memory_id, 0.0) + EXPANSION_WEIGHT * score
    best = max(merged.values(), default=0.0)
    return {i: s / best for i, s in merged.items()} if best > 0 else merged
