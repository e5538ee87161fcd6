"""A test hook: a process told (by its environment) to stall at a named point of a batch stops there for a test.

`AGENT_MEMORY_STALL_AT=keywords` stalls a batch after its memories are stored and before their words are indexed,
the middle of a write, so a test can SIGKILL the writer there deterministically. The process writes its pid to
`AGENT_MEMORY_STALL_MARK` and waits until that file is removed (at most a few minutes), then goes on. Unset (as
always outside tests) it costs one environment lookup."""

from __future__ import annotations

import os
import time
from pathlib import Path

STALL_AT = "AGENT_MEMORY_STALL_AT"
STALL_MARK = "AGENT_MEMORY_STALL_MARK"
LONGEST_S = 300.0


def stall_point(name: str) -> None:
    """Stall here if the environment names this point (see the module's docstring)."""
    if os.environ.get(STALL_AT) != name:
        return
    mark = Path(os.environ.get(STALL_MARK) or "stall.mark")
    mark.write_text(str(os.getpid()))
    deadline = time.monotonic() + LONGEST_S
    while mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
