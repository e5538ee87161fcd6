"""A node that takes a store's write lease over a Chroma server, says so on stdout, and holds it until killed."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from returns.result import Success

from agent_memory.entrypoints.bootstrap import build_engine_locks
from agent_memory.entrypoints.settings import load_settings


def main(home: str, host: str, port: str, collection: str, ttl: str) -> None:
    env = {
        "HOME": home,
        "CHROMADB_HOST": host,
        "CHROMADB_PORT": port,
        "MEMORY_COLLECTION": collection,
        "MEMORY_LEASE_TTL_SECONDS": ttl,
    }
    settings = load_settings({"data_dir": str(Path(home) / "data"), "backend": "chroma"}, env).unwrap()
    locks = build_engine_locks(settings)
    assert locks is not None

    def hold() -> Success[None]:
        print("holding", flush=True)
        threading.Event().wait()  # until SIGKILL: no release, no more renewals
        return Success(None)

    locks.exclusive("default", hold)


if __name__ == "__main__":
    main(*sys.argv[1:6])
