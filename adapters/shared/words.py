"""The words keyword indexes count: the domain's word rules (domain.words), shared by every keyword adapter."""

from __future__ import annotations

from agent_memory.domain.words import STOP_WORDS, WORD, content_words, query_terms

__all__ = ["STOP_WORDS", "WORD", "content_words", "query_terms"]
