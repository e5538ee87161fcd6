"""Killed batches at random points (issue 31): SIGKILL `memory create --jsonl` / `memory import` mid-write, then
check that the batch is stored whole or not at all, and that a retry stores each memory once.

    python bench/kill_batches.py [--kills 20] [--size 400] [--backends chroma files qdrant] [--out FILE]

Per backend, in a fresh data directory (in-process commands, MEMORY_SERVER=off): one calibration run of each command
times its write (from the batch journal's appearance to its removal); then every kill starts the command, waits for
its journal to appear, sleeps a uniformly random part of that write time (up to 1.2 times it, so some kills land
after the commit) and SIGKILLs it. Kills alternate: create --jsonl of `size` new memories, and import of `size`
records of which half replace stored memories (changed content) and half are new. After each kill, `memory export`
(whose open rolls back an interrupted batch) must show the store as before the batch or as after it, never between;
a batch found absent is run again and must then be there exactly once (no content twice, no replaced one doubled).
Prints counts per backend as JSON. Not timed: the figures are counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

MEMORY = Path(sys.executable).parent / "memory"


def run(env: dict[str, str], *args: str, stdin: str = "") -> str:
    done = subprocess.run([str(MEMORY), *args], input=stdin, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"memory {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def snapshot(env: dict[str, str]) -> dict[str, str]:
    """Every stored memory, id → content (export rolls back an interrupted batch first)."""
    records = [json.loads(line) for line in run(env, "export").splitlines()]
    return {r["id"]: r["content"] for r in records if "content" in r}


def journals(data_dir: Path, backend: str) -> list[Path]:
    folder = data_dir / "journals" / backend
    return list(folder.glob("*.batch.json")) if folder.is_dir() else []


def timed_write(env: dict[str, str], data_dir: Path, backend: str, args: list[str], stdin: str) -> float:
    """Run a command to its end; how long its batch journal existed (the write)."""
    process = subprocess.Popen(
        [str(MEMORY), *args], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True
    )
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.close()
    began = ended = None
    while process.poll() is None:
        present = bool(journals(data_dir, backend))
        now = time.monotonic()
        if present and began is None:
            began = now
        if not present and began is not None and ended is None:
            ended = now
        time.sleep(0.002)
    if process.returncode != 0:
        raise SystemExit(f"calibration of {args} failed")
    return max((ended or time.monotonic()) - (began or time.monotonic()), 0.01)


def killed_at(env: dict[str, str], data_dir: Path, backend: str, args: list[str], stdin: str, delay: float) -> bool:
    """Start the command, SIGKILL it `delay` s after its journal appears; whether it died before finishing."""
    process = subprocess.Popen(
        [str(MEMORY), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.close()
    while process.poll() is None and not journals(data_dir, backend):
        time.sleep(0.002)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return process.returncode == -signal.SIGKILL


def create_lines(round_: int, size: int) -> str:
    return "".join(json.dumps({"content": f"round {round_} fact {n} {random.random()}"}) + "\n" for n in range(size))


def import_lines(
    before: dict[str, str], template: dict[str, Any], round_: int, size: int
) -> tuple[str, dict[str, str]]:
    """`size` records: half replace stored memories with new content, half are new; and the store they make."""
    replaced = random.sample(sorted(before), min(size // 2, len(before)))
    records = [{**template, "id": i, "content": f"round {round_} replaced {i}"} for i in replaced]
    while len(records) < size:
        records.append({**template, "id": str(uuid.uuid4()), "content": f"round {round_} new {len(records)}"})
    after = {**before, **{r["id"]: r["content"] for r in records}}
    return "".join(json.dumps(r) + "\n" for r in records), after


def backend_run(backend: str, kills: int, size: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix=f"kill-{backend}-"))
    data_dir = home / "data"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "MEMORY_DATA_DIR": str(data_dir)}
    env |= {"MEMORY_BACKEND": backend, "MEMORY_SERVER": "off", "MEMORY_CONFIG": str(home / "empty.toml")}
    (home / "empty.toml").write_text("")
    run(env, "create", "--jsonl", "-", stdin=create_lines(0, size))
    template = {k: v for k, v in json.loads(run(env, "export").splitlines()[-1]).items() if k not in ("id", "content")}
    write_s = {
        "create": timed_write(env, data_dir, backend, ["create", "--jsonl", "-"], create_lines(-1, size)),
        "import": timed_write(
            env, data_dir, backend, ["import", "-"], import_lines(snapshot(env), template, -1, size)[0]
        ),
    }
    tally: Counter[str] = Counter()
    for round_ in range(1, kills + 1):
        kind = "create" if round_ % 2 else "import"
        before = snapshot(env)
        if kind == "create":
            stdin, args = create_lines(round_, size), ["create", "--jsonl", "-"]
        else:
            stdin, args = import_lines(before, template, round_, size)[0], ["import", "-"]
        died = killed_at(env, data_dir, backend, args, stdin, random.uniform(0, 1.2 * write_s[kind]))
        tally["killed" if died else "finished before the kill"] += 1
        after_kill = snapshot(env)
        whole = _whole(kind, before, after_kill, stdin)
        tally[f"{kind}: {'none' if after_kill == before else 'all' if whole else 'PARTIAL'}"] += 1
        if after_kill == before:
            run(env, *args, stdin=stdin)
            retried = snapshot(env)
            tally["retries"] += 1
            tally["retry duplicates or misses"] += 0 if _whole(kind, before, retried, stdin) else 1
        duplicates = sum(n - 1 for n in Counter(snapshot(env).values()).values() if n > 1)
        tally["duplicate contents in store"] += duplicates
    shutil.rmtree(home, ignore_errors=True)
    return {"backend": backend, "kills": kills, "batch_size": size, "write_s": write_s, **dict(sorted(tally.items()))}


def _whole(kind: str, before: dict[str, str], after: dict[str, str], stdin: str) -> bool:
    records = [json.loads(line) for line in stdin.splitlines()]
    if kind == "import":
        return after == {**before, **{r["id"]: r["content"] for r in records}}
    added = Counter(content for memory_id, content in after.items() if memory_id not in before)
    return set(before) <= set(after) and added == Counter(r["content"] for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--size", type=int, default=400)
    parser.add_argument("--backends", nargs="+", default=["chroma", "files", "qdrant"])
    parser.add_argument("--out")
    options = parser.parse_args()
    results = [backend_run(backend, options.kills, options.size) for backend in options.backends]
    text = json.dumps({"date": time.strftime("%Y-%m-%d"), "results": results}, indent=2)
    print(text)
    if options.out:
        Path(options.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
