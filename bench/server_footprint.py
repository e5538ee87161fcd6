"""What one memory server per user costs: its RSS holding one store against three (chroma, files, qdrant), its RSS
once its idle stores are closed, and what a start costs the next command (a new server, or a closed store reopened).

    python bench/server_footprint.py [--memories 200] [--repeat 3] [--out FILE]

A temporary HOME gets three data directories, one per backend, each filled with `--memories` memories in-process
(`--no-server`, so the server's RSS holds only what it opened). Then, per round:
- for each backend alone: a new server, one `memory search` in that data directory, its RSS (VmRSS);
- a new server, one `memory search` in each of the three in turn: its RSS after each (the issue's "≤ 1.3×");
- the wall time of the first `memory search` of a stopped server (the server's start, the model's load, the store's
  opening) against a warm one, and of the first search after the server closed the store (`server_store_idle_seconds`
  short) with the server alive, and the RSS of the server with every store closed.
Prints medians as JSON (seconds, MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MEMORY = Path(sys.executable).parent / "memory"
BACKENDS = ("chroma", "files", "qdrant")
QUERY = "When did Caroline go to the support group?"


def _run(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[float, Any]:
    start = time.perf_counter()
    done = subprocess.run([str(MEMORY), *args], env=env, input=stdin, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memory {' '.join(args)} failed: {done.stderr}")
    return elapsed, json.loads(done.stdout) if done.stdout.startswith("{") else done.stdout


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmRSS for {pid}")


def _server_pid(env: dict[str, str]) -> int:
    _, status = _run(env, "server", "status")
    return int(status["pid"])


def _stop(env: dict[str, str]) -> None:
    _run(env, "server", "stop", "--all")


def _fill(env: dict[str, str], count: int) -> None:
    lines = "".join(
        json.dumps({"content": f"Note {n}: Caroline talked about the support group, painting and week {n % 52}."})
        + "\n"
        for n in range(count)
    )
    _run(env, "create", "--jsonl", "-", "--no-server", stdin=lines)


def _round(envs: dict[str, dict[str, str]], short: dict[str, str]) -> dict[str, float]:
    figures: dict[str, float] = {}
    for backend, env in envs.items():  # a server holding one store
        _stop(env)
        _run(env, "search", QUERY)
        figures[f"rss_one_{backend}_mib"] = _rss_mib(_server_pid(env))
    first = envs["chroma"]
    _stop(first)
    for n, (backend, env) in enumerate(envs.items(), start=1):  # one server, the three in turn
        _run(env, "search", QUERY)
        figures[f"rss_after_{n}_stores_mib"] = _rss_mib(_server_pid(env))
        del backend
    _stop(first)
    figures["first_search_of_a_stopped_server_s"], _ = _run(first, "search", QUERY)
    figures["warm_search_s"], _ = _run(first, "search", QUERY)
    _stop(first)
    closing = first | short
    _run(closing, "search", QUERY)
    pid = _server_pid(closing)
    deadline = time.monotonic() + 60
    while _run(closing, "server", "status")[1]["stores"] and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1.0)
    figures["rss_all_stores_closed_mib"] = _rss_mib(pid)
    figures["first_search_after_the_store_closed_s"], _ = _run(closing, "search", QUERY)
    figures["rss_reopened_mib"] = _rss_mib(pid)
    _stop(first)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "config.toml").write_text("")
        base = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "MEMORY_CONFIG": str(home / "config.toml")}
        envs = {
            backend: base | {"MEMORY_DATA_DIR": str(home / f"project-{backend}"), "MEMORY_BACKEND": backend}
            for backend in BACKENDS
        }
        for env in envs.values():
            _fill(env, options.memories)
        rounds = [_round(envs, {"MEMORY_SERVER_STORE_IDLE_SECONDS": "1"}) for _ in range(options.repeat)]
    medians = {key: round(statistics.median(r[key] for r in rounds), 3) for key in rounds[0]}
    one = max(medians[f"rss_one_{backend}_mib"] for backend in BACKENDS)
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "memories_per_store": options.memories,
        "repeat": options.repeat,
        "load_average": os.getloadavg(),
        "medians": medians,
        "three_stores_over_the_largest_one": round(medians["rss_after_3_stores_mib"] / one, 3),
        "three_stores_over_chroma_alone": round(medians["rss_after_3_stores_mib"] / medians["rss_one_chroma_mib"], 3),
        "three_servers_before_mib": round(sum(medians[f"rss_one_{backend}_mib"] for backend in BACKENDS), 1),
        "rounds": rounds,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
