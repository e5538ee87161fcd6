"""What a dead lease holder and an engine restart cost the writers that carry on (issue 46): over a local
`chroma run`, a holder process killed with SIGKILL while it holds the lease, then the survivor's next five
writes (each with a ticket of its own) timed; and the engine killed while a write holds the lease and restarted
on the same data and port, then the first write of another machine and of the same machine timed (and of it, the
time taking the lease), with the tickets passed over as dead (a ttl waited out). `--release-retry 3` runs it
first with a lost release sent again every 3 s (as before: a tenth of the ttl), then as the code stands. A hashing
embedder keeps the model's time out. Prints one JSON object (seconds).

    PYTHONPATH=. python bench/lease_faults.py --ttl 30 --release-retry 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from returns.result import Result, Success

from agent_memory.adapters import lease_locks
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.adapters.lease_tickets import Lease
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.errors import DomainError
from tests.chroma_server import HOST, free_port, start_chroma, stop_chroma
from tests.e2e.test_lease_faults import HOLDER, node


def after_a_kill(root: Path, port: int, ttl: float) -> dict[str, object]:
    collection = f"b{uuid.uuid4().hex[:12]}"
    survivor, leases = node(root / "survivor", HOST, port, collection, ttl)
    survivor.create(CreateMemory(content="before the holder dies")).unwrap()
    holder = subprocess.Popen(
        [sys.executable, str(HOLDER), str(root / "holder"), HOST, str(port), collection, str(ttl)],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    spent = []
    for number in range(5):
        leases.let_go()
        started = time.monotonic()
        survivor.create(CreateMemory(content=f"survivor write {number}")).unwrap()
        spent.append(round(time.monotonic() - started, 3))
    return {"five_writes_s": spent, "total_s": round(sum(spent), 3), "expiry_waits": leases.expiries}


def timed_acquire(leases: LeaseWriteLocks) -> list[float]:
    """The seconds each of this process's lease acquisitions takes from now on (claim and wait for those ahead)."""
    waited: list[float] = []
    acquire = leases._acquire

    def timed(store: str, deadline: float | None = None) -> Result[Lease, DomainError]:
        began = time.monotonic()
        try:
            return acquire(store, deadline)
        finally:
            waited.append(time.monotonic() - began)

    leases._acquire = timed  # type: ignore[method-assign]
    return waited


def after_a_restart(root: Path, ttl: float) -> dict[str, object]:
    port = free_port()
    engine = start_chroma(root / "engine", port)
    try:
        first, first_leases = node(root / "first", HOST, port, "memories", ttl)
        second, second_leases = node(root / "second", HOST, port, "memories", ttl)
        first.create(CreateMemory(content="before the restart")).unwrap()
        holding, go_on = threading.Event(), threading.Event()

        def in_flight() -> Success[None]:
            holding.set()
            go_on.wait(timeout=60)
            return Success(None)

        writer = threading.Thread(target=lambda: first_leases.exclusive("default", in_flight))
        writer.start()
        holding.wait(timeout=30)
        engine.kill()
        engine.wait()
        go_on.set()
        writer.join()
        down = time.monotonic()
        engine = start_chroma(root / "engine", port)
        back = round(time.monotonic() - down, 3)
        spent: dict[str, object] = {}
        for service, leases, name in (
            (second, second_leases, "another_machine"),
            (first, first_leases, "same_machine"),
        ):
            waited = timed_acquire(leases)
            started = time.monotonic()
            service.create(CreateMemory(content=f"first write by {name} after the restart")).unwrap()
            spent[f"{name}_s"] = round(time.monotonic() - started, 3)
            spent[f"{name}_lease_s"] = round(sum(waited), 3)  # of it, taking the lease (its ticket and the wait)
        spent["expiry_waits"] = first_leases.expiries + second_leases.expiries
        return {"engine_back_after_s": back, **spent}
    finally:
        stop_chroma(engine)


def one_run(ttl: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        port = free_port()
        engine = start_chroma(root / "shared", port)
        try:
            killed = after_a_kill(root, port, ttl)
        finally:
            stop_chroma(engine)
        restarted = after_a_restart(root, ttl)
    return {"load_1min": round(os.getloadavg()[0], 2), "holder_killed": killed, "engine_restarted": restarted}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl", type=float, default=30.0)
    parser.add_argument(
        "--release-retry",
        type=float,
        nargs="*",
        default=[],
        help="also run with a lost release sent again every this many seconds (e.g. 3: a tenth of the ttl, as before)",
    )
    args = parser.parse_args()
    runs = {}
    for retry in [*args.release_retry, lease_locks.RETRY_S]:
        lease_locks.RETRY_S = retry
        runs[f"release_retry_{retry:g}s"] = one_run(args.ttl)
    print(json.dumps({"ttl_s": args.ttl, **runs}))


if __name__ == "__main__":
    main()
