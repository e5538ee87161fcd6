"""The mirror's time to ready and warm search over a Chroma server beside embedded (issues 46 item 5, 47 item 2).

    python bench/mirror.py [--sizes 10000,100000] [--server-sizes 10000] [--repeat 3] [--data FILE]

For each size in --sizes (embedded Chroma, the store filled as bench/perf.py fills it): a fresh process opens the
storage, keeps it warm and reports the seconds from `keep_warm` until the mirror is installed, once with no mirror
file (read out of Chroma, which writes the file) and once with it (restored), plus its first search (answered by
Chroma while the mirror is not ready). For each size in --server-sizes: warm hybrid and semantic search p50 in this
process over embedded Chroma and over a `chroma run` server (node mirror on, and off as before), beside the floor
(query embedding + brute force over the same vectors). Prints JSON; figures under load are ratios within the run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import perf
from perf import QUERIES, corpus, fill_store, percentile

from agent_memory.domain.commands import SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

SCOPE = {"project": "p3", "namespace": ("user",)}
CHILD = """
import json, sys, time
started = time.perf_counter()
from agent_memory.domain.commands import SearchMemories
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
home = sys.argv[1]
settings = load_settings({"data_dir": home, "backend": "chroma"}, {"HOME": home}).unwrap()
service = build_service(settings).unwrap()
store = service.catalog.open("default", create=False).unwrap()
service.embedder.embed_query("load the model").unwrap()
opened = time.perf_counter()
import threading
timings = {}
def search():
    began = time.perf_counter()
    service.search(SearchMemories(query="When did Caroline go to the support group?", project="p3")).unwrap()
    timings["first"] = time.perf_counter() - began
asked = time.perf_counter()
service.catalog.keep_warm()
searcher = threading.Thread(target=search)
searcher.start()  # a search while the mirror is made: answered by Chroma, it waits for nothing
while not store.session.mirrors:
    time.sleep(0.005)
ready = time.perf_counter() - asked
searcher.join()
first = timings["first"]
print(json.dumps({"open_s": round(opened - started, 2), "first_search_ms": round(first * 1000, 1),
                  "ready_s": round(ready, 2), "memories": len(next(iter(store.session.mirrors.values())))}))
"""


def service_at(home: str, **flags: Any) -> Any:
    settings = load_settings({"data_dir": home, "backend": "chroma", **flags}, {"HOME": home}).unwrap()
    return build_service(settings).unwrap()


def time_to_ready(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as home:
        service = service_at(home)
        fill_store(service, corpus(n))
        del service
        runs = {}
        for label in ("without_file", "with_file"):
            if label == "without_file":
                shutil.rmtree(Path(home) / "chroma" / ".agent-memory-mirrors", ignore_errors=True)
            done = subprocess.run(
                [sys.executable, "-c", CHILD, home], capture_output=True, text=True, check=True, timeout=1800
            )
            runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
        return {"memories": n, **runs}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def searches(service: Any, repeat: int, mode: str, scope: dict[str, Any]) -> list[float]:
    service.search(SearchMemories(query=QUERIES[0], mode=mode, **scope)).unwrap()
    times = []
    for _ in range(repeat):
        for query in QUERIES:
            started = time.perf_counter()
            service.search(SearchMemories(query=query, mode=mode, **scope)).unwrap()
            times.append((time.perf_counter() - started) * 1000)
    return times


def figures(service: Any, repeat: int) -> dict[str, float]:
    out = {}
    for mode in ("hybrid", "semantic"):
        for label, scope in (("unfiltered", {}), ("filtered", SCOPE)):
            times = searches(service, repeat, mode, scope)
            out[f"{mode}_{label}_ms_p50"] = round(statistics.median(times), 2)
            out[f"{mode}_{label}_ms_p95"] = round(percentile(times, 0.95), 2)
    return out


def server_beside_embedded(n: int, repeat: int) -> dict[str, Any]:
    texts = corpus(n)
    result: dict[str, Any] = {"memories": n}
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as engine:
        port = free_port()
        chroma = Path(sys.executable).parent / "chroma"
        with open(Path(engine) / "log", "wb") as log:
            server = subprocess.Popen(
                [str(chroma), "run", "--path", engine + "/db", "--host", "127.0.0.1", "--port", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            for _ in range(600):
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            embedded = service_at(home + "/embedded")
            _, vectors = fill_store(embedded, texts)
            embedded.catalog.keep_warm()
            embedded.catalog.warmer.wait_idle(600)
            remote = service_at(home + "/node", chroma_host="127.0.0.1", chroma_port=port)
            fill_store(remote, texts)
            remote.catalog.keep_warm()
            deadline = time.monotonic() + 900
            while not remote.catalog.node._mirrors and time.monotonic() < deadline:
                remote.search(SearchMemories(query=QUERIES[0], **SCOPE)).unwrap()
                time.sleep(0.5)
            embed_ms, brute_ms = [], []
            for _ in range(repeat):
                for query in QUERIES:
                    started = time.perf_counter()
                    q = np.array(embedded.embedder.embed_query(query).unwrap(), dtype=np.float32)
                    embed_ms.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    np.argpartition(-(vectors @ q), 10)[:10]
                    brute_ms.append((time.perf_counter() - started) * 1000)
            result["query_embedding_ms_p50"] = round(statistics.median(embed_ms), 2)
            result["brute_force_ms_p50"] = round(statistics.median(brute_ms), 3)
            for _ in range(2):  # interleaved, so both see the same machine state
                result.setdefault("embedded", []).append(figures(embedded, repeat))
                result.setdefault("server_node_mirror", []).append(figures(remote, repeat))
            remote.catalog.node.active = False
            remote.catalog.node._mirrors.clear()
            result["server_without_mirror"] = figures(remote, repeat)
        finally:
            server.terminate()
            server.wait(30)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--server-sizes", default="10000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", default=str(perf.DATA), help="the LoCoMo dev file the texts come from")
    args = parser.parse_args()
    perf.DATA = Path(args.data)
    report: dict[str, Any] = {"load_average": os.getloadavg(), "time_to_ready": [], "server_beside_embedded": []}
    for n in (int(n) for n in args.sizes.split(",") if n):
        report["time_to_ready"].append(time_to_ready(n))
        print(json.dumps(report["time_to_ready"][-1]), file=sys.stderr, flush=True)
    for n in (int(n) for n in args.server_sizes.split(",") if n):
        report["server_beside_embedded"].append(server_beside_embedded(n, args.repeat))
        print(json.dumps(report["server_beside_embedded"][-1]), file=sys.stderr, flush=True)
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
