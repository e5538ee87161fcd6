"""The path claims' contract on the in-memory Ledger, embedded Chroma, a `chroma run` server and Qdrant local mode."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.ledger import QdrantLedger
from agent_memory.adapters.shared.ledger import InMemoryLedger, Ledger
from tests.chroma_server import ChromaServer
from tests.contract.path_claims_contract import PathClaimsContract
from tests.contract.test_ledger import on_server
from tests.contract.vector_store_contract import DIM, MODEL


class TestInMemoryPathClaims(PathClaimsContract):
    @pytest.fixture
    def ledger(self) -> Ledger:
        return InMemoryLedger()


class TestChromaEmbeddedPathClaims(PathClaimsContract):
    @pytest.fixture
    def ledger(self, tmp_path: Path) -> Ledger:
        return ChromaLedger.of(ChromaCatalog(path=tmp_path / "chroma", embedder_name=MODEL, dimension=DIM))


@pytest.mark.server
class TestChromaServerPathClaims(PathClaimsContract):
    @pytest.fixture
    def ledger(self, chroma_server: ChromaServer) -> Ledger:
        return on_server(chroma_server.host, chroma_server.port, f"t{uuid.uuid4().hex}")

    def another(self, ledger: Ledger) -> Ledger:  # its own client: what another machine sees
        assert isinstance(ledger, ChromaLedger)
        host, port = ledger.boundary.location.rsplit(":", 1)
        return on_server(host, int(port), ledger.name.removesuffix(".ledger"))


class TestQdrantLocalPathClaims(PathClaimsContract):
    @pytest.fixture
    def ledger(self, tmp_path: Path) -> Iterator[Ledger]:
        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
        yield QdrantLedger.of(catalog)
        catalog.close()
