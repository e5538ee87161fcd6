"""The memory server's open storages: one per store key, opened at first use, sharing loaded models, closed when idle;
and the libraries of the first storage imported while its client is still connecting."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_memory.entrypoints.cli.server import streams as routed

# the settings that open the storage; the others (store, decay, limits) only shape each request's policy
STORAGE_FIELDS: tuple[str, ...] = ("data_dir", "backend", "collection", "chroma_host", "chroma_port", "qdrant_url")
STORAGE_FIELDS += ("qdrant_api_key", "embedder", "files_index")
_EMBEDDER = STORAGE_FIELDS.index("embedder")
_BACKEND, _QDRANT_URL = STORAGE_FIELDS.index("backend"), STORAGE_FIELDS.index("qdrant_url")

Key = tuple[object, ...]


def storage_key(settings: Any) -> Key:
    """Which open storage serves these settings."""
    return tuple(getattr(settings, name) for name in STORAGE_FIELDS)


def describe(key: Key) -> dict[str, object]:
    """A storage key as `memory server list` and the log show it: the settings it has (never the API key)."""
    shown = dict(zip(STORAGE_FIELDS, key, strict=True))
    shown.pop("qdrant_api_key", None)
    if not shown.get("chroma_host"):
        shown.pop("chroma_port", None)  # a default that nothing uses
    if shown.get("backend") != "files":
        shown.pop("files_index", None)
    return {name: str(value) if isinstance(value, Path) else value for name, value in shown.items() if value}


@dataclass
class Warm:
    """One open storage: the service it was opened with, when it was last used, how many MCP sessions hold it."""

    service: Any
    last_used: float
    pins: int = 0


class Storages:
    """The storages one server holds open. Every method but `held` and `exclusive_held` is called with the server's
    request lock held (no request runs meanwhile), so a storage is never closed under a command."""

    def __init__(self, still_wanted: Callable[[], bool]) -> None:
        self._still_wanted = still_wanted  # whether the running command's client is still there (its batches' gate)
        self._open: dict[Key, Warm] = {}
        self._embedders: dict[object, Any] = {}  # embedder setting -> the loaded embedder open storages share
        self.closed = 0  # storages closed while idle, over the server's life
        self.touched: set[Key] = set()  # the storages the running request used

    def service(self, settings: Any) -> Any:
        """The service for one request's settings: the open storage of its storage settings (opened at the first
        request that names them, sharing a loaded embedder) with the request's policy (store, decay, limits)."""
        from returns.result import Success

        from agent_memory.entrypoints.bootstrap import build_journal, build_service

        key = storage_key(settings)
        self.touched.add(key)
        warm = self._open.get(key)
        journal = build_journal(settings, still_wanted=self._still_wanted)
        if warm is None:
            built = build_service(settings, embedder=self._embedders.get(settings.embedder), journal=journal)
            match built:
                case Success(service):
                    self._open[key] = Warm(service, time.monotonic())
                    self._embedders[settings.embedder] = service.embedder
                    routed.log(f"opened {describe(key)}")
                    service.catalog.keep_warm()  # mirrors are read in the background, not in a search
            return built
        warm.last_used = time.monotonic()
        return build_service(
            settings,
            catalog=warm.service.catalog,
            embedder=warm.service.embedder,
            clock=warm.service.clock,
            keywords=warm.service.keywords,
            locks=warm.service.locks,
            journal=journal,
        )

    def pin(self, settings: Any, pinned: set[Key]) -> None:
        """An MCP session holds the storage of these settings open until `unpin` (its service keeps the clients)."""
        key = storage_key(settings)
        if key in self._open and key not in pinned:
            pinned.add(key)
            self._open[key].pins += 1

    def unpin(self, pinned: set[Key]) -> None:
        for key in pinned:
            if key in self._open:
                self._open[key].pins -= 1
        self.used(pinned)

    def used(self, keys: set[Key]) -> None:
        """The storages a request or session has just finished with count as used now."""
        now = time.monotonic()
        for key in keys:
            if key in self._open:
                self._open[key].last_used = now

    def close_idle(self, idle_seconds: float) -> None:
        """Close the storages no session holds and nothing used for `idle_seconds`, drop the embedders no open
        storage uses, and give the memory back."""
        if not self._open:
            return
        from agent_memory.entrypoints.bootstrap import release_storage

        now = time.monotonic()
        idle = [key for key, warm in self._open.items() if not warm.pins and now - warm.last_used >= idle_seconds]
        for key in idle:
            warm = self._open.pop(key)
            release_storage(warm.service.catalog)
            self.closed += 1
            routed.log(f"closed {describe(key)} (unused for {now - warm.last_used:.0f} s)")
        if idle:
            wanted = {key[_EMBEDDER] for key in self._open}
            for name in [name for name in self._embedders if name not in wanted]:
                del self._embedders[name]
            del warm
            _give_back_memory()

    def held(self) -> list[dict[str, object]]:
        """What each open storage is: its settings, how long it has been unused, the MCP sessions holding it."""
        now = time.monotonic()
        return [
            describe(key) | {"sessions": warm.pins, "idle_for_seconds": round(now - warm.last_used, 1)}
            for key, warm in list(self._open.items())
        ]

    def exclusive_held(self) -> bool:
        """Whether a live session holds a Qdrant local-mode folder (one process at a time: a successor could open
        nothing there)."""
        return any(key[_BACKEND] == "qdrant" and not key[_QDRANT_URL] and w.pins for key, w in list(self._open.items()))


def _give_back_memory() -> None:
    """Collect what closed storages left and hand the freed heap back to the system (glibc keeps it otherwise)."""
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def warm_up(backend: str | None) -> None:
    """Import the handlers and the first command's storage library while its client is still connecting."""
    import importlib

    modules = ["agent_memory.entrypoints.cli.in_process", "agent_memory.entrypoints.cli.handlers"]
    modules += ["agent_memory.entrypoints.bootstrap", "agent_memory.adapters.onnx_embedder"]
    if backend is not None:
        modules += [
            "agent_memory.adapters.qdrant.catalog" if backend == "qdrant" else "agent_memory.adapters.chroma.catalog"
        ]
    for module in modules:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
