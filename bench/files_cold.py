"""Cold read of a files-backend store: every memory file walked, read and parsed by a fresh process.

    python bench/files_cold.py [--files 1000] [--repeat 7] [--out FILE]

Writes N memory files (LoCoMo-sized content, frontmatter as the backend writes it) into a temporary store,
then times, each in a new process and interleaved round by round: `python -c pass`, the store's full read
(`StoreFiles.records()`, what a first list or search of a new process does) with PyYAML's libyaml parser
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

READ = """
import sys, time, filelock
from pathlib import Path
started = time.perf_counter()
import yaml
from agent_memory.adapters.files import format as file_format
if sys.argv[2] == "python":
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
        rounds: dict[str, list[float]] = {"python -c pass": [], "read, libyaml": [], "read, pure Python": []}
        for _ in range(options.repeat):
            rounds["python -c pass"].append(timed([sys.executable, "-c", "pass"]))
            for label, parser_name in (("read, libyaml", "c"), ("read, pure Python", "python")):
                rounds[label].append(timed([sys.executable, "-c", READ, str(store), parser_name, str(options.files)]))
    medians = {label: round(statistics.median(values), 3) for label, values in rounds.items()}
    report = {
        "date": datetime.now(UTC).date().isoformat(),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "files": options.files,
        "repeat": options.repeat,
        "wall_s_median": medians,
        "pure_python_over_libyaml": round(medians["read, pure Python"] / medians["read, libyaml"], 2),
    }
    text = json.dumps(report, indent=1)
    print(text)
    if options.out:
        options.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
