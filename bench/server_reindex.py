"""Operations that fail while `reindex` runs against a Chroma server: worker threads search, get, list and
create while the main thread reindexes the store again and again. Each worker has a service (a Chroma client)
of its own, as another process would. Prints (and with --output writes) the counts.

    python bench/server_reindex.py --memories 300 --reindexes 5 --workers 4
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import threading
import time
from pathlib import Path

from returns.result import Success

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import (
    CreateMemory,
    GetMemory,
    ListMemories,
    ReindexStore,
    SearchMemories,
    StoreStatus,
)
from agent_memory.domain.dispatch import dispatch
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.chroma_server import running_chroma


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--reindexes", type=int, default=10)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--causes", action="store_true", help="count the failures by their library cause too")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, running_chroma(Path(folder) / "server") as server:
        config = Path(folder) / "config.toml"
        config.write_text("")
        env = {"HOME": folder, "MEMORY_CONFIG": str(config), "MEMORY_DATA_DIR": str(Path(folder) / "data")}
        flags = {"chroma_host": server.host, "chroma_port": server.port}
        settings = load_settings(flags, env).unwrap()
        service = build_service(settings, embedder=HashingEmbedder()).unwrap()
        workers = [build_service(settings, embedder=HashingEmbedder()).unwrap() for _ in range(arguments.workers)]
        ids = [
            dispatch(service, CreateMemory(content=f"memory {n} about topic {n % 17}")).unwrap().memory.id
            for n in range(arguments.memories)
        ]
        done = threading.Event()
        counts: collections.Counter[str] = collections.Counter()
        failures: collections.Counter[str] = collections.Counter()
        guard = threading.Lock()

        def work(worker: int) -> None:
            own, step = workers[worker], 0
            while not done.is_set():
                step += 1
                kind = "create" if worker == 0 else ("search", "get", "list")[step % 3]  # one writer, the rest read
                if kind == "search":
                    answer = dispatch(own, SearchMemories(query=f"topic {step % 17}", limit=5))
                elif kind == "get":
                    answer = dispatch(own, GetMemory(ref=ids[(worker * 7919 + step) % len(ids)]))
                elif kind == "list":
                    answer = dispatch(own, ListMemories(limit=20))
                else:
                    answer = dispatch(own, CreateMemory(content=f"worker {worker} step {step}"))
                with guard:
                    counts[kind] += 1
                    if not isinstance(answer, Success):
                        error = answer.failure()
                        failures[f"{kind}: {error.code.value}: {error.message[:120]}"] += 1
                        if arguments.causes:
                            failures[f"{kind} cause: {str(error.cause)[:160]}"] += 1

        threads = [threading.Thread(target=work, args=(n,)) for n in range(arguments.workers)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        reindex_failures = 0
        for _ in range(arguments.reindexes):
            if not isinstance(dispatch(service, ReindexStore()), Success):
                reindex_failures += 1
        done.set()
        for thread in threads:
            thread.join()
        stored = dispatch(service, StoreStatus()).unwrap().memory_count
        created = counts["create"] - sum(n for key, n in failures.items() if key.startswith("create: "))
        report = {
            "memories": arguments.memories,
            "reindexes": arguments.reindexes,
            "reindex_failures": reindex_failures,
            "workers": arguments.workers,
            "seconds": round(time.monotonic() - started, 1),
            "operations": dict(counts),
            "failed": sum(n for key, n in failures.items() if " cause: " not in key),
            "acknowledged_lost": arguments.memories + created - stored,
            "failures": dict(failures),
        }
    print(json.dumps(report, indent=2))
    if arguments.output is not None:
        arguments.output.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
