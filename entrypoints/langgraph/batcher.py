"""The LangGraph store's async calls and background work: a bounded pool of threads, single calls run as one batch.

`aget`, `aput`, `asearch`, `adelete` and `alist_namespaces` each hand one operation to `abatch`. Rather than a
thread per call (6,000 concurrent calls were 6,000 jobs for the event loop's default executor), the store runs
every call on a pool of `max_concurrency` threads, and the single operations that arrive while those threads are
busy (or in the same tick) wait together and run as one batch on one thread. That batch is deduplicated as
LangGraph's own async stores do theirs (langgraph.store.base.batch): equal reads are read once, and of several
puts of one key only the last is written; and its puts run before its reads (calls made concurrently have no
order among themselves, so this is one order they could have had), so that puts of new items are created
together. A batch of several operations given to `abatch` by one
caller keeps its order and runs as it is. Each single call gets its own result or its own exception.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from langgraph.store.base import Op, PutOp
from langgraph.store.base import Result as OpResult

DEFAULT_CONCURRENCY = 4  # threads the store's async calls run on at most (the backends block; 2 cores here)
Outcome = OpResult | BaseException  # one operation's result, or what it raised
RunEach = Callable[[list[Op]], list[Outcome]]
RunBatch = Callable[[list[Op]], list[OpResult]]


def deduplicated(ops: Sequence[Op]) -> tuple[list[int], list[Op]]:
    """The operations to run, puts first, and for each given one the index of the run operation whose result it
    takes. Every operation of a batch was waiting when the batch began, so any order of them is one they could
    have had: equal reads are read once, the last put of a key wins, and the puts (one per key) run before the
    reads, so that the puts of new items form one run, created together."""
    runs: list[Op] = []
    listen: list[int] = []
    seen: dict[object, int] = {}
    for op in ops:
        identity: object = ("put", op.namespace, op.key) if isinstance(op, PutOp) else ("read", repr(op))
        at = seen.get(identity)
        if at is None:
            seen[identity] = at = len(runs)
            runs.append(op)
        elif isinstance(op, PutOp):
            runs[at] = op  # the last put of a key wins
        listen.append(at)
    order = sorted(range(len(runs)), key=lambda at: not isinstance(runs[at], PutOp))  # stable: puts first
    place = {old: new for new, old in enumerate(order)}
    return [place[at] for at in listen], [runs[at] for at in order]


class _LoopState:
    """One event loop's waiting operations and its share of the threads (asyncio primitives belong to a loop)."""

    __slots__ = ("flushing", "pending", "slots")  # flushing: the task that will take the pending ones

    def __init__(self, concurrency: int) -> None:
        self.pending: list[tuple[Op, asyncio.Future[OpResult]]] = []
        self.slots = asyncio.Semaphore(concurrency)
        self.flushing: asyncio.Task[None] | None = None


class AsyncRunner:
    """Runs a store's async calls on at most `concurrency` threads, single operations batched (module docstring)."""

    def __init__(self, run_each: RunEach, run_batch: RunBatch, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError(f"max_concurrency must be a whole number of at least 1, got {concurrency!r}.")
        self.concurrency = concurrency
        self._run_each, self._run_batch = run_each, run_batch
        self._executor: ThreadPoolExecutor | None = None
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()

    def _threads(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix="memory-store")
        return self._executor

    def _state(self, loop: asyncio.AbstractEventLoop) -> _LoopState:
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState(self.concurrency)
        return state

    async def one(self, op: Op) -> OpResult:
        """One checked operation, run in the next batch of this loop's waiting ones."""
        loop = asyncio.get_running_loop()
        state = self._state(loop)
        future: asyncio.Future[OpResult] = loop.create_future()
        state.pending.append((op, future))
        if state.flushing is None:
            state.flushing = loop.create_task(self._flush(state))
        return await future

    async def many(self, ops: list[Op]) -> list[OpResult]:
        """One caller's checked operations, in their order, on one of the threads."""
        loop = asyncio.get_running_loop()
        async with self._state(loop).slots:
            return await loop.run_in_executor(self._threads(), self._run_batch, ops)

    async def _flush(self, state: _LoopState) -> None:
        loop = asyncio.get_running_loop()
        async with state.slots:  # while every thread is busy, more operations join this batch
            state.flushing = None
            waiting, state.pending = state.pending, []
            live = [(op, future) for op, future in waiting if not future.done()]  # a cancelled call is dropped
            if not live:
                return
            listen, runs = deduplicated([op for op, _ in live])
            try:
                outcomes = await loop.run_in_executor(self._threads(), self._run_each, runs)
            except BaseException as error:  # the pool shut down, or this task was cancelled: every caller learns it
                outcomes = [error] * len(runs)
                if not isinstance(error, Exception):
                    _settle(live, listen, outcomes)
                    raise
            _settle(live, listen, outcomes)

    def close(self) -> None:
        """Let the threads go (the store's async calls start a new pool if called again)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None


def _settle(live: list[tuple[Op, asyncio.Future[OpResult]]], listen: list[int], outcomes: list[Outcome]) -> None:
    for (_, future), at in zip(live, listen, strict=True):
        if future.done():
            continue
        outcome = outcomes[at]
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)


def put_run(ops: list[Op], start: int) -> list[PutOp]:
    """The puts from `start` on, as long as each is of a key not seen in the run ([] if ops[start] is no put)."""
    run: list[PutOp] = []
    keys: set[tuple[tuple[str, ...], str]] = set()
    for op in ops[start:]:
        if not isinstance(op, PutOp) or (tuple(op.namespace), op.key) in keys:
            break
        keys.add((tuple(op.namespace), op.key))
        run.append(op)
    return run


def sweeping(sweep: Callable[[], object], minutes: float) -> tuple[threading.Thread, threading.Event]:
    """A daemon thread calling `sweep` every `minutes` until its event is set (the store's TTL sweeper)."""
    stop = threading.Event()

    def every() -> None:
        while not stop.wait(minutes * 60):
            sweep()

    thread = threading.Thread(target=every, name="memory-store-ttl-sweeper", daemon=True)
    thread.start()
    return thread, stop


def stop_sweeping(sweeper: tuple[threading.Thread, threading.Event], timeout: float | None) -> bool:
    """Stop a sweeper thread; whether it has stopped."""
    thread, stop = sweeper
    stop.set()
    thread.join(timeout)
    return not thread.is_alive()
