"""How a long text is cut into the model's windows, on the tokenizer alone: its later parts, and whether it has any."""

from __future__ import annotations

import re
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

    def _window_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """For each text, where its later windows (`later_windows`) lie in it: (start, end) character offsets."""
        part = min(self.window, PART_TOKENS)
        overlap = min(PART_OVERLAP, part // 4)
        found: list[list[tuple[int, int]]] = []
        for encoding in self._encoded(texts):
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
        sentence joined to the next spans both, whatever spacing lay between them)."""
        longer = self.longer(texts)
        windows = self._window_spans(texts)
        long_texts = [text for text, long in zip(texts, longer, strict=True) if long]
        sentences = iter(self._sentence_spans(long_texts))
        return [[*spans, *next(sentences)] if long else spans for spans, long in zip(windows, longer, strict=True)]

    def sentences(self, texts: Sequence[str]) -> list[list[str]]:
        """For each text, its sentences as parts: cut after . ! ? … or a line break, one under SENTENCE_MIN tokens
        joined to the next, one over PART_TOKENS (or the window) left out (the windows read it); a text of one
        sentence has none (its windows are its parts)."""
        return [[joined for joined, _ in found] for found in self._sentence_parts(texts)]

    def _sentence_spans(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        return [[span for _, span in found] for found in self._sentence_parts(texts)]

    def _sentence_parts(self, texts: Sequence[str]) -> list[list[tuple[str, tuple[int, int]]]]:
        """For each text, its sentence parts (`sentences`): each one's text (its pieces joined by a space) and where
        it lies in the text."""
        limit = min(self.window, PART_TOKENS)
        found: list[list[tuple[str, tuple[int, int]]]] = []
        for text in texts:
            pieces = _pieces(text)
            counts = [len(encoding.ids) for encoding in self._encoded([p for p, _ in pieces])] if pieces else []
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
