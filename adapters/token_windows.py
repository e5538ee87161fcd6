"""How a long text is cut into the model's windows, on the tokenizer alone: its later parts, and whether it has any."""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_memory.adapters.model_directory import ModelSpec

# A long text's later parts: windows of PART_TOKENS (or the model's window, if shorter), sharing PART_OVERLAP tokens
# with the part before, so a sentence cut at one part's edge is whole in the next. Shorter than MiniLM's 256: a fact
# of one sentence weighs twice as much in a part's mean (a paraphrase of the last sentence of a 1,500-word note:
# cosine 0.39 to its 128-token part, 0.25 to its 256-token one; tests/e2e/test_long_memories.py), and MiniLM was
# trained on 128-token texts. A 1,500-word note has 17 parts.
PART_TOKENS = 128
PART_OVERLAP = 32
# Issue 48: a long text's sentences are parts too (a second granularity), so one sentence is not diluted by the rest
# of its window: the last sentence of a 1,500-word note, asked by a paraphrase, is at cosine 0.56 to itself, 0.36 with
# the sentence before it, 0.28 with two, 0.23 to its 128-token window. A sentence under SENTENCE_MIN tokens is joined
# to the next ("Dr." and "Yes." say nothing alone); one over PART_TOKENS is left to the windows, which read it.
SENTENCE_MIN = 8
BETWEEN_SENTENCES = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”’)\]])\s+|\s*\n\s*")
SPANS_KEPT = 256  # texts whose part spans TokenWindows keeps: a search that shows a long hit's part asks again
# How a long text is cut into parts: stamped on the parts index (adapters/sqlite_parts.py), so parts cut another way
# are known for what they are (status counts their memories as without parts; `memory reindex` cuts them again).
# 1: 128-token windows after the first (issue 28); 2: those and every sentence of the text (issue 48).
PARTS_SCHEME = 2


def byte_bound(spec: ModelSpec) -> int:
    """A text of at most this many UTF-8 bytes is within the window, known without a tokenizer: a token of a
    WordPiece (the shipped MiniLM) or byte-level tokenizer covers at least one byte of the text. Characters would not
    do: a Korean syllable is three jamo tokens (9 characters, 21 tokens)."""
    return max(spec.max_tokens - 2 - len(spec.document_prefix.encode("utf-8", "surrogatepass")), 0)


def beyond(text: str, bound: int) -> bool:
    """Whether the text has more than `bound` UTF-8 bytes (a long text is not encoded: its characters tell)."""
    return len(text) > bound or len(text.encode("utf-8", "surrogatepass")) > bound


