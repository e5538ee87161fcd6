"""Per-hit relevance: a model's own reading of its similarities, which hits an answer keeps, broad questions."""

from __future__ import annotations

import math

from attrs import field, frozen

from agent_memory.domain.search.tokens import content_words

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


def _spread(value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"a relevance rule's spread is a similarity between 0 and 1 (or none), got {value}")


@frozen
class RelevanceRule:
    """One model's reading of its own cosine similarities, calibrated on labelled questions (issue 40;
    bench/relevance_calibration.py writes it into the model directory, the embedder adapter reads it).

    `unrelated`: the similarity questions nothing answers typically reach (relevance 0 at and under it);
    `related`: the similarity of a typical hit that answers its question (relevance 1 at and over it);
    `floor`: the similarity the best hit needs for anything to be related (else the answer is empty);
    `keep`: a hit under it is not related to the question and leaves the answer; `spread`: a hit more than
    this under the answer's best hit leaves it too (None: no such cut). All are this model's cosines: another
    model reads the same texts on another scale, so it carries its own numbers."""

    unrelated: float = field(validator=_fraction)
    keep: float = field(validator=_fraction)
    related: float = field(validator=_fraction)
    spread: float | None = field(default=None, validator=lambda rule, attribute, value: _spread(value))
    floor: float = field(default=0.0, validator=_fraction)

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


# the rule a model directory without relevance.json gets: the figure is the similarity itself, and no hit is
# dropped for its own sake (the min_similarity setting still empties an answer whose best hit is under it)
UNCALIBRATED = RelevanceRule(unrelated=0.0, keep=0.0, related=1.0)


def is_broad(question: str) -> bool:
    """Whether a question names no subject of its own ("what do you know about me?"): no content word is left
    once stop words and the words of BROAD_WORDS are gone."""
    return not [word for word in content_words(question) if word not in BROAD_WORDS]
