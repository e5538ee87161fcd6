"""Where a create's time goes over a `chroma run` server: the engine calls one create makes (by Ledger method and by
Chroma collection call), counted and timed, for creates one after another from one process with a hashing
embedder (so the model's time stays out). Prints one JSON object (per create: calls and ms of each).

    PYTHONPATH=. python bench/create_round_trips.py --creates 40

Run it with another tree first on PYTHONPATH to count that tree's calls (a before/after on one machine).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chromadb.api.models.Collection as chroma_collection

from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain import commands as c
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import running_chroma

LEDGER_CALLS = ("claim", "read", "put", "remove", "listed")
CHROMA_CALLS = ("add", "get", "upsert", "delete", "query", "update", "count")
calls: collections.Counter[str] = collections.Counter()
spent: collections.Counter[str] = collections.Counter()


def counted(owner: Any, name: str, label: str) -> None:
    """Wrap `owner.name` so each call is counted and timed under `label`."""
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            calls[label] += 1
            spent[label] += (time.perf_counter() - began) * 1000

    setattr(owner, name, wrapper)


@contextlib.contextmanager
def counted_service() -> Iterator[MemoryService]:
    """A service over a fresh `chroma run` (a hashing embedder), every Ledger method and Chroma collection call
    counted and timed into `calls` and `spent` (shared by bench/update_round_trips.py)."""
    for name in LEDGER_CALLS:
        counted(ChromaLedger, name, f"ledger.{name}")
    for name in CHROMA_CALLS:
        counted(chroma_collection.Collection, name, f"chroma.{name}")
    with tempfile.TemporaryDirectory() as folder, running_chroma(Path(folder) / "server") as server:
        settings = Settings(
            data_dir=Path(folder) / "node",
            backend="chroma",
            chroma_host=server.host,
            chroma_port=server.port,
            collection="roundtrips",
        )
        yield build_service(settings, embedder=HashingEmbedder()).unwrap()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=40)
    args = parser.parse_args()
    with counted_service() as service:
        for n in range(5):  # the store, the feeds and the first lease come into being before the count
            service.create(c.CreateMemory(content=f"warm-up {n}")).unwrap()
        calls.clear()
        spent.clear()
        began = time.perf_counter()
        for n in range(args.creates):
            service.create(c.CreateMemory(content=f"note {n} about leases", path=f"bench/n{n}")).unwrap()
        per_create = (time.perf_counter() - began) * 1000 / args.creates
    engine = sum(count for label, count in calls.items() if label.startswith("chroma."))
    print(
        json.dumps(
            {
                "creates": args.creates,
                "ms_per_create": round(per_create, 1),
                "engine_calls_per_create": round(engine / args.creates, 2),
                "calls_per_create": {label: round(count / args.creates, 2) for label, count in sorted(calls.items())},
                "ms_per_create_by_call": {label: round(ms / args.creates, 2) for label, ms in sorted(spent.items())},
            }
        )
    )


if __name__ == "__main__":
    main()
