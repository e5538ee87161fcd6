"""Keyword terms for Qdrant's sparse vectors: words folded and stemmed, hashed to indices, weighted as in BM25F."""

from __future__ import annotations

import hashlib
import threading
import unicodedata
from collections import Counter
from functools import lru_cache

import snowballstemmer
from qdrant_client import models

from agent_memory.domain.search.tokens import content_words, query_terms

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

# --- terms ------------------------------------------------------------------------------------

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


def sparse_vector(weights: dict[int, float]) -> models.SparseVector:
    """The weights as a sparse vector, indices in ascending order."""
    indices = sorted(weights)
    return models.SparseVector(indices=indices, values=[weights[index] for index in indices])
