"""Keyword side: SQLite FTS5 bm25, with tokenizer and query-construction variants."""

from __future__ import annotations

import re
import sqlite3

import numpy as np

# A standard English stop-word list (NLTK's English list plus question/auxiliary words); general, not
# tuned to any data set.
STOP_WORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "couldn", "could", "d", "did", "didn", "do", "does", "doesn", "doing", "don", "down", "during", "each", "few", "for", "from", "further", "had", "hadn", "has", "hasn", "have", "haven", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "ll", "m", "ma", "me", "mightn", "more", "most", "mustn", "my", "myself", "needn", "no", "nor", "not", "now", "o", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "re", "s", "same", "shan", "she", "should", "shouldn", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "ve", "very", "was", "wasn", "we", "were", "weren", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "won", "wouldn", "y", "you", "your", "yours", "yourself", "yourselves", "would", "could", "might", "may", "shall", "also", "ever"]
)

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)  # FTS5 unicode61: letters and digits are token characters

TOKENIZERS = {
    "u61": "unicode61",
    "u61d": "unicode61 remove_diacritics 2",
    "porter": "porter unicode61 remove_diacritics 2",
}


def query_terms(question: str, stop: bool = True) -> list[str]:
    """Lower-cased word tokens of the question, stop words (and 1-letter tokens) removed, de-duplicated."""
    seen: list[str] = []
    for tok in _TOKEN.findall(question.lower()):
        if stop and (tok in STOP_WORDS or len(tok) < 2):
            continue
        if tok not in seen:
            seen.append(tok)
    return seen


def match_expr(terms: list[str]) -> str:
    """An FTS5 MATCH expression: each term double-quoted (a string token, so no operator or punctuation can
    break the syntax), joined with OR."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class FtsIndex:
    """One conversation's memories in an in-memory FTS5 table (rowid = position + 1).

    layout "plain": one column, content.
    layout "pn"   : content, prev, next — the texts of the memories added just before / after it in the
                    same space; bm25 column weights (1, w_prev, w_next) per query.
    layout "ctx"  : content, ctx — prev and next texts in one column; bm25 weights (1, w_prev) (w_next unused).
    A column of weight 0 is excluded from matching with a column filter.
    """

    def __init__(
        self,
        texts: list[str],
        tokenizer: str = "porter",
        layout: str = "plain",
        prev: list[str] | None = None,
        nxt: list[str] | None = None,
    ) -> None:
        self.db = sqlite3.connect(":memory:")
        self.n = len(texts)
        tok = TOKENIZERS.get(tokenizer, tokenizer)
        self.layout = layout
        prev = prev if prev is not None else [""] + texts[:-1]
        nxt = nxt if nxt is not None else texts[1:] + [""]
        if layout == "plain":
            self.db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, tokenize="{tok}")')
            self.db.executemany("INSERT INTO m(rowid, content) VALUES (?, ?)", enumerate(texts, 1))
        elif layout == "pn":
            self.db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, prev, next, tokenize="{tok}")')
            self.db.executemany(
                "INSERT INTO m(rowid, content, prev, next) VALUES (?, ?, ?, ?)",
                ((i + 1, t, p, x) for i, (t, p, x) in enumerate(zip(texts, prev, nxt))),
            )
        elif layout == "ctx":
            self.db.execute(f'CREATE VIRTUAL TABLE m USING fts5(content, ctx, tokenize="{tok}")')
            self.db.executemany(
                "INSERT INTO m(rowid, content, ctx) VALUES (?, ?, ?)",
                ((i + 1, t, (p + "\n" + x).strip()) for i, (t, p, x) in enumerate(zip(texts, prev, nxt))),
            )
        else:
            raise ValueError(layout)
        self._df: dict[str, int] = {}

    def doc_freq(self, term: str) -> int:
        """How many memories a (query) term matches in their content, through the same tokenizer."""
        if term not in self._df:
            expr = match_expr([term]) if self.layout == "plain" else "content : " + match_expr([term])
            self._df[term] = self.db.execute("SELECT count(*) FROM m WHERE m MATCH ?", (expr,)).fetchone()[0]
        return self._df[term]

    def doc_freq_any(self, term: str) -> int:
        """How many rows a term matches in any column (what an fts5vocab 'row' table reports)."""
        key = "\x00" + term
        if key not in self._df:
            self._df[key] = self.db.execute("SELECT count(*) FROM m WHERE m MATCH ?", (match_expr([term]),)).fetchone()[
                0
            ]
        return self._df[key]

    def scores(
        self, terms: list[str], w_prev: float = 0.0, w_next: float = 0.0, limit: int = -1
    ) -> tuple[np.ndarray, np.ndarray]:
        """(score per memory: -bm25, larger is better, 0 where not matched; matched mask).

        The full match set (limit -1) for research; the product takes the top `limit` by rank.
        """
        s = np.zeros(self.n, dtype=np.float64)
        hit = np.zeros(self.n, dtype=bool)
        if not terms:
            return s, hit
        if self.layout == "pn":
            cols = ["content"] + (["prev"] if w_prev else []) + (["next"] if w_next else [])
            expr = "{" + " ".join(cols) + "} : (" + match_expr(terms) + ")"
            sql = f"SELECT rowid, bm25(m, 1.0, {w_prev}, {w_next}) AS s FROM m WHERE m MATCH ? ORDER BY s LIMIT ?"
        elif self.layout == "ctx":
            cols = ["content"] + (["ctx"] if w_prev else [])
            expr = "{" + " ".join(cols) + "} : (" + match_expr(terms) + ")"
            sql = f"SELECT rowid, bm25(m, 1.0, {w_prev}) AS s FROM m WHERE m MATCH ? ORDER BY s LIMIT ?"
        else:
            expr = match_expr(terms)
            sql = "SELECT rowid, bm25(m) FROM m WHERE m MATCH ? ORDER BY rank LIMIT ?"
        for rowid, score in self.db.execute(sql, (expr, limit)):
            s[rowid - 1] = -score
            hit[rowid - 1] = True
        return s, hit
