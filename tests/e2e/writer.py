"""A writer process for durability tests: creates, updates and deletes memories, printing each acknowledged write."""

from __future__ import annotations

import sys
from pathlib import Path

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, UpdateMemory
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings


def main(data_dir: str, backend: str, worker: str, count: int) -> None:
    settings = load_settings({"data_dir": data_dir, "backend": backend}, {"HOME": str(Path(data_dir).parent)}).unwrap()
    service = build_service(settings, embedder=HashingEmbedder()).unwrap()
    for i in range(count):
        created = service.add(CreateMemory(content=f"worker {worker} memory {i}", path=f"w{worker}/m{i}")).unwrap()
        print(f"created {created.memory.id} w{worker}/m{i}", flush=True)
        if i % 3 == 1:
            service.update(UpdateMemory(ref=f"w{worker}/m{i}", content=f"worker {worker} memory {i} updated")).unwrap()
            print(f"updated {created.memory.id}", flush=True)
        if i % 5 == 4:
            service.delete(created.memory.id).unwrap()
            print(f"deleted {created.memory.id}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
