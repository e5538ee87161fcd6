"""Broad questions about the user ("what do you know about me?"): which memories are about the user, on words alone."""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent_memory.domain.model import Memory
from agent_memory.domain.search.tokens import WORD

# the words by which a question points at the one asking, and by which a memory speaks of the user
SELF_WORDS = frozenset({"me", "my", "mine", "myself", "i", "im", "user", "users"})
# memory types that hold facts about the user (a `type` label an agent sets), compared lower-cased
USER_TYPES = frozenset({"user", "profile", "personal", "person", "preference", "preferences", "biography", "about-me"})
# "the user's name is Dana Whitfield", "my name is Dana", "user: Dana", "call me Dana": the user's own names
_NAMED = re.compile(
    r"\b(?i:(?:user'?s?|my)\s+(?:full\s+|first\s+)?name\s+is|call\s+me|i\s+am|i'm|user\s+is\s+(?:called|named))"
    r"\s+((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+)?)"
)


def asks_about_user(question: str) -> bool:
    """Whether a question points at the one asking ("me", "my", "myself", "I", "the user")."""
    return bool(SELF_WORDS & set(WORD.findall(question.lower())))


def user_names(texts: Iterable[str]) -> frozenset[str]:
    """The names the user goes by, as the memories say them ("User's name is Marco Bellini" → marco, bellini),
    lower-cased; none when no memory says it."""
    names: set[str] = set()
    for text in texts:
        for match in _NAMED.finditer(text):
            names.update(word for word in WORD.findall(match[1].lower()) if len(word) > 1)
    return frozenset(names)


def about_user(memory: Memory, names: frozenset[str]) -> int:
    """How plainly a memory is about the user: 2 with a user type, 1 when its text speaks of the user ("user",
    "my", "I", or a name the user goes by), else 0 (a project's or anyone else's fact)."""
    if memory.type.strip().lower() in USER_TYPES:
        return 2
    words = set(WORD.findall(memory.content.lower()))
    return 1 if words & (SELF_WORDS | names) else 0
