"""Processes racing on one memory, on one path, and writing during reindex: 0 lost, 0 reverted, 0 doubled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MULTI_PROCESS_BACKENDS = ("chroma", "files")  # Qdrant local mode admits one process: see README


def service_for(data_dir: Path, backend: str) -> MemoryService:
    settings = load_settings({"data_dir": str(data_dir), "backend": backend}, {"HOME": str(data_dir.parent)})
    return build_service(settings.unwrap(), embedder=HashingEmbedder()).unwrap()


def race(data_dir: Path, backend: str, *jobs: list[str]) -> list[list[str]]:
    """Start every job at once (each a racer.py mode with its arguments); their output lines, in job order."""
    running = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.racer", str(data_dir), backend, *job],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for job in jobs
    ]
    outputs = []
    for process in running:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, err
        assert "Traceback" not in err
        outputs.append(out.splitlines())
    return outputs


@pytest.mark.parametrize("backend", MULTI_PROCESS_BACKENDS)
def test_four_processes_changing_one_memory_lose_no_field(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "data"
    memory_id = service_for(data, backend).add(CreateMemory(content="shared", path="race/one")).unwrap().memory.id
    fields = ("tags", "source", "citations", "agent")
    outputs = race(data, backend, *[["field", memory_id, field, "12"] for field in fields])

    final = service_for(data, backend).get(memory_id).unwrap().memory
    for field, lines in zip(fields, outputs, strict=True):
        acknowledged = [line.split()[2] for line in lines if line.startswith("ack ")]
        assert len(acknowledged) == 12, lines  # every update went through (they wait for each other)
        value = getattr(final, field)
        assert value in (acknowledged[-1], (acknowledged[-1],)), (field, value)


@pytest.mark.parametrize("backend", MULTI_PROCESS_BACKENDS)
def test_four_processes_adding_at_one_path_leave_exactly_one_memory_there(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "data"
    service_for(data, backend).create(CreateMemory(content="the store exists")).unwrap()
    outputs = race(data, backend, *[["add", f"w{worker}", "10"] for worker in range(4)])

    winners: dict[str, str] = {}
    for lines in outputs:
        for line in lines:
            word, path, what = line.split()
            if word == "ack":
                assert path not in winners, f"two acknowledged adds at {path}"
                winners[path] = what
            else:
                assert what == "DESTINATION_EXISTS", line
    service = service_for(data, backend)
    assert len(winners) == 10
    for path, winner in winners.items():
        live = service_at(service, path)
        assert live == [winner], path


def service_at(service: MemoryService, path: str) -> list[str]:
    from agent_memory.domain.paths import parse_memory_path

    store = service.catalog.open("default", create=False).unwrap()
    return [m.id for m in store.scan(MemoryFilter(path=parse_memory_path(path).unwrap())).unwrap()]


@pytest.mark.parametrize("backend", MULTI_PROCESS_BACKENDS)
def test_writes_made_while_reindex_runs_are_all_kept(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "data"
    seed = service_for(data, backend)
    for i in range(20):
        seed.create(CreateMemory(content=f"seed {i}")).unwrap()
    outputs = race(data, backend, ["create", "a", "25"], ["create", "b", "25"], ["reindex", "4"])

    acknowledged = {line.split()[1] for lines in outputs[:2] for line in lines if line.startswith("ack ")}
    assert len(acknowledged) == 50, outputs[:2]
    assert all(line.startswith("reindexed ") for line in outputs[2]), outputs[2]
    service = service_for(data, backend)
    stored = {m.id for m in service.export().unwrap()}
    assert acknowledged <= stored
    assert len(stored) == 70
    # and every one is findable: the index holds them all
    found = service.catalog.open("default", create=False).unwrap().count().unwrap()
    assert found == 70
