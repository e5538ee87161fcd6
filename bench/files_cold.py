"""Cold read of a files-backend store: every memory file walked, read and parsed by a fresh process.

    python bench/files_cold.py [--files 1000] [--repeat 7] [--out FILE]

Writes N memory files (LoCoMo-sized content, frontmatter as the backend writes it) into a temporary store,
then times, each in a new process and interleaved round by round: `python -c pass`, the store's full read
(`StoreFiles.records()`, what a first list or search of a new process does) with the store's read cache
(`.read-cache`, written by the previous read: the usual start), and without it (deleted first: the first
start after every file changed, which parses every file and writes the cache) with PyYAML's libyaml parser
(the product's default) and with its pure-Python parser (the reference). Prints JSON with medians.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_memory.adapters.files.readcache import CACHE_FILE

READ = """
import sys, time, filelock
from pathlib import Path
started = time.perf_counter()
from agent_memory.adapters.files import format as file_format
if sys.argv[2] == "python":
    import yaml
    file_format._FAST_LOADER = yaml.SafeLoader
from agent_memory.adapters.files.directory import StoreFiles
store = Path(sys.argv[1])
records = StoreFiles("default", store, filelock.FileLock(str(store.parent / "bench.lock"))).records()
assert len(records) == int(sys.argv[3]), len(records)
print(time.perf_counter() - started)
"""


def write_store(folder: Path, count: int) -> None:
    from agent_memory.adapters.files.frontmatter import serialize_frontmatter
    from agent_memory.domain.model import Memory
    from agent_memory.domain.paths import MemoryPath

    start = datetime(2026, 11, 1, tzinfo=UTC)
    for index in range(count):
        memory = Memory(
            id=str(uuid.UUID(int=index + 1, version=4)),
            content=f"Turn {index}: we talked about the trip to Lisbon and the booking reference QX{index:05d}. " * 2,
            created_at=start + timedelta(minutes=index),
            updated_at=start + timedelta(minutes=index),
            path=MemoryPath(("conversations", f"session-{index // 50}", f"turn-{index}")),
            project="bench",
            tags=("travel", "chat"),
            thread=f"session-{index // 50}",
        )
        place = folder.joinpath(*memory.path.segments[:-1]) if memory.path else folder
        place.mkdir(parents=True, exist_ok=True)
        (place / f"{memory.path.segments[-1] if memory.path else memory.id}.md").write_text(
            serialize_frontmatter(memory), encoding="utf-8"
        )


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        store = Path(work) / "default"
        write_store(store, options.files)
        runs = (
            ("read, no cache, pure Python", "python", False),
            ("read, no cache, libyaml", "c", False),
            ("read, cache", "c", True),
        )
        rounds: dict[str, list[float]] = {"python -c pass": [], **{label: [] for label, _, _ in runs}}
        for _ in range(options.repeat):
            rounds["python -c pass"].append(timed([sys.executable, "-c", "pass"]))
            for label, parser_name, cached in runs:
                if not cached:
                    (store / CACHE_FILE).unlink(missing_ok=True)
                argv = [sys.executable, "-c", READ, str(store), parser_name, str(options.files)]
                rounds[label].append(timed(argv))
    medians = {label: round(statistics.median(values), 3) for label, values in rounds.items()}
    report = {
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "files": options.files,
        "repeat": options.repeat,
        "wall_s_median": medians,
        "pure_python_over_libyaml": round(
            medians["read, no cache, pure Python"] / medians["read, no cache, libyaml"], 2
        ),
        "no_cache_over_cache": round(medians["read, no cache, libyaml"] / medians["read, cache"], 2),
        "cache_over_python_pass": round(medians["read, cache"] / medians["python -c pass"], 1),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if options.out:
        options.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
