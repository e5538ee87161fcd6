"""Two machines (processes with their own data dirs and HOMEs) over one `chroma run`: writers ordered by the
engine-held write locks, so creating the same paths at once leaves one live memory per path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import ChromaServer, chroma_server

__all__ = ["chroma_server"]

ROOT = Path(__file__).resolve().parents[2]
PATHS = 25

NODE = """
import json, sys
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain import commands as c
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings

data, host, port, collection, node, paths = sys.argv[1:]
settings = Settings(data_dir=data, backend="chroma", chroma_host=host, chroma_port=int(port), collection=collection)
service = build_service(settings, embedder=HashingEmbedder()).unwrap()
sys.stdin.readline()  # both nodes are ready: go
for n in range(int(paths)):
    made = service.create(c.CreateMemory(content=f"note {n} from {node}", path=f"notes/p{n}"))
    print(json.dumps({"path": n, "id": made.map(lambda view: view.memory.id).value_or(None)}), flush=True)
"""


@pytest.mark.server
@pytest.mark.slow
def test_two_nodes_creating_the_same_paths_at_once_leave_one_live_memory_per_path(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    collection = f"t{uuid.uuid4().hex}"
    nodes = []
    for name in ("a", "b"):
        home = tmp_path / name
        (home / "data").mkdir(parents=True)
        argv = [sys.executable, "-c", NODE, str(home / "data"), chroma_server.host, str(chroma_server.port)]
        nodes.append(
            subprocess.Popen(
                [*argv, collection, name, str(PATHS)],
                cwd=ROOT,
                env={**os.environ, "HOME": str(home)},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    for node in nodes:
        assert node.stdin is not None
        node.stdin.write("go\n")
        node.stdin.flush()
    acknowledged = {
        answer["id"]
        for node in nodes
        for answer in map(json.loads, node.communicate(timeout=120)[0].splitlines())
        if answer["id"] is not None
    }
    assert all(node.returncode == 0 for node in nodes)
    settings = Settings(
        data_dir=tmp_path / "reader",
        backend="chroma",
        chroma_host=chroma_server.host,
        chroma_port=chroma_server.port,
        collection=collection,
    )
    listing = build_service(settings, embedder=HashingEmbedder()).unwrap().list("notes", limit=100).unwrap()
    live = [view.memory for view in listing.memories]
    assert sorted(str(memory.path) for memory in live) == sorted(f"notes/p{n}" for n in range(PATHS))
    assert acknowledged <= {memory.id for memory in live} and len(acknowledged) >= PATHS
