"""Creates over one `chroma run` commit without the store's write lease (issue 46 item 4): the engine's path claims
and batch outcomes referee them. Processes creating distinct paths of one store take no lease ticket; a create killed
after its path claim and before its outcome is voided by the next contender for the path, never shown meanwhile."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain import commands as c
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import ChromaServer, chroma_server
from tests.subprocess_nodes import started_together

__all__ = ["chroma_server"]

CREATES = 8

NODE = """
import json, os, sys
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain import commands as c
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings

data, host, port, collection, node, creates, die = sys.argv[1:]
if die == "before-outcome":  # killed at the engine's client boundary: its claims landed, its outcome never sent
    claim = ChromaLedger.claim
    def dying(self, record):
        if record.key.startswith("commit/"):
            os._exit(9)
        return claim(self, record)
    ChromaLedger.claim = dying
settings = Settings(data_dir=data, backend="chroma", chroma_host=host, chroma_port=int(port), collection=collection)
service = build_service(settings, embedder=HashingEmbedder()).unwrap()
sys.stdin.readline()  # every node is ready: go
if die == "before-outcome":
    service.create_many([
        c.CreateMemory(content="the dead batch's first", path="contended/a"),
        c.CreateMemory(content="the dead batch's second", path="contended/b"),
    ])
for n in range(int(creates)):
    made = service.create(c.CreateMemory(content=f"note {n} from {node}", path=f"notes/{node}{n}"))
    error = made.failure().message if not made.map(lambda _: True).value_or(False) else None
    print(json.dumps({"id": made.map(lambda view: view.memory.id).value_or(None), "error": error}), flush=True)
"""


def nodes(server: ChromaServer, tmp_path: Path, collection: str, names: dict[str, str]) -> list[subprocess.Popen[str]]:
    """One process per name, started together; `names`: name → how it dies."""
    return started_together(
        NODE, server, tmp_path, collection, {name: [str(CREATES), die] for name, die in names.items()}
    )


def reader(server: ChromaServer, tmp_path: Path, collection: str) -> tuple[MemoryService, ChromaLedger]:
    settings = Settings(
        data_dir=tmp_path / "reader",
        backend="chroma",
        chroma_host=server.host,
        chroma_port=server.port,
        collection=collection,
    )
    catalog = ChromaCatalog(host=server.host, port=server.port, collection=collection, embedder_name="", dimension=1)
    return build_service(settings, embedder=HashingEmbedder()).unwrap(), ChromaLedger.of(catalog)


@pytest.mark.server
@pytest.mark.slow
def test_two_processes_creating_distinct_paths_of_one_store_take_no_lease_ticket(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    collection = f"t{uuid.uuid4().hex}"
    running = nodes(chroma_server, tmp_path, collection, {"a": "", "b": ""})
    answers = [answer for node in running for answer in map(json.loads, node.communicate(timeout=300)[0].splitlines())]
    assert all(node.returncode == 0 for node in running)
    assert [answer["error"] for answer in answers if answer["error"]] == []
    acknowledged = {answer["id"] for answer in answers}
    assert len(acknowledged) == 2 * CREATES
    service, ledger = reader(chroma_server, tmp_path, collection)
    assert ledger.listed("default", "lease").unwrap() == []  # no ticket claimed, by either process, ever
    assert ledger.listed("default", "batch").unwrap() == []  # every batch committed and forgotten
    live = service.list("notes", limit=100).unwrap().memories
    assert {view.memory.id for view in live} == acknowledged


@pytest.mark.server
@pytest.mark.slow
def test_a_create_killed_after_its_path_claim_is_voided_by_the_next_contender_and_never_shown(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    collection = f"t{uuid.uuid4().hex}"
    (dead,) = nodes(chroma_server, tmp_path, collection, {"dead": "before-outcome"})
    dead.communicate(timeout=300)
    assert dead.returncode == 9  # killed before its outcome: its records and path claims are in the engine
    service, ledger = reader(chroma_server, tmp_path, collection)
    assert ledger.listed("default", "lease").unwrap() == []  # it held no lease: nobody waits one out
    engine = ChromaCatalog(
        host=chroma_server.host, port=chroma_server.port, collection=collection, embedder_name="", dimension=1
    ).open("default", create=False)
    assert len(engine.unwrap().scan(MemoryFilter()).unwrap()) == 2  # both records landed, marked with its batch
    assert service.list(limit=10).unwrap().memories == ()  # no half batch, nor a whole one, shown
    assert service.search(c.SearchMemories(query="the dead batch's first")).unwrap().results == ()
    assert service.status().unwrap().memory_count == 0

    taken = service.create(c.CreateMemory(content="the contender", path="contended/a")).unwrap()  # voids it
    again = service.create(c.CreateMemory(content="a second contender", path="contended/a"))
    assert again.failure().code is ErrorCode.DESTINATION_EXISTS  # the path is the contender's now
    other = service.create(c.CreateMemory(content="the other path's", path="contended/b")).unwrap()
    shown = service.list("contended", limit=10).unwrap().memories
    assert sorted((str(view.memory.path), view.memory.id) for view in shown) == sorted(
        [("contended/a", taken.memory.id), ("contended/b", other.memory.id)]
    )
    assert service.status().unwrap().memory_count == 2  # the dead batch's records: never counted
    assert {m.id for m in engine.unwrap().scan(MemoryFilter()).unwrap()} == {taken.memory.id, other.memory.id}
    assert ledger.listed("default", "batch").unwrap() == []  # voided, swept out with its batch record
