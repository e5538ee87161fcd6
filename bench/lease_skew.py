"""Readers beside a writer whose wall clock is 60 s behind (issue 46): over a local `chroma run`, one node writes
3-memory batches under its lease with a skewed clock (injected at the lease's clock seam) while another node only
searches; counted: the lease tickets the searching node claimed, and its search p50/p95. Run twice in one process:
with the open-time "batch to roll back?" hint as it was on main (wall clock against the ticket's `at` stamp,
reproduced here) and as it is now (ledger state only). A hashing embedder keeps the model's time out.

    PYTHONPATH=. python bench/lease_skew.py --batches 40
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
from datetime import timedelta
from pathlib import Path

from agent_memory.adapters import lease_journal
from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.clock import SkewedClock
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.lease_journal import LeaseBatchJournal
from agent_memory.adapters.lease_locks import KIND, LeaseWriteLocks
from agent_memory.adapters.shared.ledger import LedgerRecord
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.chroma_server import HOST, free_port, start_chroma, stop_chroma

NOW_HINT = lease_journal._lease_over


def wall_clock_hint(epoch: int, tickets: list[LedgerRecord]) -> bool:
    """The hint as it was on main: a ticket whose `at` stamp is older than its ttl by this machine's clock is over."""
    ticket = next((record for record in tickets if record.seq == epoch), None)
    if ticket is None:
        return True
    at, ttl = float(ticket.fields.get("at", 0.0)), float(ticket.fields.get("ttl", 0.0))
    return bool(ticket.fields.get("released", False)) or time.time() - at > ttl


def one_run(root: Path, port: int, batches: int) -> dict[str, object]:
    collection = f"b{uuid.uuid4().hex[:12]}"

    def settings(name: str):  # type: ignore[no-untyped-def]
        env = {"HOME": str(root / name), "CHROMADB_HOST": HOST, "CHROMADB_PORT": str(port)}
        env["MEMORY_COLLECTION"] = collection
        return load_settings({"data_dir": str(root / name / "data"), "backend": "chroma"}, env).unwrap()

    def ledger() -> ChromaLedger:
        return ChromaLedger.of(
            ChromaCatalog(host=HOST, port=port, collection=collection, embedder_name="", dimension=1)
        )

    skewed = LeaseWriteLocks(ledger(), clock=SkewedClock(timedelta(seconds=-60)))
    reading_locks = LeaseWriteLocks(ledger())
    embedder = HashingEmbedder()
    writer = build_service(
        settings("writer"), embedder=embedder, locks=skewed, journal=LeaseBatchJournal(skewed)
    ).unwrap()
    reader = build_service(
        settings("reader"), embedder=embedder, locks=reading_locks, journal=LeaseBatchJournal(reading_locks)
    ).unwrap()
    writer.create(CreateMemory(content="the store exists")).unwrap()
    done = threading.Event()

    def write() -> None:
        for n in range(batches):
            texts = [f"batch {n} fact {k} about otters and harbours" for k in range(3)]
            writer.create_many([CreateMemory(content=text) for text in texts]).unwrap()
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    spent = []
    while not done.is_set():
        started = time.monotonic()
        reader.search(SearchMemories(query="otters in the harbour", limit=5)).unwrap()
        spent.append(time.monotonic() - started)
    thread.join()
    tickets = ledger().listed("default", KIND).unwrap()
    taken = sum(1 for r in tickets if r.fields.get("node") == reading_locks.node)
    spent.sort()
    return {
        "searches": len(spent),
        "reader_lease_tickets_left_in_ledger": taken,
        "reader_lease_claims": reading_locks.claims,
        "search_p50_ms": round(statistics.median(spent) * 1000, 1),
        "search_p95_ms": round(spent[int(len(spent) * 0.95)] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=40)
    batches = parser.parse_args().batches
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        root, port = Path(folder), free_port()
        engine = start_chroma(root / "engine", port)
        try:
            for name, hint in (("wall_clock_hint_as_on_main", wall_clock_hint), ("ledger_state_hint_now", NOW_HINT)):
                lease_journal._lease_over = hint
                results[name] = one_run(root / name, port, batches)
        finally:
            lease_journal._lease_over = NOW_HINT
            stop_chroma(engine)
    print(json.dumps({"batches": batches, "skew_s": -60, "load_1min": round(os.getloadavg()[0], 2), **results}))


if __name__ == "__main__":
    main()
