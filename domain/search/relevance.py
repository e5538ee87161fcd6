"""Per-hit relevance: a model's own reading of its similarities, which hits an answer keeps, broad questions."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

from attrs import field, frozen

from agent_memory.domain.search.tokens import content_words

Hit = TypeVar("Hit")
STEM = 6  # the letters a word is compared on ("adoption" and "adopting" meet), after a plural's "s"

# words that name no subject: a question made only of these (and stop words) asks about the scope as a whole
BROAD_WORDS = frozenset(
    {
        "know",
        "known",
        "knows",
        "remember",
        "remembered",
        "recall",
        "tell",
        "told",
        "everything",
        "anything",
        "something",
        "stuff",
        "things",
        "thing",
        "summary",
        "summarise",
        "summarize",
        "overview",
        "give",
        "show",
        "list",
        "talked",
        "talk",
        "discussed",
        "said",
        "far",
        "me",
        "myself",
        "us",
        "user",
        "memories",
        "memory",
        "stored",
        "saved",
        "important",
        "need",
        "should",
        "new",
        "lately",
        "recently",
        "recent",
        "today",
        "now",
        "shift",
        "day",
        "week",
        "session",
    }
)


def _fraction(_: object, attribute: object, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"a relevance rule's numbers are similarities between 0 and 1, got {value}")


def _optional(_: object, attribute: object, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"a relevance rule's spread, alone and close are between 0 and 1 (or none), got {value}")


def _multiple(_: object, attribute: object, value: float | None) -> None:
    if value is not None and not 0.0 < value <= 100.0:
        raise ValueError(f"a relevance rule's relative is a positive multiple of the answer's spread, got {value}")


@frozen
class RelevanceRule:
    """One model's reading of its own cosine similarities, and the evidence a hit needs to stay in an answer,
    calibrated on labelled questions (issue 40; bench/relevance_calibration.py writes it into the model directory,
    the embedder adapter reads it).

    `unrelated`: the similarity questions nothing answers typically reach (relevance 0 at and under it);
    `related`: the similarity of a typical hit that answers its question (relevance 1 at and over it);
    `floor`: the similarity the best hit needs for anything to be related (else the answer is empty);
    `keep`: a hit under it is not related to the question and leaves the answer; `spread`: a hit more than
    this under the answer's best hit leaves it too (None: no such cut), unless `gap`, `spared` or `relative` spares
    it (issue 48: a run of similarities down from the best with no step wider than `gap`, `spared` of the subject
    words, or within `relative` times the answer's own spread of the best). Then the evidence a hit over those lines
    needs (None `alone`: none, the similarity is enough); a hit with `exempt` of the subject words is cut by neither
    line (its words are its evidence): words — at least `cover` of the question's subject words
    (`subject_words`) are in it — or a similarity of `alone` on its own, or one within `close` of the best hit's.
    An answer none of whose hits has words or `alone` is empty. Similarities are this model's cosines: another
    model reads the same texts on another scale, so it carries its own numbers."""

    unrelated: float = field(validator=_fraction)
    keep: float = field(validator=_fraction)
    related: float = field(validator=_fraction)
    spread: float | None = field(default=None, validator=_optional)
    floor: float = field(default=0.0, validator=_fraction)
    alone: float | None = field(default=None, validator=_optional)
    cover: float = field(default=1.0, validator=_fraction)
    close: float = field(default=0.0, validator=_fraction)
    # issue 48: what spares a hit the `spread` cut (None: nothing). `gap`: a hit joined to the best by a run of the
    # answer's similarities with no step wider than this (the answer's own spread, not one distance from the best);
    # `spared`: a hit with at least this share of the question's subject words (keyword evidence)
    gap: float | None = field(default=None, validator=_optional)
    spared: float | None = field(default=None, validator=_optional)
    # `relative`: a hit within this many times the answer's own spread (its best less its median similarity, over
    # `keep`) of the best: the cut read on how far apart this answer's similarities lie, not on one distance
    relative: float | None = field(default=None, validator=_multiple)
    # `exempt`: a hit with at least this share of the question's subject words stays whatever its similarity (neither
    # `keep` nor `spread` cuts it): the keyword evidence keeps it, not a distance (issue 48; None: no such exemption)
    exempt: float | None = field(default=None, validator=_optional)

    def relevance(self, similarity: float) -> float:
        """The one figure a hit shows, in [0, 1]: 0 as close as unrelated text gets, 1 as close as what answers a
        question, linear between (a similarity, read on this model's scale)."""
        width = self.related - self.unrelated
        if width <= 0:
            return 1.0 if similarity >= self.related else 0.0
        return round(min(max((similarity - self.unrelated) / width, 0.0), 1.0), 4)

    def line(self, best: float) -> float:
        """The similarity a hit needs in an answer whose best hit has `best` (a rule that keeps every similarity
        and has no spread cuts nothing, not even a negative cosine: UNCALIBRATED thins no answer)."""
        if self.keep <= 0.0 and self.spread is None:
            return -math.inf
        return self.keep if self.spread is None else max(self.keep, best - self.spread)

    def run_line(self, near: Sequence[float]) -> float:
        """The lowest similarity reached down from the best through the answer's similarities (at or over `keep`)
        without a step wider than `gap` (inf: no `gap`, nothing spared this way)."""
        if self.gap is None:
            return math.inf
        ordered = sorted((value for value in near if value >= self.keep), reverse=True)
        reached = ordered[0] if ordered else math.inf
        for higher, lower in itertools.pairwise(ordered):
            if higher - lower > self.gap:
                break
            reached = lower
        return reached

    def relative_line(self, near: Sequence[float]) -> float:
        """The similarity `relative` times the answer's own spread under its best, never under `keep` (inf: no
        `relative`, nothing spared this way); the spread is the best less the median of the similarities at or over
        `keep`."""
        over = [value for value in near if value >= self.keep]
        if self.relative is None or not over:
            return math.inf
        best = max(over)
        return max(self.keep, best - self.relative * (best - statistics.median(over)))

    def _spared(self, share: float) -> bool:
        return self.spared is not None and share >= self.spared > 0.0

    def _exempt(self, share: float) -> bool:
        return self.exempt is not None and share >= self.exempt > 0.0

    def related_hits(
        self, hits: Sequence[Hit], similarity: Callable[[Hit], float], words: Callable[[Hit], float]
    ) -> list[Hit] | None:
        """The hits that stay, in their order, or None when nothing in the answer is related to the question:
        each over the line (`line`) with evidence (words, `alone`, or `close` to the best); the answer needs one
        with words or `alone`. `similarity` is a hit's own cosine or a thread neighbour's (a reply is as related
        as what it answers), as the search judges it; `words` the share of the question's subject words it has
        (`coverage`)."""
        near = [similarity(hit) for hit in hits]
        best = max(near, default=-math.inf)
        line = self.line(best)
        if line > self.keep and (self.gap is not None or self.spared is not None or self.relative is not None):
            run = min(self.run_line(near), self.relative_line(near))
            over = [
                value >= line or value >= run or (value >= self.keep and self._spared(words(hit)))
                for hit, value in zip(hits, near, strict=True)
            ]
        else:
            over = [value >= line for value in near]
        if self.exempt is not None:
            over = [keep or self._exempt(words(hit)) for hit, keep in zip(hits, over, strict=True)]
        if self.alone is None:
            return [hit for hit, keep in zip(hits, over, strict=True) if keep]
        kept: list[Hit] = []
        evident = False
        for hit, value, keep in zip(hits, near, over, strict=True):
            if not keep:
                continue
            worded = words(hit) >= self.cover > 0.0
            if worded or value >= self.alone or value >= best - self.close:
                kept.append(hit)
                evident = evident or worded or value >= self.alone
        return kept if evident else None


def subject_words(question: str) -> frozenset[str]:
    """The words a question names its subject by, compared by `stem`: its content words, less the words that name
    no subject (BROAD_WORDS: "know", "me", "user", …)."""
    return frozenset(stem(word) for word in content_words(question) if word not in BROAD_WORDS)


def coverage(asked: frozenset[str], text: str) -> float:
    """The share of a question's subject words (`subject_words`) a text has, 0 to 1."""
    if not asked:
        return 0.0
    return len(asked & {stem(word) for word in content_words(text)}) / len(asked)


def stem(word: str) -> str:
    """A language-light stem: a plural's "s" gone, then the first STEM letters ("themes" meets "theme", "adopting"
    meets "adoption")."""
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:STEM]


# the rule a model directory without relevance.json gets: the figure is the similarity itself, and no hit is
# dropped for its own sake (the min_similarity setting still empties an answer whose best hit is under it)
UNCALIBRATED = RelevanceRule(unrelated=0.0, keep=0.0, related=1.0)


def is_broad(question: str) -> bool:
    """Whether a question names no subject of its own ("what do you know about me?"): no content word is left
    once stop words and the words of BROAD_WORDS are gone."""
    return not [word for word in content_words(question) if word not in BROAD_WORDS]
