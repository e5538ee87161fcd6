"""Write locks inside one process: the service's default when no lock directory is wired in."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from returns.result import Result

from agent_memory.domain.errors import DomainError

T = TypeVar("T")


class ThreadWriteLocks:
    """One reentrant lock per store name, shared by this process's threads (not by other processes)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}

    def exclusive(self, store: str, work: Callable[[], Result[T, DomainError]]) -> Result[T, DomainError]:
        with self._guard:
            lock = self._locks.setdefault(store, threading.RLock())
        with lock:
            return work()
