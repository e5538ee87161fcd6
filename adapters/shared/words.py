"""The words keyword indexes count: the domain's word rules (domain.search.words), shared by every keyword adapter."""

from __future__ import annotations

from agent_memory.domain.search.words import STOP_WORDS, WORD, content_words, query_terms

__all__ = ["STOP_WORDS", "WORD", "content_words", "query_terms"]
