"""What a create costs on a `chroma run` server with the write lock held in the engine (a lease, issue 39) against
the local lock file alone: the same creates, one process, a hashing embedder (so the model's time stays out).
Prints one JSON object (median and p95 per create, in ms, for each).

    python bench/lease_cost.py --creates 300
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.write_locks import FileWriteLocks
from agent_memory.domain import commands as c
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import running_chroma


def timed_creates(settings: Settings, count: int, *, engine: bool) -> list[float]:
    locks = None if engine else FileWriteLocks(settings.data_dir / "locks" / "chroma")
    service = build_service(settings, embedder=HashingEmbedder(), locks=locks).unwrap()
    service.create(c.CreateMemory(content="warm-up")).unwrap()
    spent: list[float] = []
    for n in range(count):
        began = time.perf_counter()
        service.create(c.CreateMemory(content=f"note {n} about leases and locks", path=f"bench/n{n}")).unwrap()
        spent.append((time.perf_counter() - began) * 1000)
    return spent


def summary(spent: list[float]) -> dict[str, float]:
    ordered = sorted(spent)
    return {
        "median_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--creates", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, running_chroma(Path(folder) / "server") as server:
        figures = {}
        for label, engine in (("local_flock", False), ("engine_lease", True), ("local_flock_again", False)):
            settings = Settings(
                data_dir=Path(folder) / label,
                backend="chroma",
                chroma_host=server.host,
                chroma_port=server.port,
                collection=f"bench{label.replace('_', '')}",
            )
            figures[label] = summary(timed_creates(settings, args.creates, engine=engine))
        print(json.dumps({"creates": args.creates, **figures}))


if __name__ == "__main__":
    main()
