"""The progress bar through the local memory server: drawn on the client's terminal while the command runs (before
its answer), and nothing extra when stderr is a pipe."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.domain.progress import EMBED_SLICE
from tests.e2e.conftest import MEMORY, MemoryCli

COUNT = EMBED_SLICE + 6  # two slices of the domain's embedding: the bar is drawn twice


@pytest.fixture
def served(tmp_path: Path) -> Iterator[MemoryCli]:
    made = MemoryCli(tmp_path, "chroma", mode="served")
    yield made
    made.stop_servers()


def on_a_terminal(cli: MemoryCli, *args: str) -> str:
    """What a person sees: the command run with stdout and stderr on one pseudo-terminal."""
    main, other = os.openpty()
    try:
        process = subprocess.Popen(
            [str(MEMORY), *args], stdin=subprocess.DEVNULL, stdout=other, stderr=other, env=cli.env
        )
    finally:
        os.close(other)
    seen = b""
    try:
        while chunk := os.read(main, 4096):
            seen += chunk
    except OSError:  # EIO: the last writer of the terminal is gone
        pass
    finally:
        os.close(main)
    assert process.wait(timeout=180) == 0, seen
    return seen.decode("utf-8")


def test_the_bar_moves_on_the_terminal_through_the_server_and_says_nothing_to_a_pipe(
    served: MemoryCli, tmp_path: Path
) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"content": f"memory {i}"}) + "\n" for i in range(COUNT)), encoding="utf-8")
    served.ok("list")  # the server starts on a pipe: the terminal below gets the bar alone, not the start's note
    bar, answer, *_ = on_a_terminal(served, "create", "--jsonl", str(batch)).replace("\r\n", "\n").split("\n")
    assert bar.startswith("\rcreate [") and bar.count("\r") == 2 and f"{COUNT}/{COUNT}" in bar  # drawn twice
    # the bar came while the command ran: before its answer on stdout, which the client writes once it is done
    assert json.loads(answer)["count"] == COUNT
    assert served.ok("server", "status")["status"] == "running"  # it ran on the server

    reindexed = on_a_terminal(served, "reindex")
    assert reindexed.startswith("\rreindex default [") and f"{COUNT}/{COUNT}" in reindexed

    piped = served("reindex")  # stdout and stderr are pipes: the JSON answer and not a byte more
    assert piped.code == 0 and piped.stderr == "" and piped.json["memory_count"] == COUNT
