"""The composition root: builds the service from frozen settings, importing only the chosen adapters."""

from __future__ import annotations

from returns.result import Failure, Result, Success

from domain.errors import DomainError, ErrorCode
from domain.ports import Clock, Embedder, StoreCatalog
from domain.service import MemoryService, SearchPolicy
from entrypoints.settings import Settings


def build_embedder(settings: Settings) -> Result[Embedder, DomainError]:
    """The configured local embedder; its model loads on first use, not here."""
    from adapters.onnx_embedder import make_embedder

    return make_embedder(settings.embedder)


def build_catalog(settings: Settings, embedder: Embedder) -> Result[StoreCatalog, DomainError]:
    """The configured backend's store catalog; only that backend's library is imported."""
    if settings.backend == "chroma":
        from adapters.chroma_store import ChromaCatalog

        return Success(
            ChromaCatalog(
                path=None if settings.chroma_host else settings.data_dir / "chroma",
                host=settings.chroma_host,
                port=settings.chroma_port,
                collection=settings.collection,
                embedder_name=embedder.name,
                dimension=embedder.dimension,
            )
        )
    return Failure(
        DomainError(ErrorCode.INVALID_INPUT, f"The {settings.backend!r} backend is not available in this version.")
    )


def build_service(
    settings: Settings,
    *,
    catalog: StoreCatalog | None = None,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
) -> Result[MemoryService, DomainError]:
    """Wire the service; pass any port to override the configured adapter (tests, other apps)."""
    if embedder is None:
        built_embedder = build_embedder(settings)
        if isinstance(built_embedder, Failure):
            return built_embedder
        embedder = built_embedder.unwrap()
    if catalog is None:
        built_catalog = build_catalog(settings, embedder)
        if isinstance(built_catalog, Failure):
            return built_catalog
        catalog = built_catalog.unwrap()
    if clock is None:
        from adapters.clock import SystemClock

        clock = SystemClock()
    policy = SearchPolicy(
        decay_window_hours=settings.decay_hours,
        min_confidence=settings.min_confidence,
        default_limit=settings.default_limit,
        default_store=settings.store,
    )
    return Success(MemoryService(catalog=catalog, embedder=embedder, clock=clock, policy=policy))
