"""Two nodes over one real `chroma run`, B's searches answered by its node mirror (adapters/chroma/node_mirror.py):
right after A's write is acknowledged, B finds A's new, updated and moved memories by meaning, never a deleted one,
an old text or an old path; a reindex on A is followed by a new mirror."""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.node_mirror import NodeMirrors
from agent_memory.adapters.claimed_store import ClaimingCatalog
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.chroma_server import ChromaServer, chroma_server

__all__ = ["chroma_server"]
pytestmark = [pytest.mark.server]
BOUND_S = 120  # the longest the test waits for B's background build (a bound, never a timing assertion)
FILLER = [f"Routine note {n} about the weekly planning meeting and its agenda item {n}" for n in range(12)]


def node(folder: Path, server: ChromaServer, collection: str) -> MemoryService:
    flags = {"data_dir": str(folder), "chroma_host": server.host, "chroma_port": server.port, "collection": collection}
    settings = load_settings(flags, {"HOME": str(folder)}).unwrap()
    return build_service(settings, embedder=HashingEmbedder(window=16)).unwrap()


def mirrors(service: MemoryService) -> NodeMirrors:
    catalog = service.catalog
    if isinstance(catalog, ClaimingCatalog):  # over a server the engine's catalog sits under the path claims
        catalog = catalog.inner
    assert isinstance(catalog, ChromaCatalog) and catalog.node is not None
    return catalog.node


def found(service: MemoryService, query: str, **scope: str) -> list[str]:
    results = service.search(SearchMemories(query=query, mode="semantic", limit=3, **scope)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


def mirrored(service: MemoryService) -> int:
    """Search until B's mirror is installed; its number of memories."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        found(service, FILLER[0])  # the first search asks for the mirror; later ones wait for it to be there
        held = mirrors(service)._mirrors  # the test checks the searches go to the mirror
        if held:
            (state,) = held.values()
            return len(state.mirror)
        time.sleep(0.2)
    raise AssertionError("B's mirror was never installed")


@pytest.fixture
def collection() -> str:
    return "mirror" + uuid.uuid4().hex[:8]


def test_b_s_mirror_follows_a_s_writes_by_meaning(tmp_path: Path, chroma_server: ChromaServer, collection: str) -> None:
    a, b = node(tmp_path / "a", chroma_server, collection), node(tmp_path / "b", chroma_server, collection)
    b.catalog.keep_warm()
    a.create_many([CreateMemory(content=text) for text in FILLER]).unwrap()
    assert mirrored(b) == len(FILLER)
    state = next(iter(mirrors(b)._mirrors.values()))

    new = "The booking reference for the ferry to Hvar is QK7PLM"
    created = a.create(CreateMemory(content=new, path="travel/ferry")).unwrap()
    assert found(b, new)[:1] == [new]
    assert [m.content for m in state.mirror.get([created.memory.id])] == [new]  # the search read it into the mirror

    old, changed = "The spare key hangs in the garden shed", "The spare key is now under the blue flowerpot"
    view = a.create(CreateMemory(content=old)).unwrap()
    assert found(b, old)[:1] == [old]
    a.update(UpdateMemory(ref=view.memory.id, content=changed)).unwrap()
    assert found(b, changed)[:1] == [changed]
    assert old not in found(b, old)

    a.move("travel/ferry", "archive/ferry").unwrap()
    assert found(b, new, path_prefix="travel") == []
    assert found(b, new, path_prefix="archive")[:1] == [new]

    a.delete(view.memory.id).unwrap()
    assert changed not in found(b, changed)
    assert next(iter(mirrors(b)._mirrors.values())) is state  # every answer above came through the same mirror

    a.reindex().unwrap()  # a new collection: B drops its mirror, asks Chroma meanwhile and builds a new one
    assert found(b, new)[:1] == [new]
    assert mirrored(b) == len(FILLER) + 2


def test_a_one_shot_node_and_a_store_over_the_limit_are_never_mirrored(
    tmp_path: Path, chroma_server: ChromaServer, collection: str
) -> None:
    a = node(tmp_path / "a", chroma_server, collection)
    one_shot, bounded = node(tmp_path / "c", chroma_server, collection), node(tmp_path / "d", chroma_server, collection)
    bounded.catalog.keep_warm()
    mirrors(bounded).limit = len(FILLER) - 1
    a.create_many([CreateMemory(content=text) for text in FILLER]).unwrap()
    for service in (one_shot, bounded):
        for text in FILLER[:3]:
            assert found(service, text)[:1] == [text]  # answered by Chroma
    deadline = time.monotonic() + BOUND_S
    while mirrors(bounded)._building and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mirrors(one_shot)._building == set() and mirrors(one_shot)._mirrors == {}
    assert mirrors(bounded)._building == set() and mirrors(bounded)._mirrors == {}


def test_a_restarted_node_restores_its_mirror_from_its_file_and_catches_up(
    tmp_path: Path, chroma_server: ChromaServer, collection: str, caplog: pytest.LogCaptureFixture
) -> None:
    a, b = node(tmp_path / "a", chroma_server, collection), node(tmp_path / "b", chroma_server, collection)
    b.catalog.keep_warm()
    a.create_many([CreateMemory(content=text) for text in FILLER]).unwrap()
    assert mirrored(b) == len(FILLER)
    files = tmp_path / "b" / ".agent-memory-mirrors"
    deadline = time.monotonic() + BOUND_S  # the file is written once the mirror is installed, in the background
    while not list(files.glob("*.mirror")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(files.glob("*.mirror"))

    gone = a.create(CreateMemory(content="The garage code is 4417 and changes in May")).unwrap()
    new = "While B was down: the water meter sits behind the boiler"  # written while B restarts
    a.create(CreateMemory(content=new)).unwrap()
    a.delete(gone.memory.id).unwrap()
    caplog.set_level(logging.INFO, logger="agent_memory.adapters.chroma.node_mirror")
    again = node(tmp_path / "b", chroma_server, collection)
    again.catalog.keep_warm()
    assert mirrored(again) == len(FILLER) + 2
    assert "restored from its file" in caplog.text
    assert found(again, new)[:1] == [new]
    assert "The garage code is 4417 and changes in May" not in found(again, "The garage code is 4417")
