"""The composition root: builds the service from frozen settings, importing only the chosen adapters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from returns.result import Failure, Result, Success

from agent_memory.domain.duplicates import DuplicatePolicy
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import (
    BatchJournal,
    CalibratedEmbedder,
    Clock,
    DuplicateCalibrated,
    Embedder,
    IdempotencyKeys,
    KeywordIndex,
    PartVectors,
    RefereedCommits,
    StoreCatalog,
    WriteLocks,
)
from agent_memory.domain.search.relevance import UNCALIBRATED
from agent_memory.domain.service import MemoryService, SearchPolicy
from agent_memory.entrypoints.settings import Settings

if TYPE_CHECKING:
    from agent_memory.adapters.lease_locks import LeaseWriteLocks
    from agent_memory.adapters.shared.ledger import Ledger


def build_embedder(settings: Settings) -> Result[Embedder, DomainError]:
    """The configured local embedder; its model loads on first use, not here, but for a model directory new to this
    machine, which loads here to be checked (its verdict is then kept in the data directory's cache/model-checks)."""
    from agent_memory.adapters.onnx_embedder import make_embedder

    return make_embedder(settings.embedder, verdicts=settings.data_dir / "cache" / "model-checks")


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


def _mirror_nodes(catalog: StoreCatalog, folder: Path) -> None:
    """Over a Chroma server, this node's mirrors of the stores it searches, fed from the engine's "vectors" feed
    (adapters/chroma/node_mirror.py; built only once the catalog is kept warm), kept in files under `folder`."""
    from agent_memory.adapters.chroma.catalog import ChromaCatalog
    from agent_memory.adapters.chroma.ledger import ChromaLedger
    from agent_memory.adapters.chroma.node_mirror import NodeMirrors

    if isinstance(catalog, ChromaCatalog):
        catalog.node = NodeMirrors(ChromaLedger.of(catalog), catalog.mirror_limit, folder=folder)


def _missing_qdrant(purpose: str) -> DomainError | None:
    from agent_memory.entrypoints.extras import missing_extra

    return missing_extra("qdrant", purpose)


def build_catalog(settings: Settings, embedder: Embedder) -> Result[StoreCatalog, DomainError]:
    """The configured backend's store catalog; only that backend's library is imported."""
    if settings.backend == "chroma":
        catalog = _chroma(settings, embedder, path=settings.data_dir / "chroma")
        if settings.chroma_host:
            _mirror_nodes(catalog, settings.data_dir)
        return Success(catalog)
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


def release_storage(catalog: StoreCatalog) -> None:
    """Close the engine clients under a catalog `build_catalog` made: embedded Chroma's files and in-process search
    index, a Chroma server's HTTP client, Qdrant's client (in local mode its folder lock, so another process may open
    the folder). A later use of the catalog opens them again. For a process that keeps many storages and gives the
    idle ones back (the memory server)."""
    inner = getattr(catalog, "index", catalog) if catalog.backend == "files" else catalog
    inner = _engine_catalog(inner)
    if inner.backend == "chroma":
        from agent_memory.adapters.chroma.catalog import ChromaCatalog

        if isinstance(inner, ChromaCatalog):
            inner.session.close()
    elif inner.backend == "qdrant":
        from agent_memory.adapters.qdrant.catalog import QdrantCatalog

        if isinstance(inner, QdrantCatalog):
            inner.close()


def _engine_catalog(catalog: StoreCatalog) -> StoreCatalog:
    """The engine's own catalog under a ClaimingCatalog (a server engine's, as `build_service` wraps it)."""
    from agent_memory.adapters.claimed_store import ClaimingCatalog

    return catalog.inner if isinstance(catalog, ClaimingCatalog) else catalog


def _feed_ledger(settings: Settings, catalog: StoreCatalog) -> Ledger | None:
    """The ledger a server engine holds the side indexes' change feeds in; None on one machine's own data (embedded
    Chroma or Qdrant, files), whose SQLite side indexes are the truth and need no feed."""
    catalog = _engine_catalog(catalog)
    if settings.backend == "chroma" and settings.chroma_host:
        from agent_memory.adapters.chroma.catalog import ChromaCatalog
        from agent_memory.adapters.chroma.ledger import ChromaLedger

        if not isinstance(catalog, ChromaCatalog):
            return None
        # the node mirror's own: the feeds of a store then share one probe per search (adapters/shared/feed_probe.py)
        return catalog.node.ledger if catalog.node is not None else ChromaLedger.of(catalog)
    if settings.backend == "qdrant" and settings.qdrant_url:
        from agent_memory.adapters.qdrant.catalog import QdrantCatalog
        from agent_memory.adapters.qdrant.ledger import QdrantLedger

        return QdrantLedger.of(catalog) if isinstance(catalog, QdrantCatalog) else None
    return None


def build_keywords(settings: Settings, catalog: StoreCatalog) -> KeywordIndex:
    """The keyword side: inside a Qdrant server (shared by every machine using it); with a Chroma server, SQLite
    beside the data fed from the server's change feed (so every machine finds what any wrote); else SQLite beside
    the data. SQLite keeps the rows and a Tantivy index beside it ranks them at top-k cost (issue 47)."""
    if settings.backend == "qdrant" and settings.qdrant_url:
        from agent_memory.adapters.qdrant.catalog import QdrantCatalog
        from agent_memory.adapters.qdrant.keywords import keyword_index_for

        engine = _engine_catalog(catalog)
        if isinstance(engine, QdrantCatalog):
            return keyword_index_for(engine)
    from agent_memory.adapters.tantivy_keywords import TantivyKeywordIndex

    # beside the data of the backend it indexes, so switching backends never mixes indexes
    local = TantivyKeywordIndex(settings.data_dir / f"{settings.backend}-keywords.sqlite3")
    ledger = _feed_ledger(settings, catalog)
    if ledger is None:
        return local
    from agent_memory.adapters.feeds.keywords import FedKeywordIndex

    return FedKeywordIndex(local, ledger)


def build_parts(settings: Settings, catalog: StoreCatalog | None = None) -> PartVectors:
    """Long memories' later parts: SQLite beside the data (on every backend: long memories are few, so a search
    ranks their parts by brute force in this process), fed from the engine's change feed on a server engine."""
    from agent_memory.adapters.sqlite_parts import SqlitePartVectors

    local = SqlitePartVectors(settings.data_dir / f"{settings.backend}-parts.sqlite3")
    ledger = None if catalog is None else _feed_ledger(settings, catalog)
    if ledger is None:
        return local
    from agent_memory.adapters.feeds.parts import FedPartVectors

    return FedPartVectors(local, ledger)


def _file_locks(settings: Settings) -> WriteLocks:
    from agent_memory.adapters.write_locks import FileWriteLocks

    # every process of this machine that opens this data directory and backend takes the same locks
    return FileWriteLocks(settings.data_dir / "locks" / settings.backend)


_ENGINE_LOCKS: dict[tuple[object, ...], LeaseWriteLocks] = {}  # this process's engine-held locks, by storage settings


def build_engine_locks(settings: Settings, *, clock: Clock | None = None) -> LeaseWriteLocks | None:
    """Write locks held in the storage engine (leases in its ledger, adapters/lease_locks.py) when the backend is a
    Chroma or Qdrant server that other machines may share; None for the embedded engines and the files backend, whose
    data lives on this machine (its file locks order every writer). One per process and storage settings, so the
    batch journal sees the leases its writers hold; the engine's library is imported only here. `clock` (the system
    clock when None) stamps the tickets of the locks this call builds, the first for these settings: a fault test
    gives a node's process a skewed one."""
    if settings.backend == "chroma" and settings.chroma_host:
        key: tuple[object, ...] = ("chroma", settings.chroma_host, settings.chroma_port, settings.collection)
    elif settings.backend == "qdrant" and settings.qdrant_url and _missing_qdrant("The qdrant backend") is None:
        key = ("qdrant", settings.qdrant_url, settings.collection)
    else:
        return None
    key = (*key, str(settings.data_dir), settings.lease_ttl_seconds)
    if key not in _ENGINE_LOCKS:
        from agent_memory.adapters.lease_locks import LeaseWriteLocks

        ledger: Ledger
        if key[0] == "chroma":
            from agent_memory.adapters.chroma.catalog import ChromaCatalog
            from agent_memory.adapters.chroma.ledger import ChromaLedger

            ledger = ChromaLedger.of(
                ChromaCatalog(
                    host=settings.chroma_host,
                    port=settings.chroma_port,
                    collection=settings.collection,
                    embedder_name="",
                    dimension=1,
                )
            )
        else:
            from agent_memory.adapters.qdrant.catalog import QdrantCatalog
            from agent_memory.adapters.qdrant.ledger import QdrantLedger

            # its own client: a lease's heartbeat never waits behind this process's long writes
            ledger = QdrantLedger.of(
                QdrantCatalog(
                    url=settings.qdrant_url,
                    api_key=settings.qdrant_api_key,
                    collection=settings.collection,
                    embedder_name="",
                    dimension=1,
                )
            )
        # no local lock file before it: the lease's ticket queue is first come first served across every process
        _ENGINE_LOCKS[key] = LeaseWriteLocks(ledger, ttl=settings.lease_ttl_seconds, clock=clock)
    return _ENGINE_LOCKS[key]


def build_keys(settings: Settings) -> IdempotencyKeys:
    """Where idempotency keys are kept: in the engine's ledger beside the leases for a server backend (every machine
    sees them), else in a folder of the data directory (one per backend)."""
    leases = build_engine_locks(settings)
    if leases is not None:
        from agent_memory.adapters.idempotency_keys import LedgerIdempotencyKeys

        return LedgerIdempotencyKeys(leases.ledger)
    from agent_memory.adapters.idempotency_keys import FileIdempotencyKeys

    return FileIdempotencyKeys(settings.data_dir / "idempotency" / settings.backend)


def build_journal(
    settings: Settings, *, still_wanted: Callable[[], bool] | None = None, engine: bool = True
) -> BatchJournal:
    """The batch journal: in the storage engine beside its write locks (build_engine_locks) for a server backend,
    else beside the data (one folder per backend, as the file locks); `still_wanted` is asked before each commit (a
    server: is the client still there to read the acknowledgement?). `engine=False`: the folder's, whatever the
    backend (the caller brings write locks of its own)."""
    leases = build_engine_locks(settings) if engine else None
    if leases is not None:
        from agent_memory.adapters.lease_journal import LeaseBatchJournal

        return (
            LeaseBatchJournal(leases) if still_wanted is None else LeaseBatchJournal(leases, still_wanted=still_wanted)
        )
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
            journal=journal or build_journal(settings, engine=locks is None),
            parts=parts,
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
    parts: PartVectors | None,
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
        duplicate_similarity=_duplicate_similarity(settings, embedder),
        on_duplicate=DuplicatePolicy(settings.on_duplicate),
        default_limit=settings.default_limit,
        default_store=settings.store,
    )
    if keywords is None:
        keywords = build_keywords(settings, catalog)
    if parts is None:
        parts = build_parts(settings, catalog)
    engine_locks = build_engine_locks(settings)
    if locks is None:
        locks = engine_locks or _file_locks(settings)
    if engine_locks is not None and _engine_catalog(catalog) is catalog:
        # a server engine other machines share: a memory is put at a path only by winning the path's claim there
        # (a catalog already wrapped, from another service of this process, is taken as it is)
        from agent_memory.adapters.claimed_store import ClaimingCatalog
        from agent_memory.adapters.path_claims import PathClaims

        leases = engine_locks  # a batch holding a path is voided only under the store's lease (taken to contend)
        catalog = ClaimingCatalog(
            catalog,
            PathClaims(leases.ledger),
            may_void=lambda store: leases.held(store) is not None,
            contend=leases.exclusive,
        )
    referee = _referee(catalog, journal)
    return MemoryService(
        keys=build_keys(settings),
        referee=referee,
        catalog=catalog,
        embedder=embedder,
        clock=clock,
        policy=policy,
        keywords=keywords,
        locks=locks,
        journal=journal,
        parts=parts,
    )


def _referee(catalog: StoreCatalog, journal: BatchJournal) -> RefereedCommits | None:
    """Creates that only add commit without the write lease over a server engine whose stores claim paths in the
    ledger the lease journal keeps (adapters/refereed_batches.py); None otherwise (every write under the lock)."""
    from agent_memory.adapters.claimed_store import ClaimingCatalog
    from agent_memory.adapters.lease_journal import LeaseBatchJournal

    if not (isinstance(catalog, ClaimingCatalog) and isinstance(journal, LeaseBatchJournal)):
        return None
    if catalog.claims.ledger is not journal.ledger:
        return None
    from agent_memory.adapters.refereed_batches import RefereedBatches

    return RefereedBatches(journal)


def _duplicate_similarity(settings: Settings, embedder: Embedder) -> float | None:
    """The near-duplicate threshold: the setting's, else the model's calibrated one, else none (no check)."""
    if settings.duplicate_similarity is not None:
        return settings.duplicate_similarity
    return embedder.duplicate_similarity if isinstance(embedder, DuplicateCalibrated) else None
