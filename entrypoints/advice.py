"""Error advice worded for the door that shows it. The domain and the backends write their advice for the
`memory` command line (`memory store create work`, `--decay reinforceable`, `memory reindex`); the CLI shows it
as written, and the other doors replace each piece of CLI advice with what their own callers do instead."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Literal

import attrs

from agent_memory.domain.errors import DomainError

Door = Literal["mcp", "rest", "python"]

# (CLI advice, what each door says instead); `{name}` is a group of the match
_ADVICE: tuple[tuple[re.Pattern[str], Mapping[Door, str]], ...] = (
    (
        re.compile(r" ?Create it with `memory store create (?P<store>[^`]+)` or add a memory to it\."),
        {
            "mcp": "",  # the MCP hint for STORE_NOT_FOUND names create_store and add_memory
            "rest": " Create it with POST /stores, or create a memory in it (POST /memories?store={store}).",
            "python": " Create it with create_store, or add a memory to it.",
        },
    ),
    (
        re.compile(r"`memory reindex --store (?P<store>[^`]+)`"),
        {"mcp": "reindex_store (store '{store}')", "rest": "POST /reindex?store={store}", "python": "reindex()"},
    ),
    (
        re.compile(r"`memory reindex`"),
        {"mcp": "reindex_store", "rest": "POST /reindex", "python": "reindex()"},
    ),
    (
        re.compile(r"pass --include-expired"),
        {"mcp": "pass include_expired", "rest": "pass include_expired", "python": "pass include_expired=True"},
    ),
    (
        re.compile(r"Use --decay reinforceable"),
        {
            "mcp": "Use decay_policy 'reinforceable'",
            "rest": 'Use "decay_policy": "reinforceable"',
            "python": "Use decay_policy='reinforceable'",
        },
    ),
)


def worded(text: str, door: Door) -> str:
    """`text` with each piece of CLI advice replaced by this door's."""
    for pattern, instead in _ADVICE:
        text = pattern.sub(_saying(instead[door]), text)
    return text


def _saying(say: str) -> Callable[[re.Match[str]], str]:
    return lambda match: say.format(**match.groupdict())


def for_door(error: DomainError, door: Door) -> DomainError:
    """The error with its message's advice worded for `door`."""
    message = worded(error.message, door)
    return error if message == error.message else attrs.evolve(error, message=message)


def sentence(text: str, more: str) -> str:
    """`more` after `text` as a new sentence, with exactly one full stop between them (never '..')."""
    if not more:
        return text
    return f"{text.rstrip()}{'' if text.rstrip().endswith(('.', '!', '?')) else '.'} {more}"
