"""Where creates' time goes when threads of one process create at once over a `chroma run` (a hashing embedder):
creates/s, this process's and the Chroma server's CPU per create, the engine calls and their summed wall time, and
the time each change feed's lock is waited for and held. Prints one JSON object.

    PYTHONPATH=. python bench/parallel_creates.py --threads 8 --each 10
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_memory.adapters.feeds.feed import ChangeFeed
from agent_memory.domain import commands as c
from bench.create_round_trips import calls, counted_service, spent

waits: collections.Counter[str] = collections.Counter()


def time_feed_locks() -> None:
    """Wrap ChangeFeed._locked so the wait for each feed's lock and the time it is held are summed into `waits`."""
    original = ChangeFeed._locked

    @contextlib.contextmanager
    def timed(self: ChangeFeed) -> Iterator[None]:
        began = time.perf_counter()
        with original(self):
            waits[f"feed lock wait {self.name}"] += time.perf_counter() - began
            held = time.perf_counter()
            yield
            waits[f"feed lock held {self.name}"] += time.perf_counter() - held

    ChangeFeed._locked = timed  # type: ignore[method-assign]


def children_cpu() -> float:
    """CPU seconds used so far by this process's children (the `chroma run` server)."""
    total = 0
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid():
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--each", type=int, default=10, help="creates per thread")
    args = parser.parse_args()
    time_feed_locks()
    with counted_service() as service:
        for n in range(5):  # the store, the feeds and the claims' first reads come into being before the count
            service.create(c.CreateMemory(content=f"warm {n}", path=f"warm/w{n}")).unwrap()
        calls.clear()
        spent.clear()
        waits.clear()
        failures: list[str] = []

        def run(thread: int) -> None:
            for n in range(args.each):
                made = service.create(c.CreateMemory(content=f"note {n} of {thread}", path=f"p/t{thread}n{n}"))
                if not made.map(lambda _: True).value_or(False):
                    failures.append(made.failure().message[:100])

        server, cpu, began = children_cpu(), time.process_time(), time.perf_counter()
        threads = [threading.Thread(target=run, args=(t,)) for t in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, cpu, server = time.perf_counter() - began, time.process_time() - cpu, children_cpu() - server
    n = args.threads * args.each
    report: dict[str, Any] = {
        "threads": args.threads,
        "creates": n,
        "failed": len(failures),
        "failures": failures[:3],
        "creates_per_s": round(n / wall, 2),
        "client_cpu_ms_per_create": round(cpu * 1000 / n, 1),
        "chroma_server_cpu_ms_per_create": round(server * 1000 / n, 1),
        "engine_calls_per_create": round(sum(v for k, v in calls.items() if k.startswith("chroma.")) / n, 2),
        "engine_call_ms_per_create_summed_over_threads": round(
            sum(ms for label, ms in spent.items() if label.startswith("chroma.")) / n, 1
        ),
        "feed_lock_ms_per_create": {k: round(v * 1000 / n, 1) for k, v in sorted(waits.items())},
        "load_average_at_end": os.getloadavg(),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
