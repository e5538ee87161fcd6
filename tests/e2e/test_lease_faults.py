"""Writers over one `chroma run` under the faults a lease must outlive without anyone waiting out a timer for it (a
holder killed with SIGKILL, the engine killed and restarted on the same data and port), and a write the engine
dropped after it was sent: its answer says it may have landed, and a retry with its idempotency key stores it once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.lease_locks import LeaseWriteLocks
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.idempotency import keyed_memory_id
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_engine_locks, build_service
from agent_memory.entrypoints.settings import Settings, load_settings
from tests.chroma_server import HOST, ChromaServer, free_port, start_chroma, stop_chroma
from tests.cut_proxy import cut_proxy

pytestmark = pytest.mark.server
HOLDER = Path(__file__).with_name("lease_holder.py")


def node(home: Path, host: str, port: int, collection: str, ttl: float) -> tuple[MemoryService, LeaseWriteLocks]:
    """One host's service over the engine (its own HOME and data directory), and the leases it writes under."""
    env = {
        "HOME": str(home),
        "CHROMADB_HOST": host,
        "CHROMADB_PORT": str(port),
        "MEMORY_COLLECTION": collection,
        "MEMORY_LEASE_TTL_SECONDS": str(ttl),
    }
    settings: Settings = load_settings({"data_dir": str(home / "data"), "backend": "chroma"}, env).unwrap()
    service = build_service(settings, embedder=HashingEmbedder(dimension=64)).unwrap()
    locks = build_engine_locks(settings)
    assert locks is not None
    return service, locks


def test_a_holder_killed_with_sigkill_costs_the_survivors_next_five_writes_one_ttl_in_all(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    collection, ttl = f"t{uuid.uuid4().hex[:12]}", 3.0
    survivor, leases = node(tmp_path / "survivor", chroma_server.host, chroma_server.port, collection, ttl)
    made = survivor.create(
        CreateMemory(content="the store exists before the holder dies", decay_policy="reinforceable")
    )
    kept = made.unwrap().memory.id
    where = [chroma_server.host, str(chroma_server.port), collection, str(ttl)]
    holder = subprocess.Popen([sys.executable, str(HOLDER), str(tmp_path / "holder"), *where], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    survivor.create(CreateMemory(content="a create commits without the lease", path="notes/no-lease")).unwrap()
    assert leases.expiries == 0  # a create waits for no holder, dead or alive (it takes no ticket)
    for _ in range(5):
        leases.let_go()  # each write takes a ticket of its own, as writes seconds apart do
        reinforced = survivor.reinforce(kept)  # a change of a stored memory runs under the lease
        assert isinstance(reinforced, Success), reinforced
    assert leases.expiries == 1  # one ttl waited, for the dead ticket, once
    # another machine arriving now finds the dead ticket marked over in the ledger: it waits for nothing
    newcomer, their_leases = node(tmp_path / "newcomer", chroma_server.host, chroma_server.port, collection, ttl)
    newcomer.create(CreateMemory(content="a newcomer's write about herons")).unwrap()
    assert their_leases.expiries == 0


def test_after_the_engine_restarts_the_first_write_is_acknowledged_within_seconds(tmp_path: Path) -> None:
    port, ttl, collection = free_port(), 20.0, "memories"
    engine = start_chroma(tmp_path / "engine", port)
    try:
        first, first_leases = node(tmp_path / "first", HOST, port, collection, ttl)
        second, second_leases = node(tmp_path / "second", HOST, port, collection, ttl)
        first.create(CreateMemory(content="written before the engine went away")).unwrap()
        holding, go_on = threading.Event(), threading.Event()

        def in_flight() -> Success[None]:  # a write under the lease while the engine dies under it
            holding.set()
            go_on.wait(timeout=60)
            return Success(None)

        writer = threading.Thread(target=lambda: first_leases.exclusive("default", in_flight))
        writer.start()
        assert holding.wait(timeout=30)
        engine.kill()
        engine.wait(timeout=30)
        go_on.set()
        writer.join(timeout=60)  # its release cannot reach the engine
        assert first.create(CreateMemory(content="written while the engine is down")).failure()
        engine = start_chroma(tmp_path / "engine", port)
        for service, name in ((second, "another machine"), (first, "the same machine")):
            started = time.monotonic()
            service.create(CreateMemory(content=f"the first write by {name} after the restart")).unwrap()
            assert time.monotonic() - started < ttl / 4, name  # seconds, not a ttl
        assert first_leases.expiries == 0 and second_leases.expiries == 0
    finally:
        stop_chroma(engine)


def test_a_create_the_engine_dropped_after_it_was_sent_says_it_may_have_landed_and_a_keyed_retry_stores_it_once(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    collection, mark = f"t{uuid.uuid4().hex[:12]}", f"qz{uuid.uuid4().hex[:10]}"
    with cut_proxy(chroma_server.port) as proxy:
        service, _ = node(tmp_path / "node", HOST, proxy.port, collection, 20.0)
        service.create(CreateMemory(content="the store exists")).unwrap()
        command = CreateMemory(content=f"The {mark} report is due on Monday.", idempotency_key="report-1")
        proxy.cut_after(mark.encode())
        error = service.create(command).failure()
        assert proxy.sent_marked.is_set()
        expected_id = keyed_memory_id("default", (), "report-1")
        assert error.code is ErrorCode.OUTCOME_UNKNOWN, error
        assert "may have been stored" in error.message and expected_id in error.message
        assert f"{HOST}:{proxy.port}" in error.message and "Docker" not in error.message
        proxy.heal()
        retried = service.create(command).unwrap()
        assert retried.memory.id == expected_id
        again = service.create(command).unwrap()
        assert again.memory.id == expected_id
        found = service.search(SearchMemories(query=mark, limit=10)).unwrap().results
        assert [hit.memory.id for hit in found if mark in hit.memory.content] == [expected_id]
