"""LangGraph's writes by kind: new puts, puts over existing keys (updates: a changed text; same_value: the value
again, which only touches updated_at, no embedding) and deletes, each as `--calls`
concurrent async calls (`aput` / `adelete`) on a `MemoryStore` over a fresh data directory of each backend.
Prints one JSON object per backend (calls/s of each kind, and updates' and deletes' time as a multiple of new
puts'): on a shared machine compare the ratios within one run.

    PYTHONPATH=. python bench/langgraph_writes.py --backend chroma files qdrant --calls 200 --repeat 3

`--embedder hashing` keeps the model's time out (what is left is the store's own work); `--profile DIR` writes a
cProfile of each kind to DIR: the same 200 operations given to `MemoryStore.batch` in this thread, after the timed
round (the async calls run on the store's threads, which a profiler of this thread does not see).

`--fill N` puts N other items in the store first (an engine's index costs more as it grows); the rounds share the
store, each in namespaces of its own (a round deletes what it put).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langgraph.store.base import PutOp

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from agent_memory.langgraph import MemoryStore

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")


def text(n: int, round_: int) -> str:
    """A short note, different for every key and round (so an update re-embeds, as a changed value does)."""
    picked = " ".join(WORDS[(n * 7 + k * 3 + round_) % len(WORDS)] for k in range(8))
    return f"note {n} of round {round_}: the user said {picked}"


async def timed(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    """Seconds for all the calls run concurrently (each awaited once)."""
    began = time.perf_counter()
    await asyncio.gather(*(call() for call in calls))
    return time.perf_counter() - began


def profiled(store: MemoryStore, calls: int, round_: int, profile: Path, backend: str) -> None:
    """Each kind's operations as one `batch` in this thread (what the store's thread runs), profiled to a file."""
    ns = ("bench", f"profiled{round_}")
    kinds = (
        ("new_puts", [PutOp(ns, f"k{n}", {"content": text(n, round_)}) for n in range(calls)]),
        ("updates", [PutOp(ns, f"k{n}", {"content": text(n, round_ + 1000)}) for n in range(calls)]),
        ("same_value", [PutOp(ns, f"k{n}", {"content": text(n, round_ + 1000)}) for n in range(calls)]),
        ("deletes", [PutOp(ns, f"k{n}", None) for n in range(calls)]),
    )
    for kind, ops in kinds:
        profiler = cProfile.Profile()
        profiler.runcall(store.batch, ops)
        profiler.dump_stats(profile / f"{backend}-{kind}-{round_}.prof")


async def one_round(
    store: MemoryStore, calls: int, round_: int, profile: Path | None, backend: str
) -> dict[str, float]:
    ns = ("bench", f"r{round_}")
    puts = [lambda n=n: store.aput(ns, f"k{n}", {"content": text(n, round_)}) for n in range(calls)]
    updates = [lambda n=n: store.aput(ns, f"k{n}", {"content": text(n, round_ + 1000)}) for n in range(calls)]
    same = [lambda n=n: store.aput(ns, f"k{n}", {"content": text(n, round_ + 1000)}) for n in range(calls)]
    deletes = [lambda n=n: store.adelete(ns, f"k{n}") for n in range(calls)]
    spent = {}
    for kind, batch in (("new_puts", puts), ("updates", updates), ("same_value", same), ("deletes", deletes)):
        spent[kind] = await timed(batch)
        if kind == "same_value":
            got = await asyncio.gather(*(store.aget(ns, f"k{n}") for n in range(0, calls, 17)))
            if [item.value["content"] if item else None for item in got] != [
                text(n, round_ + 1000) for n in range(0, calls, 17)
            ]:
                raise SystemExit(f"{backend}: an update is not what a read finds")
    if any(await asyncio.gather(*(store.aget(ns, f"k{n}") for n in range(0, calls, 17)))):
        raise SystemExit(f"{backend}: an item is still there after its delete")
    if profile is not None:
        await asyncio.to_thread(profiled, store, calls, round_, profile, backend)
    return spent


def opened(backend: str, embedder: str, fill: int) -> tuple[MemoryStore, str]:
    """A store over a fresh data directory holding `fill` other items (one namespace), and that directory."""
    home = tempfile.mkdtemp(prefix="langgraph-writes-")
    flags = {"data_dir": os.path.join(home, "data"), "backend": backend}
    service = build_service(
        load_settings(flags, {"HOME": home}).unwrap(), embedder=HashingEmbedder() if embedder == "hashing" else None
    ).unwrap()
    store = MemoryStore(service)
    store.put(("bench", "warm"), "w", {"content": "warm the model and open the store"})
    for start in range(0, fill, 500):
        store.batch(
            [PutOp(("bench", "fill"), f"f{n}", {"content": text(n, -1)}) for n in range(start, min(fill, start + 500))]
        )
    return store, home


def measure(backend: str, calls: int, repeat: int, embedder: str, profile: Path | None, fill: int) -> list[Any]:
    """The rounds (seconds of each kind) on one store, each round in namespaces of its own."""
    store, home = opened(backend, embedder, fill)
    try:
        return [asyncio.run(one_round(store, calls, round_, profile, backend)) for round_ in range(repeat)]
    finally:
        store.close()
        shutil.rmtree(home, ignore_errors=True)


def report(backend: str, calls: int, embedder: str, fill: int, rounds: list[dict[str, float]]) -> dict[str, Any]:
    median = {kind: statistics.median(r[kind] for r in rounds) for kind in rounds[0]}
    return {
        "backend": backend,
        "embedder": embedder,
        "fill": fill,
        "calls": calls,
        "repeat": len(rounds),
        "per_second": {kind: round(calls / s, 1) for kind, s in median.items()},
        "times_new_puts": {kind: round(s / median["new_puts"], 2) for kind, s in median.items()},
        "rounds_per_second": {kind: [round(calls / r[kind], 1) for r in rounds] for kind in rounds[0]},
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", nargs="+", default=["chroma", "files", "qdrant"])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--embedder", choices=["shipped", "hashing"], default="shipped")
    parser.add_argument("--profile", type=Path, help="write a cProfile of each kind's calls into this directory")
    parser.add_argument("--fill", type=int, default=0, help="other items in the store before the rounds")
    arguments = parser.parse_args()
    if arguments.profile is not None:
        arguments.profile.mkdir(parents=True, exist_ok=True)
    for backend in arguments.backend:
        rounds = measure(
            backend, arguments.calls, arguments.repeat, arguments.embedder, arguments.profile, arguments.fill
        )
        print(json.dumps(report(backend, arguments.calls, arguments.embedder, arguments.fill, rounds)), flush=True)


if __name__ == "__main__":
    main()
