"""`memory serve` scaled out over one Chroma server: throughput and latency by processes and clients (issue 39).

    python bench/scale_out.py [--workers 1,2,4] [--clients 1,8,32] [--requests 96] [--sizes 10000] [--data FILE]
                              [--compare NAME=DIR,…] [--out FILE]
    python bench/scale_out.py --workers '' --sizes 10000 --skip-embedded   (warm search only)

Starts one `chroma run` (the installed package's) on a free port, then for each worker count `memory serve
--workers N` over it (a fresh collection each), and beside them, in the same run, the embedded default
(`memory serve`, one process over embedded Chroma). For each number of concurrent clients (threads, each with its
own HTTP connection): `--requests` creates (POST /memories, distinct texts of LoCoMo turns), then as many hybrid
searches (POST /search) over what is there; creates/s and searches/s (requests over the phase's wall time), p50
and p95 of each request's latency, and how many failed (any answer but 2xx, or no answer). Then, for each of
`--sizes`, warm hybrid search in-process over the Chroma server, the catalog kept warm as `memory serve` keeps it
(its node mirror installed first, the seconds it took reported), beside embedded Chroma filled the same way in the
same process (interleaved) and the floor, as bench/perf.py measures it (real embeddings of 2,000 turns reused with
noise; floor = query embedding + numpy brute force over the same vectors), with the fill's duration. Prints JSON.
The clients run on the same machine as the servers (and the Chroma server): on few cores they compete with them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
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

BIN = Path(sys.executable).parent
TOKEN = "bench-" + uuid.uuid4().hex
STARTUP_S = 300


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {STARTUP_S} s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str], health: str, log: Path) -> Iterator[None]:
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=output)
        try:
            wait_for(health, process, log)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def collection_of(home: Path) -> str:
    """A valid Chroma collection name per server home (a temporary folder's tail may end in '_', which Chroma
    refuses: a whole cell of main's failed so on 2026-12-07)."""
    return "s" + uuid.uuid5(uuid.NAMESPACE_URL, str(home)).hex[:11]


def server_env(home: Path, chroma_port: int | None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": str(home / "config.toml"),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_BACKEND": "chroma",
        "MEMORY_API_TOKEN": TOKEN,
        "ANONYMIZED_TELEMETRY": "False",
    }
    (home / "config.toml").write_text("")
    if chroma_port is not None:
        env |= {
            "CHROMADB_HOST": "127.0.0.1",
            "CHROMADB_PORT": str(chroma_port),
            "MEMORY_COLLECTION": collection_of(home),
        }
    return env


def phase(base: str, clients: int, bodies: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Send the requests from `clients` threads at once; throughput, latency percentiles, failures, workers seen."""
    latencies: list[float] = []
    failures: list[str] = []
    workers: set[str] = set()
    guard = threading.Lock()
    queue = list(reversed(bodies))

    def client() -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as http:
            while True:
                with guard:
                    if not queue:
                        return
                    path, body = queue.pop()
                started = time.perf_counter()
                try:
                    answer = http.post(path, json=body)
                    ok, what = answer.is_success, f"{answer.status_code} {answer.text[:200]}"
                    worker = answer.headers.get("x-memory-worker", "?")
                except httpx.HTTPError as error:
                    ok, what, worker = False, repr(error), "?"
                elapsed = (time.perf_counter() - started) * 1000
                with guard:
                    latencies.append(elapsed)
                    workers.add(worker)
                    if not ok:
                        failures.append(what)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(percentile(latencies, 0.95), 1),
        "p95_over_p50": round(percentile(latencies, 0.95) / statistics.median(latencies), 2),
        "failed": len(failures),
        "failures": failures[:3],
        "workers_seen": len(workers),
    }


def bench_server(
    label: str, workers: int, chroma_port: int | None, clients: list[int], n: int, code: str = ""
) -> dict[str, Any]:
    spare = 4 * workers  # warm-up creates: each worker opens the store before the timings
    texts = corpus(n * len(clients) + spare)
    figures: dict[str, Any] = {"engine": label, "workers": workers, "by_clients": {}}
    with tempfile.TemporaryDirectory(prefix="scale-") as where:
        home = Path(where)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = [str(BIN / "memory"), "serve", "--port", str(port), "--workers", str(workers)]
        env = server_env(home, chroma_port) | ({"PYTHONPATH": code} if code else {})
        with running(command, env, f"{base}/health", home / "serve.log"):
            warm = [("/memories", {"content": t}) for t in texts[-spare:]]
            warm += [("/search", {"query": q}) for q in QUERIES] * workers
            phase(base, workers * 2, warm)  # every worker has loaded its model before the timings
            for round_, count in enumerate(clients):
                creates = [("/memories", {"content": t}) for t in texts[round_ * n : (round_ + 1) * n]]
                searches = [("/search", {"query": QUERIES[i % len(QUERIES)], "limit": 10}) for i in range(n)]
                figures["by_clients"][count] = {
                    "create": phase(base, count, creates),
                    "search": phase(base, count, searches),
                }
                print(label, workers, count, json.dumps(figures["by_clients"][count]), file=sys.stderr, flush=True)
    return figures


def mirrored(service: Any, timeout: float = 900) -> float | None:
    """Seconds until the node mirror of the store is installed (kept warm, a search asks for its build in the
    background, as in `memory serve`), or None when it is not within `timeout` (searches then go to Chroma)."""
    started = time.perf_counter()
    while not service.catalog.node._mirrors:
        if time.perf_counter() - started > timeout:
            return None
        service.search(SearchMemories(query=QUERIES[0])).unwrap()
        time.sleep(0.5)
    return round(time.perf_counter() - started, 1)


def timed_searches(service: Any, repeat: int, scope: dict[str, Any]) -> list[float]:
    for _ in range(3):  # warm: the first searches of a process pay for what later ones reuse
        service.search(SearchMemories(query=QUERIES[0], **scope)).unwrap()
    times = []
    for _ in range(repeat):
        for query in QUERIES:
            began = time.perf_counter()
            service.search(SearchMemories(query=query, **scope)).unwrap()
            times.append((time.perf_counter() - began) * 1000)
    return times


def bench_warm_search(chroma_port: int, n: int, repeat: int) -> dict[str, Any]:
    """Warm hybrid search in-process over the Chroma server (its node mirror installed, the catalog kept warm as
    `memory serve` keeps it), beside embedded Chroma (its mirror built) and its floor (bench/perf.py's method),
    interleaved twice in one process so that both see the same machine state."""
    texts = corpus(n)
    with tempfile.TemporaryDirectory(prefix="scale-warm-") as home:
        env = {"HOME": home, "CHROMADB_HOST": "127.0.0.1", "CHROMADB_PORT": str(chroma_port)}
        flags = {"data_dir": home + "/node", "backend": "chroma", "collection": f"warm{n}"}
        service = build_service(load_settings(flags, env).unwrap()).unwrap()
        started = time.perf_counter()
        _, vectors = fill_store(service, texts)
        fill_s = time.perf_counter() - started
        service.catalog.keep_warm()
        ready_s = mirrored(service)
        local = {"data_dir": home + "/embedded", "backend": "chroma"}
        embedded = build_service(load_settings(local, {"HOME": home}).unwrap()).unwrap()
        fill_store(embedded, texts)
        embedded.catalog.keep_warm()
        embedded.catalog.warmer.wait_idle(900)
        embed_ms, brute_ms = [], []
        for _ in range(repeat):
            for query in QUERIES:
                began = time.perf_counter()
                q = np.array(service.embedder.embed_query(query).unwrap(), dtype=np.float32)
                embed_ms.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                np.argpartition(-(vectors @ q), 10)[:10]
                brute_ms.append((time.perf_counter() - began) * 1000)
        floor = statistics.median(embed_ms) + statistics.median(brute_ms)
        figures: dict[str, Any] = {
            "memories": n,
            "fill_s": round(fill_s, 1),
            "node_mirror_ready_s": ready_s,  # None: not mirrored, the server figures are Chroma's own queries
            "floor_ms": round(floor, 2),
        }
        for filtered in (False, True):
            scope: dict[str, Any] = {"project": "p3", "namespace": ("user",)} if filtered else {}
            server_times: list[float] = []
            embedded_times: list[float] = []
            for _ in range(2):
                embedded_times += timed_searches(embedded, repeat, scope)
                server_times += timed_searches(service, repeat, scope)
            key = "hybrid_filtered" if filtered else "hybrid"
            p50, base = statistics.median(server_times), statistics.median(embedded_times)
            figures[f"{key}_ms_p50"] = round(p50, 2)
            figures[f"{key}_ms_p95"] = round(percentile(server_times, 0.95), 2)
            figures[f"{key}_embedded_ms_p50"] = round(base, 2)
            figures[f"{key}_ratio_to_embedded"] = round(p50 / base, 2)
            figures[f"{key}_beyond_floor_ms"] = round(p50 - floor, 2)
            figures[f"{key}_ratio_to_floor"] = round(p50 / floor, 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4", help="process counts ('' to skip the server rows)")
    parser.add_argument("--clients", default="1,8,32")
    parser.add_argument("--requests", type=int, default=96, help="creates, then searches, per cell")
    parser.add_argument("--sizes", default="10000", help="warm search over the Chroma server ('' to skip)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-embedded", action="store_true")
    parser.add_argument("--data", default=str(perf.DATA), help="the LoCoMo dev file the texts come from")
    parser.add_argument(
        "--compare",
        default="",
        help="NAME=DIR,…: also run each server row with the package found in DIR first on the servers' PYTHONPATH "
        "(another commit's tree, checked out aside), interleaved with this one's, for a before/after in one run",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    perf.DATA = Path(args.data)
    clients = [int(c) for c in args.clients.split(",")]
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_average_at_start": os.getloadavg(),
        "requests_per_cell": args.requests,
        "servers": [],
        "warm_search_on_chroma_server": [],
    }
    with tempfile.TemporaryDirectory(prefix="scale-chroma-") as chroma_dir:
        port = free_port()
        chroma = [str(BIN / "chroma"), "run", "--path", chroma_dir, "--host", "127.0.0.1", "--port", str(port)]
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        with running(chroma, env, f"http://127.0.0.1:{port}/api/v2/heartbeat", Path(chroma_dir) / "chroma.log"):
            if not args.skip_embedded:
                report["servers"].append(bench_server("embedded chroma", 1, None, clients, args.requests))
            variants = [("", ""), *(tuple(pair.split("=", 1)) for pair in args.compare.split(",") if pair)]
            for workers in (int(w) for w in args.workers.split(",") if w):
                for name, code in variants:
                    label = f"chroma server ({name})" if name else "chroma server"
                    report["servers"].append(bench_server(label, workers, port, clients, args.requests, code))
            for size in (int(s) for s in args.sizes.split(",") if s):
                report["warm_search_on_chroma_server"].append(bench_warm_search(port, size, args.repeat))
                print("warm", json.dumps(report["warm_search_on_chroma_server"][-1]), file=sys.stderr, flush=True)
    report["load_average_at_end"] = os.getloadavg()
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
