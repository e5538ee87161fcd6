"""The KeywordIndex and PartVectors contracts against the fed adapters (local SQLite caches replaying a change feed
held in a Ledger), where `reopen` is another node: a new cache file that only the feed can fill."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.feeds.keywords import FedKeywordIndex
from agent_memory.adapters.feeds.parts import FedPartVectors
from agent_memory.adapters.shared.ledger import InMemoryLedger, Ledger
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.adapters.sqlite_parts import SqlitePartVectors
from agent_memory.domain.ports import KeywordIndex, PartVectors
from tests.chroma_server import ChromaServer
from tests.contract.keyword_index_contract import RankingKeywordIndexContract
from tests.contract.part_vectors_contract import PartVectorsContract


def _next_node(path: Path) -> Path:
    """A cache file of a node not seen before, beside the given one (its own folder: its own lock and marks)."""
    folder = path.parent.with_name(path.parent.name + "-next")
    return folder / path.name


class TestFedKeywords(RankingKeywordIndexContract):
    @pytest.fixture
    def index(self, tmp_path: Path) -> KeywordIndex:
        return FedKeywordIndex(SqliteKeywordIndex(tmp_path / "a" / "keywords.sqlite3"), InMemoryLedger())

    def reopen(self, index: KeywordIndex) -> KeywordIndex:
        assert isinstance(index, FedKeywordIndex)
        ledger: Ledger = index.feed.ledger
        return FedKeywordIndex(SqliteKeywordIndex(_next_node(index.local.path)), ledger)


class TestFedPartVectors(PartVectorsContract):
    @pytest.fixture
    def parts(self, tmp_path: Path) -> PartVectors:
        return FedPartVectors(SqlitePartVectors(tmp_path / "a" / "parts.sqlite3"), InMemoryLedger())

    def reopen(self, parts: PartVectors) -> PartVectors:
        assert isinstance(parts, FedPartVectors)
        ledger: Ledger = parts.feed.ledger
        return FedPartVectors(SqlitePartVectors(_next_node(parts.local.path)), ledger)


def _chroma_ledger(server: ChromaServer) -> Ledger:
    """The ledger of a new collection on the session's real `chroma run`."""
    from agent_memory.adapters.chroma.catalog import ChromaCatalog
    from agent_memory.adapters.chroma.ledger import ChromaLedger

    collection = "fed" + uuid.uuid4().hex[:10]
    catalog = ChromaCatalog(
        path=None, host=server.host, port=server.port, collection=collection, embedder_name="none", dimension=3
    )
    return ChromaLedger.of(catalog)


@pytest.mark.variant
class TestFedPartVectorsOverAChromaServer(TestFedPartVectors):
    """Over a real Chroma server's ledger (about a second a test: the keyword suite's 55 would take a minute of CI;
    tests/integration/test_feeds_two_nodes.py runs the keyword side over one end to end)."""

    @pytest.fixture
    def parts(self, tmp_path: Path, chroma_server: ChromaServer) -> PartVectors:
        return FedPartVectors(SqlitePartVectors(tmp_path / "a" / "parts.sqlite3"), _chroma_ledger(chroma_server))


@pytest.mark.variant
class TestFedPartVectorsOverQdrant(TestFedPartVectors):
    """Over Qdrant's ledger (local mode here: the same client code a Qdrant server is driven by)."""

    @pytest.fixture
    def parts(self, tmp_path: Path) -> Iterator[PartVectors]:
        from agent_memory.adapters.qdrant.catalog import QdrantCatalog
        from agent_memory.adapters.qdrant.ledger import QdrantLedger

        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name="none", dimension=3)
        yield FedPartVectors(SqlitePartVectors(tmp_path / "a" / "parts.sqlite3"), QdrantLedger.of(catalog))
        catalog.close()
