"""Readers beside writers whose wall clocks are off (issue 46): over a local `chroma run`, one node only searches
(its own clock right) while another node writes 3-memory batches; the writing node's clock is right, 60 s ahead or
60 s behind (its service's clock and its lease's, build_engine_locks' clock seam, as tests/e2e/paused_node.py's
skewed node). The three writers take turns on the same collection and the same searching node, in rounds whose
order rotates (the data grows evenly under each), so each skewed run has an unskewed run of the same hour beside
it (a first phase, left out, warms the reader). Counted per writer clock: the searching node's search p50/p95
(ms), its lease tickets (claims, and tickets of its node in the ledger), the ratio of each skewed p95 to the
unskewed one (pooled, and per round), and the engine calls the searching thread made per search (Chroma
collection calls, the ledger's among them). A hashing embedder keeps the model's time out. Prints one JSON object.

    PYTHONPATH=. python bench/lease_skew.py --batches 30 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from chromadb.api.models import Collection as chroma_collection
from returns.result import Success

from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.clock import SkewedClock
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.lease_locks import KIND, LeaseWriteLocks
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_engine_locks, build_service
from agent_memory.entrypoints.settings import Settings, load_settings
from tests.chroma_server import HOST, free_port, start_chroma, stop_chroma

CLOCKS = {"unskewed": 0.0, "ahead_60s": 60.0, "behind_60s": -60.0}
QUERY = "otters in the harbour"
CHROMA_CALLS = ("add", "get", "upsert", "delete", "query", "update", "count")
LEDGER_CALLS = ("read", "claim", "put", "remove", "listed")
calls: Counter[str] = Counter()  # the engine calls made on the searching thread (the main one), by name


def counted(owner: Any, name: str, label: str) -> None:
    """Wrap `owner.name` so each call made on the main thread (the searches') is counted under `label`."""
    inner = getattr(owner, name)
    searching = threading.main_thread().ident

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == searching:
            calls[label] += 1
        return inner(*args, **kwargs)

    setattr(owner, name, wrapper)


for _name in CHROMA_CALLS:
    counted(chroma_collection.Collection, _name, f"chroma.{_name}")
for _name in LEDGER_CALLS:
    counted(ChromaLedger, _name, f"ledger.{_name}")


def p95(spent: list[float]) -> float:
    ordered = sorted(spent)
    return ordered[min(int(len(ordered) * 0.95), len(ordered) - 1)]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def one_node(root: Path, name: str, port: int, collection: str, skew_s: float) -> tuple[MemoryService, LeaseWriteLocks]:
    """A host with a HOME and data directory of its own over the engine, its wall clock `skew_s` seconds off."""
    env = {"HOME": str(root / name), "CHROMADB_HOST": HOST, "CHROMADB_PORT": str(port), "MEMORY_COLLECTION": collection}
    settings: Settings = load_settings({"data_dir": str(root / name / "data"), "backend": "chroma"}, env).unwrap()
    clock = SkewedClock(timedelta(seconds=skew_s)) if skew_s else None
    locks = build_engine_locks(settings, clock=clock)  # taken first: build_service finds these locks, this clock
    assert locks is not None
    return build_service(settings, embedder=HashingEmbedder(), clock=clock).unwrap(), locks


def a_phase(writer: MemoryService, reader: MemoryService, batches: int, tag: str) -> list[float]:
    """The writer's batches while the reader searches back to back; the reader's search times (s)."""
    done, failed = threading.Event(), []

    def write() -> None:
        try:
            for n in range(batches):
                texts = [f"{tag} batch {n} fact {k} about otters and harbours" for k in range(3)]
                result = writer.create_many([CreateMemory(content=text) for text in texts])
                if not isinstance(result, Success):
                    failed.append(str(result))
        finally:
            done.set()

    thread = threading.Thread(target=write)
    thread.start()
    spent = []
    while not done.is_set():
        started = time.monotonic()
        reader.search(SearchMemories(query=QUERY, limit=5)).unwrap()
        spent.append(time.monotonic() - started)
    thread.join()
    assert not failed, failed[:3]
    return spent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=30, help="3-memory batches per writer per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spent: dict[str, list[float]] = {name: [] for name in CLOCKS}
    per_round: list[dict[str, float]] = []
    claims: dict[str, int] = dict.fromkeys(CLOCKS, 0)
    engine_calls: dict[str, Counter[str]] = {name: Counter() for name in CLOCKS}
    loads = []
    with tempfile.TemporaryDirectory() as folder:
        root, port = Path(folder), free_port()
        engine = start_chroma(root / "engine", port)
        try:
            collection = f"b{uuid.uuid4().hex[:12]}"
            writers = {name: one_node(root, name, port, collection, skew) for name, skew in CLOCKS.items()}
            writers["unskewed"][0].create(CreateMemory(content="the store exists")).unwrap()
            reader, reading_locks = one_node(root, "reader", port, collection, 0.0)
            # a phase left out of the figures: the reader's mirror and both sides' connections warm before the first
            a_phase(writers["unskewed"][0], reader, max(args.batches // 3, 1), "warm")
            names = list(CLOCKS)
            for number in range(args.rounds):
                this_round = {}
                for name in names[number % 3 :] + names[: number % 3]:
                    before, counted_before = reading_locks.claims, Counter(calls)
                    times = a_phase(writers[name][0], reader, args.batches, f"r{number}{name}")
                    claims[name] += reading_locks.claims - before
                    engine_calls[name] += calls - counted_before
                    spent[name] += times
                    this_round[name] = ms(p95(times))
                    loads.append(os.getloadavg()[0])
                per_round.append(this_round)
            tickets = reading_locks.ledger.listed("default", KIND).unwrap()
            in_ledger = sum(1 for r in tickets if r.fields.get("node") == reading_locks.node)
        finally:
            stop_chroma(engine)
    base = p95(spent["unskewed"])
    runs = {
        name: {
            "searches": len(times),
            "search_p50_ms": ms(statistics.median(times)),
            "search_p95_ms": ms(p95(times)),
            "reader_lease_claims": claims[name],
            "engine_calls_per_search": {
                label: round(count / len(times), 2) for label, count in sorted(engine_calls[name].items())
            },
        }
        for name, times in spent.items()
    }
    print(
        json.dumps(
            {
                "batches_per_round": args.batches,
                "rounds": args.rounds,
                "load_1min": [round(min(loads), 2), round(max(loads), 2)],
                "runs": runs,
                "p95_ratio_to_unskewed": {
                    name: round(p95(spent[name]) / base, 3) for name in CLOCKS if name != "unskewed"
                },
                "p95_ms_per_round": per_round,
                "p95_ratio_per_round": [
                    {name: round(r[name] / r["unskewed"], 3) for name in CLOCKS if name != "unskewed"}
                    for r in per_round
                ],
                "reader_lease_tickets_in_ledger": in_ledger,
                "reader_lease_claims": reading_locks.claims,
            }
        )
    )


if __name__ == "__main__":
    main()
