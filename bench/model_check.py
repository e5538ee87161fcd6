"""What the load-time model check costs: the check itself, a load with the verdict cached, and a CLI call after it.

    python bench/model_check.py --model DIR [--model DIR ...] [--repeat 5] [--cli]

For each model directory: the check's own time (Verdict.milliseconds, each round with an empty verdict folder),
the first load with the check against a load with the verdict cached, and the cache lookup alone (the key: CPU flags,
onnxruntime version, reference data hashed; then one small file read), which is all a later process adds. With
--cli, `memory search` in-process (MEMORY_SERVER=off) with the directory whose verdict is cached and the same call
with the shipped model, interleaved, medians of --repeat rounds. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_memory.adapters.model_check import VerdictCache, read_reference
from agent_memory.adapters.model_directory import read_model_directory
from agent_memory.adapters.onnx_embedder import OnnxEmbedder

MEMORY = Path(sys.executable).parent / "memory"


def _load_s(directory: Path, verdicts: Path) -> tuple[float, OnnxEmbedder]:
    spec = read_model_directory(directory).value_or(None)
    if spec is None:
        raise SystemExit(f"{directory}: {read_model_directory(directory)}")
    embedder = OnnxEmbedder(spec, verdicts=verdicts)
    start = time.perf_counter()
    loaded = embedder.load()
    elapsed = time.perf_counter() - start
    if embedder.verdict is None or not embedder.verdict.passed:
        raise SystemExit(f"{directory} does not pass its check: {loaded}")
    return elapsed, embedder


def _lookup_ms(directory: Path, name: str, verdicts: Path, repeat: int) -> float:
    runs = []
    for _ in range(repeat * 20):
        start = time.perf_counter()
        raw = read_reference(directory).value_or(None)
        if raw is None:
            raise SystemExit(f"{directory}: unreadable reference.json")
        if VerdictCache(verdicts).recall(VerdictCache.key(directory, name, raw)) is None:
            raise SystemExit("the verdict was not cached")
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1000


def _cli_env(model: str, home: Path) -> dict[str, str]:
    (home / "none.toml").touch()
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": str(home / "none.toml"),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_SERVER": "off",
        "MEMORY_EMBEDDER": model,
        "ANONYMIZED_TELEMETRY": "False",
    }


def _search_s(env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([str(MEMORY), "search", "dark mode"], env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memory search with {env['MEMORY_EMBEDDER']} failed: {done.stderr.decode()}")
    return elapsed


def _cli_s(directory: Path, repeat: int) -> dict[str, float]:
    """`memory search` with the directory (its verdict kept) and with the shipped model, interleaved round by round
    (a loaded machine's noise lands on both); the first call of each (the store made, the check run) is left out."""
    with tempfile.TemporaryDirectory(prefix="model-check-cli-") as folder:
        for name in ("directory", "shipped"):
            (Path(folder) / name).mkdir()
        envs = {
            "directory": _cli_env(str(directory), Path(folder) / "directory"),
            "shipped": _cli_env("minilm", Path(folder) / "shipped"),
        }
        runs: dict[str, list[float]] = {name: [] for name in envs}
        for env in envs.values():
            _search_s(env)
        for _ in range(repeat):
            for name, env in envs.items():
                runs[name].append(_search_s(env))
    return {f"cli_search_{name}_s": round(statistics.median(times), 3) for name, times in runs.items()}


def measure(directory: Path, repeat: int, cli: bool) -> dict[str, Any]:
    check_ms, first_s, cached_s = [], [], []
    name = ""
    for _ in range(repeat):
        verdicts = Path(tempfile.mkdtemp(prefix="model-check-"))
        elapsed, embedder = _load_s(directory, verdicts)
        assert embedder.verdict is not None
        check_ms.append(embedder.verdict.milliseconds)
        first_s.append(elapsed)
        cached_s.append(_load_s(directory, verdicts)[0])
        name = embedder.name
    verdict = embedder.verdict
    result: dict[str, Any] = {
        "model": name,
        "verdict": {
            "worst_margin": verdict.worst_margin,
            "worst_batch": verdict.worst_batch,
            "worst_reference": verdict.worst_reference,
        },
        "check_ms": statistics.median(check_ms),
        "first_load_s": round(statistics.median(first_s), 3),
        "cached_load_s": round(statistics.median(cached_s), 3),
        "cache_lookup_ms": round(_lookup_ms(directory, name, verdicts, repeat), 3),
    }
    if cli:
        result.update(_cli_s(directory, repeat))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", type=Path, required=True, help="a model directory")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time `memory search` with each directory")
    args = parser.parse_args()
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "models": [measure(directory.resolve(), args.repeat, args.cli) for directory in args.model],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
