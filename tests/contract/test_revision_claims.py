"""The revision claims' contract on the in-memory store and Ledger, embedded Chroma, Qdrant local mode and a Chroma
server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.in_memory import InMemoryVectorStore
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.ledger import QdrantLedger
from agent_memory.adapters.shared.ledger import InMemoryLedger
from tests.chroma_server import ChromaServer
from tests.contract.revision_claims_contract import Engine, RevisionClaimsContract
from tests.contract.test_chroma_server import on_server
from tests.contract.vector_store_contract import DIM, MODEL


class TestInMemoryRevisionClaims(RevisionClaimsContract):
    @pytest.fixture
    def engine(self) -> Engine:
        return InMemoryVectorStore(), InMemoryLedger()


class TestChromaEmbeddedRevisionClaims(RevisionClaimsContract):
    @pytest.fixture
    def engine(self, tmp_path: Path) -> Engine:
        catalog = ChromaCatalog(path=tmp_path / "chroma", embedder_name=MODEL, dimension=DIM)
        return catalog.open("default", create=True).unwrap(), ChromaLedger.of(catalog)


class TestQdrantLocalRevisionClaims(RevisionClaimsContract):
    @pytest.fixture
    def engine(self, tmp_path: Path) -> Iterator[Engine]:
        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
        yield catalog.open("default", create=True).unwrap(), QdrantLedger.of(catalog)
        catalog.close()


@pytest.mark.server
class TestChromaServerRevisionClaims(RevisionClaimsContract):
    """Where revisions are claimed in production: a `chroma run` server's store and ledger."""

    @pytest.fixture
    def engine(self, chroma_server: ChromaServer) -> Engine:
        catalog = on_server(chroma_server)
        return catalog.open("default", create=True).unwrap(), ChromaLedger.of(catalog)
