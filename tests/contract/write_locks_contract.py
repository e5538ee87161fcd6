"""The WriteLocks contract: one suite, run against every adapter of the port."""

from __future__ import annotations

import threading
import time

import pytest
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import WriteLocks


class WriteLocksContract:
    """Subclasses provide a `locks` fixture."""

    def test_runs_the_work_and_returns_its_result(self, locks: WriteLocks) -> None:
        assert locks.exclusive("default", lambda: Success(42)) == Success(42)
        failed: Result[int, DomainError] = Failure(DomainError(ErrorCode.INVALID_INPUT, "no"))
        assert locks.exclusive("default", lambda: failed) == failed

    def test_is_reentrant_within_one_thread(self, locks: WriteLocks) -> None:
        inner = lambda: locks.exclusive("default", lambda: Success("inner"))  # noqa: E731
        assert locks.exclusive("default", inner) == Success("inner")

    def test_two_threads_never_change_one_store_at_once(self, locks: WriteLocks) -> None:
        inside = 0
        overlaps: list[int] = []
        guard = threading.Lock()

        def work() -> Result[None, DomainError]:
            nonlocal inside
            with guard:
                inside += 1
                overlaps.append(inside)
            time.sleep(0.002)
            with guard:
                inside -= 1
            return Success(None)

        threads = [
            threading.Thread(target=lambda: [locks.exclusive("default", work) for _ in range(15)]) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(overlaps) == 60 and max(overlaps) == 1

    def test_other_stores_are_not_blocked(self, locks: WriteLocks) -> None:
        holding = threading.Event()
        release = threading.Event()

        def hold() -> Result[None, DomainError]:
            holding.set()
            release.wait(timeout=30)
            return Success(None)

        holder = threading.Thread(target=lambda: locks.exclusive("alpha", hold))
        holder.start()
        try:
            assert holding.wait(timeout=30)
            assert locks.exclusive("beta", lambda: Success("free")) == Success("free")
        finally:
            release.set()
            holder.join(timeout=30)


__all__ = ["WriteLocksContract", "pytest"]
