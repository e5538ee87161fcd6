"""Two machines (processes with their own data dirs and HOMEs) over one `chroma run`: creates of the same paths at
once are refereed by the engine's path claims and batch outcomes, so one live memory is left per path."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import ChromaServer, chroma_server
from tests.subprocess_nodes import started_together

__all__ = ["chroma_server"]

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
    nodes = started_together(NODE, chroma_server, tmp_path, collection, {"a": [str(PATHS)], "b": [str(PATHS)]})
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
