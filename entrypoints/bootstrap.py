"""The composition root: builds the service from frozen settings, importing only the chosen adapters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import (
    BatchJournal,
    CalibratedEmbedder,
    Clock,
    Embedder,
    KeywordIndex,
    PartVectors,
    StoreCatalog,
    WriteLocks,
)
from agent_memory.domain.search.relevance import UNCALIBRATED
from agent_memory.domain.service import MemoryService, SearchPolicy
from agent_memory.entrypoints.settings import Settings


def build_embedder(settings: Settings) -> Result[Embedder, DomainError]:
    """The configured local embedder; its model loads on first use, not here."""
    from agent_memory.adapters.onnx_embedder import make_embedder

    return make_embedder(settings.embedder)


def _chroma(settings: Settings, embedder: Embedder, *, path: Path) -> StoreCatalog:
    from agent_memory.adapters.chroma.catalog import ChromaCatalog

    return ChromaCatalog(
        path=None if settings.chroma_host else path,
        host=settings.chroma_host,
        port=settings.chroma_port,
        collection=settings.collection,
        embedder_name=embedder.name,
        dimension=embedder.dimension,
    )


def _qdrant(settings: Settings, embedder: Embedder, *, path: Path) -> StoreCatalog:
    from agent_memory.adapters.qdrant.catalog import QdrantCatalog

    return QdrantCatalog(
        path=None if settings.qdrant_url else path,
        url=settings.qdrant_url,
        api_key=settings.qdrant_api_key,
        collection=settings.collection,
        embedder_name=embedder.name,
        dimension=embedder.dimension,
    )


def _files(settings: Settings, embedder: Embedder) -> Result[StoreCatalog, DomainError]:
    from agent_memory.adapters.files.catalog import FilesCatalog

    # the markdown files are the record; the search index beside them is the backend `files_index` names
    if settings.files_index == "qdrant":
        absent = _missing_qdrant("The files backend's qdrant index (files_index)")
        if absent is not None:
            return Failure(absent)
        index = _qdrant(settings, embedder, path=settings.data_dir / "files-index-qdrant")
    else:
        index = _chroma(settings, embedder, path=settings.data_dir / "files-index")
    return Success(FilesCatalog(root=settings.data_dir / "files", index=index))


def _missing_qdrant(purpose: str) -> DomainError | None:
    from agent_memory.entrypoints.extras import missing_extra

    return missing_extra("qdrant", purpose)


def build_catalog(settings: Settings, embedder: Embedder) -> Result[StoreCatalog, DomainError]:
    """The configured backend's store catalog; only that backend's library is imported."""
    if settings.backend == "chroma":
        return Success(_chroma(settings, embedder, path=settings.data_dir / "chroma"))
    if settings.backend == "qdrant":
        absent = _missing_qdrant("The qdrant backend")
        return (
            Success(_qdrant(settings, embedder, path=settings.data_dir / "qdrant"))
            if absent is None
            else Failure(absent)
        )
    if settings.backend == "files":
        return _files(settings, embedder)
    return Failure(DomainError(ErrorCode.INVALID_INPUT, f"Unknown backend {settings.backend!r}."))


def build_keywords(settings: Settings, catalog: StoreCatalog) -> KeywordIndex:
    """The keyword side: inside a Qdrant server (shared by every machine using it), else SQLite FTS5 beside the data."""
    if settings.backend == "qdrant" and settings.qdrant_url:
        from agent_memory.adapters.qdrant.catalog import QdrantCatalog
        from agent_memory.adapters.qdrant.keywords import keyword_index_for

        if isinstance(catalog, QdrantCatalog):
            return keyword_index_for(catalog)
    from agent_memory.adapters.sqlite_keywords import SqliteKeywordIndex

    # beside the data of the backend it indexes, so switching backends never mixes indexes
    return SqliteKeywordIndex(settings.data_dir / f"{settings.backend}-keywords.sqlite3")


def build_parts(settings: Settings) -> PartVectors:
    """Long memories' later parts: SQLite beside the data (on every backend: long memories are few, so a search
    ranks their parts by brute force in this process)."""
    from agent_memory.adapters.sqlite_parts import SqlitePartVectors

    return SqlitePartVectors(settings.data_dir / f"{settings.backend}-parts.sqlite3")


def build_journal(settings: Settings, *, still_wanted: Callable[[], bool] | None = None) -> BatchJournal:
    """The batch journal beside the data (one folder per backend, as the write locks); `still_wanted` is asked
    before each commit (a server: is the client still there to read the acknowledgement?)."""
    from agent_memory.adapters.batch_journal import FileBatchJournal

    folder = settings.data_dir / "journals" / settings.backend
    return FileBatchJournal(folder) if still_wanted is None else FileBatchJournal(folder, still_wanted=still_wanted)


def build_service(
    settings: Settings,
    *,
    catalog: StoreCatalog | None = None,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
    keywords: KeywordIndex | None = None,
    locks: WriteLocks | None = None,
    journal: BatchJournal | None = None,
    parts: PartVectors | None = None,
) -> Result[MemoryService, DomainError]:
    """Wire the service; pass any port to override the configured adapter (tests, other apps)."""
    return Result.do(
        _wire(
            settings,
            chosen_embedder,
            chosen_catalog,
            clock=clock,
            keywords=keywords,
            locks=locks,
            journal=journal or build_journal(settings),
            parts=parts or build_parts(settings),
        )
        for chosen_embedder in (build_embedder(settings) if embedder is None else Success(embedder))
        for chosen_catalog in (build_catalog(settings, chosen_embedder) if catalog is None else Success(catalog))
    )


def _wire(
    settings: Settings,
    embedder: Embedder,
    catalog: StoreCatalog,
    *,
    clock: Clock | None,
    keywords: KeywordIndex | None,
    locks: WriteLocks | None,
    journal: BatchJournal,
    parts: PartVectors,
) -> MemoryService:
    """The service over a chosen embedder and catalog; the light adapters are built here unless overridden."""
    if clock is None:
        from agent_memory.adapters.clock import SystemClock

        clock = SystemClock()
    policy = SearchPolicy(
        decay_window_hours=settings.decay_hours,
        min_confidence=settings.min_confidence,
        min_similarity=settings.min_similarity,
        relevance=embedder.relevance_rule if isinstance(embedder, CalibratedEmbedder) else UNCALIBRATED,
        default_limit=settings.default_limit,
        default_store=settings.store,
    )
    if keywords is None:
        keywords = build_keywords(settings, catalog)
    if locks is None:
        from agent_memory.adapters.write_locks import FileWriteLocks

        # every process of this machine that opens this data directory and backend takes the same locks
        locks = FileWriteLocks(settings.data_dir / "locks" / settings.backend)
    return MemoryService(
        catalog=catalog,
        embedder=embedder,
        clock=clock,
        policy=policy,
        keywords=keywords,
        locks=locks,
        journal=journal,
        parts=parts,
    )
