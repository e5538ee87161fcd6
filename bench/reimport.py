"""Re-import cost: `memory import` of N memories into an empty store (all created) vs the same file again (all
replaced), in one process, per backend.

    python bench/reimport.py [--memories 200] [--rounds 3] [--backends chroma,files,qdrant] [--out FILE]

Each round uses a fresh data directory: a source store gets N memories (`memory create --jsonl`, LoCoMo-sized
sentences), `memory export` writes them to a file, then `memory import FILE` runs twice on a new data directory,
timed: the first creates every memory, the second replaces every one (same ids, same content); a third imports the
file with every memory's tags changed (same text: "retagged"). The commands run
in this process through `cli.run_guarded` (the code the memory server runs), after the embedding model is loaded,
so process start-up is left out. Prints JSON: the median seconds of each and their ratios to the create, per backend.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agent_memory.entrypoints.cli import in_process as cli

WORDS = [
    "the",
    "user",
    "prefers",
    "short",
    "answers",
    "about",
    "python",
    "testing",
    "deployment",
    "coffee",
    "lisbon",
    "music",
    "weekends",
]


def _env(data_dir: Path, backend: str) -> dict[str, str]:
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    config = data_dir.parent / "empty.toml"
    config.touch()
    return {"HOME": str(data_dir.parent), "MEMORY_CONFIG": str(config), "MEMORY_DATA_DIR": str(data_dir)} | {
        "MEMORY_BACKEND": backend
    }


def _run(argv: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if stdin is not None:
            saved, sys.stdin = sys.stdin, io.StringIO(stdin)
            try:
                code = cli.run_guarded(argv, env=env)
            finally:
                sys.stdin = saved
        else:
            code = cli.run_guarded(argv, env=env)
    if code != 0:
        raise SystemExit(f"memory {' '.join(argv)} failed: {err.getvalue()}")
    return out.getvalue()


def _sentences(count: int) -> str:
    lines = []
    for n in range(count):
        words = [WORDS[(n * 7 + k * 3) % len(WORDS)] for k in range(18)]
        lines.append(json.dumps({"content": f"Memory {n}: " + " ".join(words) + ".", "tags": [f"t{n % 5}"]}))
    return "\n".join(lines) + "\n"


def one_round(root: Path, backend: str, count: int) -> tuple[float, float, float]:
    source = _env(root / "source" / "data", backend)
    _run(["create", "--jsonl", "-"], source, stdin=_sentences(count))
    exported = root / "export.jsonl"
    _run(["export", "--output", str(exported)], source)
    target = _env(root / "target" / "data", backend)
    started = time.perf_counter()
    created = json.loads(_run(["import", str(exported)], target))
    create_s = time.perf_counter() - started
    started = time.perf_counter()
    replaced = json.loads(_run(["import", str(exported)], target))
    replace_s = time.perf_counter() - started
    assert created["created"] == count and replaced["replaced"] == count, (created, replaced)
    retagged_file = root / "retagged.jsonl"
    lines = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    retagged_file.write_text(
        "".join(json.dumps(line | ({"tags": ["retagged"]} if "content" in line else {})) + "\n" for line in lines),
        encoding="utf-8",
    )
    started = time.perf_counter()
    retagged = json.loads(_run(["import", str(retagged_file)], target))
    retag_s = time.perf_counter() - started
    assert retagged["replaced"] == count, retagged
    return create_s, replace_s, retag_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", default="chroma,files,qdrant")
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    results: dict[str, object] = {"memories": options.memories, "rounds": options.rounds}
    results["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count()}
    for backend in options.backends.split(","):
        with tempfile.TemporaryDirectory() as warm:  # load the model and the backend's library first
            one_round(Path(warm), backend, 5)
        creates, replaces, retags = [], [], []
        for _ in range(options.rounds):
            with tempfile.TemporaryDirectory() as root:
                create_s, replace_s, retag_s = one_round(Path(root), backend, options.memories)
            creates.append(create_s)
            replaces.append(replace_s)
            retags.append(retag_s)
        create, replace, retag = (statistics.median(each) for each in (creates, replaces, retags))
        results[backend] = {
            "create_s": round(create, 3),
            "replace_s": round(replace, 3),
            "retag_s": round(retag, 3),
            "replace_ratio": round(replace / create, 2),
            "retag_ratio": round(retag / create, 2),
            "runs": {"create": creates, "replace": replaces, "retag": retags},
        }
        print(json.dumps({backend: results[backend]}), flush=True)
    if options.out:
        options.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
