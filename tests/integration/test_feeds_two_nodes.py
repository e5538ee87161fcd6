"""Two nodes (each its own data folder) over one real `chroma run`: what one writes, the other finds by keyword and
a long memory by its last sentence, with no reindex; a reindex on one is followed; a wiped cache comes back."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.ports import KeywordEntry
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.chroma_server import ChromaServer, chroma_server

__all__ = ["chroma_server"]

FILLER = [f"Routine note {n} about the weekly planning meeting and its agenda" for n in range(8)]
LONG = " ".join(f"Paragraph {n} of the travel diary describes the coastal road and the weather." for n in range(12))
LAST = "Finally the zeppelin hangar at Friedrichshafen closed its doors forever."


def node(folder: Path, server: ChromaServer, collection: str) -> MemoryService:
    flags = {"data_dir": str(folder), "chroma_host": server.host, "chroma_port": server.port, "collection": collection}
    settings = load_settings(flags, {"HOME": str(folder)}).unwrap()
    return build_service(settings, embedder=HashingEmbedder(window=16)).unwrap()


def found(service: MemoryService, query: str, mode: str) -> list[str]:
    results = service.search(SearchMemories(query=query, mode=mode, limit=3)).unwrap()  # type: ignore[arg-type]
    return [hit.memory.content for hit in results.results]


@pytest.fixture
def collection() -> str:
    return "feeds" + uuid.uuid4().hex[:8]


def test_what_one_node_writes_the_other_finds_without_reindex(
    tmp_path: Path, chroma_server: ChromaServer, collection: str
) -> None:
    a, b = node(tmp_path / "a", chroma_server, collection), node(tmp_path / "b", chroma_server, collection)
    a.create_many([CreateMemory(content=text) for text in FILLER]).unwrap()
    a.create(CreateMemory(content="The booking reference is QK7PLM")).unwrap()
    a.create(CreateMemory(content=f"{LONG} {LAST}")).unwrap()
    assert found(b, "QK7PLM", "keyword")[:1] == ["The booking reference is QK7PLM"]
    # a change record whose memory never landed (its writer killed between the two): B drops the hit, no error
    assert a.keywords is not None
    a.keywords.upsert("default", [KeywordEntry("0" * 32, "QK7PLM written by a writer killed mid-write", "t")]).unwrap()
    assert found(b, "QK7PLM", "keyword") == ["The booking reference is QK7PLM"]
    assert found(b, LAST, "semantic")[:1] == [f"{LONG} {LAST}"]  # by a part beyond the model's window
    b.create(CreateMemory(content="Written on B: the spare key is under the blue flowerpot")).unwrap()
    assert found(a, "flowerpot", "keyword")[:1] == ["Written on B: the spare key is under the blue flowerpot"]
    assert b.status().unwrap().warnings == (  # the stray entry is counted: status says what repairs it
        "The keyword index holds 12 of the 11 memories: run `memory reindex`.",
    )

    a.reindex().unwrap()  # a rebuild marker and its entries: followed by B, and the feed before it forgotten
    b.create(CreateMemory(content="After the reindex: the boiler was serviced in March")).unwrap()
    assert found(a, "boiler", "keyword")[:1] == ["After the reindex: the boiler was serviced in March"]
    assert found(b, "QK7PLM", "keyword")[:1] == ["The booking reference is QK7PLM"]
    assert b.status().unwrap().problems == () and b.status().unwrap().warnings == ()

    for cache in (tmp_path / "b").glob("chroma-*.sqlite3*"):  # B's disk wiped, B restarted
        cache.unlink()
    again = node(tmp_path / "b", chroma_server, collection)
    assert found(again, "flowerpot", "keyword")[:1] == ["Written on B: the spare key is under the blue flowerpot"]
    assert found(again, LAST, "semantic")[:1] == [f"{LONG} {LAST}"]
    assert again.status().unwrap().problems == () and again.status().unwrap().warnings == ()
