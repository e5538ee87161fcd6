"""The LangGraph store for async code: `MemoryStore` whose TTL sweep and sweeper are coroutines, as in
AsyncSqliteStore, so `await store.sweep_ttl()`, `await store.start_ttl_sweeper()` and `await
store.stop_ttl_sweeper()` ported from it work unchanged. Everything else is MemoryStore's (its `a…` calls run on
the store's own threads, batched; its sync calls block); `MemoryStore.asweep_ttl` awaits the same sweep.
"""

from __future__ import annotations

import asyncio
import logging

from agent_memory.entrypoints.langgraph.store import MemoryStore

__all__ = ["AsyncMemoryStore"]

_log = logging.getLogger(__name__)
_DEFAULT_INTERVAL = 5.0  # minutes between sweeps without a TTLConfig's sweep_interval_minutes (AsyncSqliteStore's)


class AsyncMemoryStore(MemoryStore):
    """MemoryStore with AsyncSqliteStore's coroutine TTL methods (module docstring). Use it as `async with`."""

    __slots__ = ("_sweep_stop", "_sweep_task")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._sweep_task: asyncio.Task[None] | None = None
        self._sweep_stop: asyncio.Event | None = None

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        """Delete every item whose TTL ran out for good (on a thread); how many were deleted."""
        return await self.asweep_ttl()

    async def start_ttl_sweeper(  # type: ignore[override]
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep every `sweep_interval_minutes` (default the TTLConfig's, else 5) in a task of the running loop,
        until `stop_ttl_sweeper`; the task (a finished one without a TTLConfig, as AsyncSqliteStore answers)."""
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._sweep_task is not None and not self._sweep_task.done():
            return self._sweep_task
        minutes = float(sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or _DEFAULT_INTERVAL)
        stop = self._sweep_stop = asyncio.Event()

        async def every() -> None:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(stop.wait(), timeout=minutes * 60)
                    return
                except TimeoutError:
                    pass
                try:
                    await self.asweep_ttl()
                except Exception:  # a failed sweep is logged and tried again next time, as AsyncSqliteStore does
                    _log.exception("The TTL sweep failed; it runs again in %s minutes.", minutes)

        self._sweep_task = asyncio.create_task(every(), name="memory-store-ttl-sweeper")
        return self._sweep_task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Stop the sweeper task; whether it has stopped within `timeout` seconds (True when none ran)."""
        task = self._sweep_task
        if task is None or task.done():
            self._sweep_task = None
            return True
        if self._sweep_stop is not None:
            self._sweep_stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except TimeoutError:
            return False
        self._sweep_task = None
        return True

    async def aclose(self) -> None:
        await self.stop_ttl_sweeper()
        await super().aclose()

    def close(self) -> None:
        """As MemoryStore.close; a sweeper task still running is told to stop (await `aclose` to wait for it)."""
        if self._sweep_stop is not None:
            self._sweep_stop.set()
        super().close()
