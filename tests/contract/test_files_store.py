"""The storage contract run against the files adapter (markdown files as the record) over an in-memory index,
and over a Qdrant local-mode index (the `files_index = "qdrant"` setting)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.files.catalog import FilesCatalog
from agent_memory.adapters.files.store import FilesVectorStore
from agent_memory.adapters.in_memory import InMemoryCatalog
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.domain.ports import StoreCatalog
from tests.contract.vector_store_contract import DIM, MODEL, VectorStoreContract, ok, sample


class TestFilesStore(VectorStoreContract):
    @pytest.fixture
    def catalog(self, tmp_path: Path) -> StoreCatalog:
        return FilesCatalog(root=tmp_path / "files", index=InMemoryCatalog(embedder_name=MODEL))

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        """A new catalog over the same files and the same index data (the in-memory index lives in its object)."""
        assert isinstance(catalog, FilesCatalog)
        return FilesCatalog(root=catalog.root, index=catalog.index)

    def test_the_files_alone_are_durable(self, tmp_path: Path) -> None:
        """With a brand-new, empty index the files still give every memory back: the index is only derived."""
        kept = sample(store="kept")
        first = ok(FilesCatalog(root=tmp_path, index=InMemoryCatalog(embedder_name=MODEL)).open("kept", create=True))
        assert isinstance(first, FilesVectorStore)
        ok(first.add([m for m, _ in kept], [v for _, v in kept]))
        again = ok(FilesCatalog(root=tmp_path, index=InMemoryCatalog(embedder_name=MODEL)).open("kept", create=False))
        assert isinstance(again, FilesVectorStore)
        assert ok(again.count()) == len(kept)
        assert ok(again.get([m.id for m, _ in kept])) == [m for m, _ in kept]


@pytest.mark.variant
class TestFilesStoreOverQdrant(VectorStoreContract):
    """The same files over another backend's index: the files backend needs only a StoreCatalog for it."""

    @pytest.fixture
    def catalog(self, tmp_path: Path) -> Iterator[StoreCatalog]:
        index = QdrantCatalog(path=tmp_path / "files-index-qdrant", embedder_name=MODEL, dimension=DIM)
        yield FilesCatalog(root=tmp_path / "files", index=index)
        index.close()

    def reopen(self, catalog: StoreCatalog) -> StoreCatalog:
        """A new catalog over the same files; local mode admits one client per folder, so the index is the same."""
        assert isinstance(catalog, FilesCatalog)
        return FilesCatalog(root=catalog.root, index=catalog.index)
