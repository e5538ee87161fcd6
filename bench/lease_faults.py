"""What a dead lease holder and an engine restart cost the writers that carry on (issue 46): over a local
`chroma run`, a holder process killed with SIGKILL while it holds the lease, then the survivor's next five
writes (each with a ticket of its own) timed; and the engine killed while a write holds the lease and restarted
on the same data and port, then the first write of another machine and of the same machine timed. A hashing
embedder keeps the model's time out. Prints one JSON object (seconds).

    PYTHONPATH=. python bench/lease_faults.py --ttl 30
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

from returns.result import Success

from agent_memory.domain.commands import CreateMemory
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


def after_a_restart(root: Path, ttl: float) -> dict[str, object]:
    port = free_port()
    engine = start_chroma(root / "engine", port)
    try:
        first, _ = node(root / "first", HOST, port, "memories", ttl)
        second, _ = node(root / "second", HOST, port, "memories", ttl)
        first.create(CreateMemory(content="before the restart")).unwrap()
        holding, go_on = threading.Event(), threading.Event()

        def in_flight() -> Success[None]:
            holding.set()
            go_on.wait(timeout=60)
            return Success(None)

        writer = threading.Thread(target=lambda: first.locks.exclusive("default", in_flight))
        writer.start()
        holding.wait(timeout=30)
        engine.kill()
        engine.wait()
        go_on.set()
        writer.join()
        down = time.monotonic()
        engine = start_chroma(root / "engine", port)
        back = round(time.monotonic() - down, 3)
        spent = {}
        for service, name in ((second, "another_machine_s"), (first, "same_machine_s")):
            started = time.monotonic()
            service.create(CreateMemory(content=f"first write by {name} after the restart")).unwrap()
            spent[name] = round(time.monotonic() - started, 3)
        return {"engine_back_after_s": back, **spent}
    finally:
        stop_chroma(engine)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ttl", type=float, default=30.0)
    ttl = parser.parse_args().ttl
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        port = free_port()
        engine = start_chroma(root / "shared", port)
        try:
            killed = after_a_kill(root, port, ttl)
        finally:
            stop_chroma(engine)
        restarted = after_a_restart(root, ttl)
    load = os.getloadavg()[0]
    print(
        json.dumps({"ttl_s": ttl, "load_1min": round(load, 2), "holder_killed": killed, "engine_restarted": restarted})
    )


if __name__ == "__main__":
    main()
