"""The storage contract run against the in-memory reference adapter."""

from __future__ import annotations

import pytest

from agent_memory.adapters.in_memory import InMemoryCatalog
from agent_memory.domain.ports import StoreCatalog
from tests.contract.vector_store_contract import MODEL, VectorStoreContract


class TestInMemoryStore(VectorStoreContract):
    @pytest.fixture
    def catalog(self, tmp_path: object) -> StoreCatalog:
        return InMemoryCatalog(embedder_name=MODEL)

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        return catalog  # the data lives in the catalog object itself
