"""A racing process for the race tests: prints one line per acknowledged write, so the test can check none is lost."""

from __future__ import annotations

import sys
from pathlib import Path

from returns.result import Failure, Success

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, UpdateMemory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings


def open_service(data_dir: str, backend: str) -> MemoryService:
    settings = load_settings({"data_dir": data_dir, "backend": backend}, {"HOME": str(Path(data_dir).parent)})
    return build_service(settings.unwrap(), embedder=HashingEmbedder()).unwrap()


def update_one_field(service: MemoryService, memory_id: str, field: str, count: int) -> None:
    """Set `field` of one memory `count` times; print each acknowledged value."""
    for k in range(count):
        value = f"{field}-{k}"
        change = {"tags": {"tags": (value,)}, "citations": {"citations": (value,)}}.get(field, {field: value})
        match service.update(UpdateMemory(ref=memory_id, **change)):  # type: ignore[arg-type]
            case Success(_):
                print(f"ack {field} {value}", flush=True)
            case Failure(error):
                print(f"fail {field} {error.code}", flush=True)


def add_at_paths(service: MemoryService, worker: str, paths: int) -> None:
    """Try to add a memory at each shared path; print who got it."""
    for i in range(paths):
        match service.add(CreateMemory(content=f"{worker} at p{i}", path=f"race/p{i}")):
            case Success(view):
                print(f"ack race/p{i} {view.memory.id}", flush=True)
            case Failure(error):
                print(f"fail race/p{i} {error.code}", flush=True)


def create_many(service: MemoryService, worker: str, count: int) -> None:
    for i in range(count):
        match service.create(CreateMemory(content=f"{worker} note {i}")):
            case Success(view):
                print(f"ack {view.memory.id}", flush=True)
            case Failure(error):
                print(f"fail {error.code}", flush=True)


def reindex(service: MemoryService, times: int) -> None:
    for _ in range(times):
        match service.reindex():
            case Success(report):
                print(f"reindexed {report.memory_count}", flush=True)
            case Failure(error):
                print(f"fail {error.code} {error.message}", flush=True)


def main(argv: list[str]) -> None:
    data_dir, backend, mode, *rest = argv
    service = open_service(data_dir, backend)
    if mode == "field":
        update_one_field(service, rest[0], rest[1], int(rest[2]))
    elif mode == "add":
        add_at_paths(service, rest[0], int(rest[1]))
    elif mode == "create":
        create_many(service, rest[0], int(rest[1]))
    elif mode == "reindex":
        reindex(service, int(rest[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
