"""The composition root picks each port's adapter from the settings, without connecting to anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.feeds.keywords import FedKeywordIndex
from agent_memory.adapters.feeds.parts import FedPartVectors
from agent_memory.adapters.files.catalog import FilesCatalog
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.keywords import QdrantKeywordIndex
from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex
from agent_memory.adapters.sqlite_parts import SqlitePartVectors
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings


def service_with(tmp_path: Path, **flags: str):  # type: ignore[no-untyped-def]
    settings = load_settings({"data_dir": str(tmp_path), **flags}, {"HOME": str(tmp_path)}).unwrap()
    return build_service(settings, embedder=HashingEmbedder()).unwrap()


@pytest.mark.parametrize("backend", ["chroma", "files", "qdrant"])
def test_embedded_backends_keep_keywords_in_sqlite_beside_their_data(tmp_path: Path, backend: str) -> None:
    keywords = service_with(tmp_path, backend=backend).keywords
    assert isinstance(keywords, SqliteKeywordIndex)
    assert keywords.path == tmp_path / f"{backend}-keywords.sqlite3"


def test_a_qdrant_server_keeps_keywords_in_its_own_sparse_vectors(tmp_path: Path) -> None:
    service = service_with(tmp_path, backend="qdrant", qdrant_url="http://127.0.0.1:9")  # never contacted here
    assert isinstance(service.keywords, QdrantKeywordIndex)
    assert not list(tmp_path.glob("*.sqlite3"))


@pytest.mark.parametrize("backend", ["chroma", "files", "qdrant"])
def test_embedded_backends_keep_parts_in_sqlite_with_no_feed(tmp_path: Path, backend: str) -> None:
    parts = service_with(tmp_path, backend=backend).parts
    assert isinstance(parts, SqlitePartVectors)
    assert parts.path == tmp_path / f"{backend}-parts.sqlite3"


def test_a_chroma_server_feeds_the_local_keywords_and_parts_from_its_change_feeds(tmp_path: Path) -> None:
    service = service_with(tmp_path, chroma_host="127.0.0.1", chroma_port="9")  # never contacted here
    assert isinstance(service.keywords, FedKeywordIndex) and isinstance(service.parts, FedPartVectors)
    assert service.keywords.local.path == tmp_path / "chroma-keywords.sqlite3"
    assert service.parts.local.path == tmp_path / "chroma-parts.sqlite3"


def test_a_qdrant_server_feeds_the_local_parts(tmp_path: Path) -> None:
    service = service_with(tmp_path, backend="qdrant", qdrant_url="http://127.0.0.1:9")  # never contacted here
    assert isinstance(service.parts, FedPartVectors)
    assert service.parts.local.path == tmp_path / "qdrant-parts.sqlite3"


def test_the_files_backend_indexes_with_embedded_chroma_by_default(tmp_path: Path) -> None:
    catalog = service_with(tmp_path, backend="files").catalog
    assert isinstance(catalog, FilesCatalog) and catalog.root == tmp_path / "files"
    assert isinstance(catalog.index, ChromaCatalog) and catalog.index.path == tmp_path / "files-index"


def test_files_index_qdrant_puts_the_files_backends_index_in_qdrant(tmp_path: Path) -> None:
    catalog = service_with(tmp_path, backend="files", files_index="qdrant").catalog
    assert isinstance(catalog, FilesCatalog) and catalog.root == tmp_path / "files"
    assert isinstance(catalog.index, QdrantCatalog) and catalog.index.path == tmp_path / "files-index-qdrant"
    served = service_with(tmp_path, backend="files", files_index="qdrant", qdrant_url="http://127.0.0.1:9").catalog
    assert isinstance(served, FilesCatalog) and isinstance(served.index, QdrantCatalog)
    assert served.index.path is None and served.index.url == "http://127.0.0.1:9"  # never contacted here


@pytest.mark.parametrize(
    "flags",
    [
        {"backend": "chroma", "chroma_host": "127.0.0.1", "chroma_port": "9"},
        {"backend": "qdrant", "qdrant_url": "http://127.0.0.1:9"},
    ],
)
def test_a_server_backend_holds_write_locks_and_journals_in_the_server(tmp_path: Path, flags: dict[str, str]) -> None:
    from agent_memory.adapters.lease_journal import LeaseBatchJournal
    from agent_memory.adapters.lease_locks import LeaseWriteLocks

    service = service_with(tmp_path, **flags)  # never contacted here
    assert isinstance(service.locks, LeaseWriteLocks) and isinstance(service.journal, LeaseBatchJournal)
    assert service.journal.leases is service.locks  # the journal sees the leases its writers hold


@pytest.mark.parametrize(
    "flags",
    [
        {"backend": "chroma", "chroma_host": "127.0.0.1", "chroma_port": "9"},
        {"backend": "qdrant", "qdrant_url": "http://127.0.0.1:9"},
    ],
)
def test_a_server_backends_stores_claim_paths_in_the_server_once_however_often_the_catalog_is_reused(
    tmp_path: Path, flags: dict[str, str]
) -> None:
    from agent_memory.adapters.claimed_store import ClaimingCatalog

    service = service_with(tmp_path, **flags)  # never contacted here
    assert isinstance(service.catalog, ClaimingCatalog)
    assert service.catalog.claims.ledger is service.locks.ledger  # the lease's ledger, on its own client
    settings = load_settings({"data_dir": str(tmp_path), **flags}, {"HOME": str(tmp_path)}).unwrap()
    again = build_service(settings, catalog=service.catalog, embedder=service.embedder).unwrap()  # the memory server
    assert again.catalog is service.catalog  # not wrapped twice
    assert isinstance(again.parts, FedPartVectors)  # the engine's catalog is still seen under the wrapper


def test_data_on_this_machine_claims_nothing_in_an_engine(tmp_path: Path) -> None:
    from agent_memory.adapters.claimed_store import ClaimingCatalog

    assert not isinstance(service_with(tmp_path, backend="chroma").catalog, ClaimingCatalog)


@pytest.mark.parametrize(
    "flags", [{"backend": "chroma"}, {"backend": "files", "chroma_host": "127.0.0.1", "chroma_port": "9"}]
)
def test_data_on_this_machine_keeps_its_lock_files(tmp_path: Path, flags: dict[str, str]) -> None:
    from agent_memory.adapters.batch_journal import FileBatchJournal
    from agent_memory.adapters.write_locks import FileWriteLocks

    service = service_with(tmp_path, **flags)
    assert isinstance(service.locks, FileWriteLocks) and isinstance(service.journal, FileBatchJournal)
