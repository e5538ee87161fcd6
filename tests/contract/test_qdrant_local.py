"""The storage contract against Qdrant's local mode (embedded, on disk under tmp_path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.domain.ports import StoreCatalog
from tests.contract.vector_store_contract import DIM, MODEL, VectorStoreContract


def local(path: Path) -> QdrantCatalog:
    return QdrantCatalog(path=path, embedder_name=MODEL, dimension=DIM)


class TestQdrantLocal(VectorStoreContract):
    """Local mode admits one client per folder, so `reopen` closes every catalog opened on it before."""

    @pytest.fixture
    def catalog(self, tmp_path: Path) -> Iterator[StoreCatalog]:
        first = local(tmp_path / "qdrant")
        self.opened = [first]
        yield first
        for catalog in self.opened:
            catalog.close()

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        assert isinstance(catalog, QdrantCatalog)
        for opened in self.opened:
            opened.close()
        fresh = attrs.evolve(catalog)
        self.opened.append(fresh)
        return fresh