class TokenWindows:
    """The model's tokenizer without truncation, and the window's share of a text in tokens: the model's length less
    [CLS], [SEP] and the document prefix."""

    def __init__(self, tokenizer: Any, spec: ModelSpec) -> None:
        # the same tokenizer without truncation, for cutting a long text into windows on its token offsets
        self.whole = type(tokenizer).from_str(tokenizer.to_str())
        self.whole.no_truncation()
        self.whole.no_padding()
        prefix = (
            len(self.whole.encode(spec.document_prefix, add_special_tokens=False).ids) if spec.document_prefix else 0
        )
        self.window = max(spec.max_tokens - 2 - prefix, 1)
        self._spans: dict[str, list[tuple[int, int]]] = {}  # part_spans' last SPANS_KEPT texts, oldest first
        self._lock = threading.Lock()  # a server's searches run in threads
        self.split_at_whitespace = type(self.whole.pre_tokenizer).__name__ == "BertPreTokenizer"

    def longer(self, texts: Sequence[str]) -> list[bool]:
        """For each text, whether it has more tokens than the window (so later parts)."""
        return [len(encoding.ids) > self.window for encoding in self._encoded(texts)]

    def later_windows(self, texts: Sequence[str]) -> list[list[str]]:
        """For each text, the text of its parts after the first window (what truncation leaves out): PART_TOKENS long
        (or the model's window, if shorter), each overlapping the one before by PART_OVERLAP tokens, the first
        overlapping the first window's end; cut on the tokenizer's character offsets."""
        return [
            [text[start:end] for start, end in spans]
            for text, spans in zip(texts, self._window_spans(texts), strict=True)
        ]

    def _window_spans(
        self, texts: Sequence[str], encodings: Sequence[Any] | None = None
    ) -> list[list[tuple[int, int]]]:
        """For each text, where its later windows (`later_windows`) lie in it: (start, end) character offsets (from
        the texts' `encodings` when given)."""
        part = min(self.window, PART_TOKENS)
        overlap = min(PART_OVERLAP, part // 4)
        found: list[list[tuple[int, int]]] = []
        for encoding in self._encoded(texts) if encodings is None else encodings:
            offsets, words = encoding.offsets, encoding.word_ids
            spans: list[tuple[int, int]] = []
            covered, start = self.window, self.window - overlap
            while covered < len(offsets):
                first = _word_start(words, start, len(offsets))
                end = _word_end(words, first, min(start + part, len(offsets)))
                spans.append((offsets[first][0], offsets[end - 1][1]))
                covered, start = start + part, start + part - overlap
            found.append(spans)
        return found

    def parts(self, texts: Sequence[str]) -> list[list[str]]:
        """For each text longer than the window, its parts (PARTS_SCHEME): the later windows (`later_windows`), then
        its sentences (`sentences`); none for a text within the window."""
        longer = self.longer(texts)
        windows = self.later_windows(texts)
        long_texts = [text for text, long in zip(texts, longer, strict=True) if long]
        sentences = iter(self.sentences(long_texts))
        return [[*parts, *next(sentences)] if long else parts for parts, long in zip(windows, longer, strict=True)]

    def part_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """For each text, where each of its `parts` lies in it, in the same order: (start, end) character offsets (a
        sentence joined to the next spans both, whatever spacing lay between them). Each text is tokenised once,
        its sentences in one batch; the last SPANS_KEPT texts' spans are kept (a search shows the same hits again)."""
        with self._lock:
            known = {text: self._spans[text] for text in texts if text in self._spans}
        unknown = list(dict.fromkeys(text for text in texts if text not in known))
        if unknown:
            encodings = self._encoded(unknown)
            longer = [len(encoding.ids) > self.window for encoding in encodings]
            windows = self._window_spans(unknown, encodings)
            long_ones = [
                (text, encoding) for text, encoding, long in zip(unknown, encodings, longer, strict=True) if long
            ]
            sentences = iter(self._sentence_spans([t for t, _ in long_ones], [e for _, e in long_ones]))
            for text, spans, long in zip(unknown, windows, longer, strict=True):
                known[text] = [*spans, *next(sentences)] if long else spans
            with self._lock:
                for text in unknown:
                    self._spans[text] = known[text]
                while len(self._spans) > SPANS_KEPT:
                    self._spans.pop(next(iter(self._spans)))
        return [list(known[text]) for text in texts]

    def sentences(self, texts: Sequence[str]) -> list[list[str]]:
        """For each text, its sentences as parts: cut after . ! ? … or a line break, one under SENTENCE_MIN tokens
        joined to the next, one over PART_TOKENS (or the window) left out (the windows read it); a text of one
        sentence has none (its windows are its parts)."""
        return [[joined for joined, _ in found] for found in self._sentence_parts(texts)]

    def _sentence_spans(self, texts: Sequence[str], encodings: Sequence[Any]) -> list[list[tuple[int, int]]]:
        return [[span for _, span in found] for found in self._sentence_parts(texts, encodings)]

    def _sentence_parts(
        self, texts: Sequence[str], encodings: Sequence[Any] | None = None
    ) -> list[list[tuple[str, tuple[int, int]]]]:
        """For each text, its sentence parts (`sentences`): each one's text (its pieces joined by a space) and where
        it lies in the text. Each piece's tokens are counted by encoding it alone (one batch for all), or, given the
        texts' `encodings` and a tokenizer that never joins characters across whitespace (WordPiece's
        BertPreTokenizer: a piece, cut at whitespace, has the same tokens alone as in its text), from those."""
        limit = min(self.window, PART_TOKENS)
        found: list[list[tuple[str, tuple[int, int]]]] = []
        cut = [_pieces(text) for text in texts]
        if encodings is not None and self.split_at_whitespace:
            counted = iter([n for pieces, e in zip(cut, encodings, strict=True) for n in _counts_within(pieces, e)])
        else:
            every = [piece for pieces in cut for piece, _ in pieces]  # one batch for all the texts' sentences
            counted = iter([len(encoding.ids) for encoding in self._encoded(every)] if every else [])
        for pieces in cut:
            counts = [next(counted) for _ in pieces]
            parts: list[tuple[str, tuple[int, int]]] = []
            pending, tokens, start, last = "", 0, 0, 0
            for (piece, (first, last)), count in zip(pieces, counts, strict=True):
                if not pending:
                    start = first
                pending, tokens = (f"{pending} {piece}" if pending else piece), tokens + count
                if tokens >= SENTENCE_MIN:
                    if tokens <= limit:
                        parts.append((pending, (start, last)))
                    pending, tokens = "", 0
            if pending and tokens <= limit:
                parts.append((pending, (start, last)))
            found.append(parts if len(parts) > 1 else [])
        return found

    def _encoded(self, texts: Sequence[str]) -> list[Any]:
        return list(self.whole.encode_batch(list(texts), add_special_tokens=False))


def _pieces(text: str) -> list[tuple[str, tuple[int, int]]]:
    """The text cut between sentences (BETWEEN_SENTENCES), each piece stripped, with where it lies; blanks left out."""
    found: list[tuple[str, tuple[int, int]]] = []
    at = 0
    for cut in [*BETWEEN_SENTENCES.finditer(text), None]:
        end = len(text) if cut is None else cut.start()
        raw = text[at:end]
        piece = raw.strip()
        if piece:
            first = at + len(raw) - len(raw.lstrip())
            found.append((piece, (first, first + len(piece))))
        if cut is not None:
            at = cut.end()
    return found


def _counts_within(pieces: Sequence[tuple[str, tuple[int, int]]], encoding: Any) -> list[int]:
    """How many of the text's tokens start inside each piece's span (pieces in order, tokens in order)."""
    starts = [start for start, _ in encoding.offsets]
    return [bisect.bisect_left(starts, last) - bisect.bisect_left(starts, first) for _, (first, last) in pieces]


def _word_start(words: Sequence[int | None], at: int, stop: int) -> int:
    """The first token at or after `at` that starts a word (a part never opens on a word's tail)."""
    while 0 < at < stop - 1 and words[at] is not None and words[at] == words[at - 1]:
        at += 1
    return at


def _word_end(words: Sequence[int | None], first: int, end: int) -> int:
    """`end`, moved back so the part does not close in the middle of a word (unless the word fills the part)."""
    cut = end
    while first + 1 < cut < len(words) and words[cut] is not None and words[cut] == words[cut - 1]:
        cut -= 1
    return cut if cut > first + 1 else end
