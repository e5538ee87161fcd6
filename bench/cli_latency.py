"""Wall time of `memory` commands through the local memory server beside in-process and `python -c pass`, same run.

    python bench/cli_latency.py [--backend chroma] [--memories 1000] [--repeat 9] [--out FILE]

Fills a temporary data directory with LoCoMo-like sentences through the Python API, then times, interleaved
round by round: `python -c pass`; `memory get <id>` and `memory search <query>` in-process (MEMORY_SERVER=off) and
through a warm server; the first command of a cold machine (`memory get` right after `memory server stop`, the
server's start included); and the query embedding alone, in-process. Prints medians (seconds) and ratios as JSON.
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

from agent_memory.domain.commands import CreateMemory
from agent_memory.entrypoints.bootstrap import build_embedder, build_service
from agent_memory.entrypoints.settings import load_settings

MEMORY = Path(sys.executable).parent / "memory"
QUERY = "When did Caroline go to the support group?"


def _timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr.decode()}")
    return elapsed


def _fill(env: dict[str, str], count: int) -> str:
    settings = load_settings(env=env).unwrap()
    service = build_service(settings).unwrap()
    commands = [
        CreateMemory(content=f"Note {n}: Caroline talked about the support group, painting and week {n % 52}.")
        for n in range(count)
    ]
    made = service.create_many(commands).unwrap()
    return made[0].memory.id


def _embedding_s(env: dict[str, str], repeat: int) -> float:
    embedder = build_embedder(load_settings(env=env).unwrap()).unwrap()
    embedder.embed_query(QUERY)  # the model loads once
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        embedder.embed_query(QUERY)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def measure(backend: str, memories: int, repeat: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="agent-memory-latency-"))
    base = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": str(home / "none.toml"),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_BACKEND": backend,
        "ANONYMIZED_TELEMETRY": "False",
    }
    served, direct = {**base, "MEMORY_SERVER": "auto"}, {**base, "MEMORY_SERVER": "off"}
    first_id = _fill(base, memories)
    get, search = [str(MEMORY), "get", first_id], [str(MEMORY), "search", QUERY]
    _timed(get, served)  # start the server
    _timed(search, served)  # load the model in it
    runs: dict[str, list[float]] = {
        name: [] for name in ("python_pass", "get_direct", "get_served", "search_direct", "search_served", "first")
    }
    for _ in range(repeat):
        runs["python_pass"].append(_timed([sys.executable, "-c", "pass"], base))
        runs["get_served"].append(_timed(get, served))
        runs["search_served"].append(_timed(search, served))
        runs["get_direct"].append(_timed(get, direct))
        runs["search_direct"].append(_timed(search, direct))
    for _ in range(max(3, repeat // 3)):
        _timed([str(MEMORY), "server", "stop"], served)
        runs["first"].append(_timed(get, served))
    _timed([str(MEMORY), "server", "stop"], served)
    medians = {name: round(statistics.median(values), 4) for name, values in runs.items()}
    embedding = round(_embedding_s(base, repeat * 3), 4)
    python = medians["python_pass"]
    return {
        "date": datetime.now(UTC).date().isoformat(),
        "backend": backend,
        "memories": memories,
        "repeat": repeat,
        "load_average": os.getloadavg(),
        "median_s": medians,
        "query_embedding_s": embedding,
        "ratios": {
            "get_served_over_python": round(medians["get_served"] / python, 2),
            "search_served_over_python_plus_2x_embedding": round(
                medians["search_served"] / (python + 2 * embedding), 2
            ),
            "get_direct_over_served": round(medians["get_direct"] / medians["get_served"], 1),
            "search_direct_over_served": round(medians["search_direct"] / medians["search_served"], 1),
            "first_minus_get_direct_s": round(medians["first"] - medians["get_direct"], 3),
        },
        "runs_s": {name: [round(v, 4) for v in values] for name, values in runs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="chroma")
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    result = measure(options.backend, options.memories, options.repeat)
    text = json.dumps(result, indent=2)
    if options.out:
        options.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
