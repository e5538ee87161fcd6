"""Processes that stand for hosts over one `chroma run`: each with its own HOME and data dir, started together."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.chroma_server import ChromaServer

ROOT = Path(__file__).resolve().parents[1]


def started_together(
    script: str, server: ChromaServer, tmp_path: Path, collection: str, nodes: dict[str, Sequence[str]]
) -> list[subprocess.Popen[str]]:
    """One `python -c script` per node name, argv `data host port collection name *extra` (`nodes`: name → extra),
    each under `tmp_path/<name>` as its HOME; every script reads one line from stdin before it starts writing, and
    that line is sent once all of them are up, so their writes race."""
    started = []
    for name, extra in nodes.items():
        home = tmp_path / name
        (home / "data").mkdir(parents=True)
        argv = [sys.executable, "-c", script, str(home / "data"), server.host, str(server.port), collection, name]
        started.append(
            subprocess.Popen(
                [*argv, *extra],
                cwd=ROOT,
                env={**os.environ, "HOME": str(home)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    for node in started:
        assert node.stdin is not None
        node.stdin.write("go\n")
        node.stdin.flush()
    return started
