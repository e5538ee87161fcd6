"""Nothing lost: concurrent writer processes, and a writer killed with SIGKILL mid-write."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_memory.adapters.files.frontmatter import parse_frontmatter
from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MULTI_PROCESS_BACKENDS = ("chroma", "files")  # Qdrant local mode admits one process: see README


def writer(data_dir: Path, backend: str, worker: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.writer", str(data_dir), backend, worker, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def acknowledged(output: str) -> tuple[dict[str, str], set[str], set[str]]:
    created: dict[str, str] = {}
    updated: set[str] = set()
    deleted: set[str] = set()
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "created":
            created[parts[1]] = parts[2]
        elif len(parts) == 2 and parts[0] == "updated":
            updated.add(parts[1])
        elif len(parts) == 2 and parts[0] == "deleted":
            deleted.add(parts[1])
    return created, updated, deleted


def open_service(data_dir: Path, backend: str) -> MemoryService:
    settings = load_settings({"data_dir": str(data_dir), "backend": backend}, {"HOME": str(data_dir.parent)}).unwrap()
    return build_service(settings, embedder=HashingEmbedder()).unwrap()


def check_consistent(service: MemoryService, created: dict[str, str], updated: set[str], deleted: set[str]) -> None:
    store = service.catalog.open("default", create=False).unwrap()
    everything = {m.id: m for m in store.scan(MemoryFilter(include_deleted=True)).unwrap()}
    missing = set(created) - set(everything)
    assert missing == set(), f"acknowledged writes lost: {sorted(missing)[:5]}"
    for memory_id, path in created.items():
        memory = everything[memory_id]
        assert str(memory.path) == path
        assert memory.content.endswith("updated") == (memory_id in updated)
        assert memory.deleted == (memory_id in deleted)
    assert store.count().unwrap() == len(everything)


@pytest.mark.parametrize("backend", MULTI_PROCESS_BACKENDS)
def test_concurrent_writers_lose_nothing(tmp_path: Path, backend: str) -> None:
    data_dir = tmp_path / "data"
    workers = [writer(data_dir, backend, str(n), 20) for n in range(3)]
    outputs = [w.communicate(timeout=600) for w in workers]
    for worker, (_out, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    created: dict[str, str] = {}
    updated: set[str] = set()
    deleted: set[str] = set()
    for out, _err in outputs:
        c, u, d = acknowledged(out)
        created |= c
        updated |= u
        deleted |= d
    assert len(created) == 60
    service = open_service(data_dir, backend)
    check_consistent(service, created, updated, deleted)
    if backend == "files":
        index = service.catalog.index.open("default", create=False).unwrap()  # type: ignore[attr-defined]
        assert index.count().unwrap() == 60  # files and index agree


@pytest.mark.parametrize("backend", MULTI_PROCESS_BACKENDS)
def test_a_writer_killed_mid_write_loses_no_acknowledged_write(tmp_path: Path, backend: str) -> None:
    data_dir = tmp_path / "data"
    process = writer(data_dir, backend, "k", 400)
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 300
    while len([line for line in lines if line.startswith("created")]) < 25 and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
    process.send_signal(signal.SIGKILL)
    rest, _ = process.communicate(timeout=60)
    created, updated, deleted = acknowledged("".join(lines) + rest)
    assert len(created) >= 25
    service = open_service(data_dir, backend)
    if backend == "files":
        for path in (data_dir / "files").rglob("*.md"):
            if not path.name.startswith("_"):
                assert parse_frontmatter(path.read_text(encoding="utf-8")).map(lambda _: True).value_or(False), path
    report = service.reindex().unwrap()
    assert report.memory_count >= len(created)
    check_consistent(service, created, updated, deleted)
