"""The Ledger contract on the in-memory reference, embedded Chroma, a `chroma run` server and Qdrant local mode."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.ledger import QdrantLedger
from agent_memory.adapters.shared.ledger import InMemoryLedger, Ledger, LedgerRecord
from agent_memory.domain.errors import ErrorCode
from tests.chroma_server import ChromaServer, free_port
from tests.contract.ledger_contract import LedgerContract
from tests.contract.vector_store_contract import DIM, MODEL

ROOT = Path(__file__).resolve().parents[2]


def on_server(host: str, port: int, collection: str) -> ChromaLedger:
    return ChromaLedger.of(
        ChromaCatalog(host=host, port=port, collection=collection, embedder_name=MODEL, dimension=DIM)
    )


class TestInMemoryLedger(LedgerContract):
    @pytest.fixture
    def ledger(self) -> Ledger:
        return InMemoryLedger()


class TestChromaEmbeddedLedger(LedgerContract):
    @pytest.fixture
    def ledger(self, tmp_path: Path) -> Ledger:
        return ChromaLedger.of(ChromaCatalog(path=tmp_path / "chroma", embedder_name=MODEL, dimension=DIM))


@pytest.mark.server
class TestChromaServerLedger(LedgerContract):
    @pytest.fixture
    def ledger(self, chroma_server: ChromaServer) -> Ledger:
        return on_server(chroma_server.host, chroma_server.port, f"t{uuid.uuid4().hex}")

    def another(self, ledger: Ledger) -> Ledger:  # its own client: what another machine sees
        assert isinstance(ledger, ChromaLedger)
        host, port = ledger.boundary.location.rsplit(":", 1)
        return on_server(host, int(port), ledger.name.removesuffix(".ledger"))


class TestQdrantLocalLedger(LedgerContract):
    @pytest.fixture
    def ledger(self, tmp_path: Path) -> Iterator[Ledger]:
        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
        yield QdrantLedger.of(catalog)
        catalog.close()


CLAIMER = """
import sys
from agent_memory.adapters.shared.ledger import LedgerRecord
from tests.contract.test_ledger import on_server
ledger = on_server(sys.argv[1], int(sys.argv[2]), sys.argv[3])
sys.stdin.readline()  # every process is ready: claim at once
for n in range(10):
    won = ledger.claim(LedgerRecord(key=f"race/{n}", store="default", kind="lease", seq=n, fields={"holder": sys.argv[4]}))
    print(won.unwrap().fields["holder"], flush=True)
"""


@pytest.mark.server
@pytest.mark.slow
def test_processes_claiming_the_same_keys_on_a_server_agree_on_one_winner_each(chroma_server: ChromaServer) -> None:
    collection = f"t{uuid.uuid4().hex}"
    argv = [sys.executable, "-c", CLAIMER, chroma_server.host, str(chroma_server.port), collection]
    claimers = [
        subprocess.Popen([*argv, f"p{n}"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for n in range(2)
    ]
    for claimer in claimers:
        assert claimer.stdin is not None
        claimer.stdin.write("go\n")
        claimer.stdin.flush()
    answers = [claimer.communicate(timeout=120)[0].split() for claimer in claimers]
    assert all(len(seen) == 10 for seen in answers)
    stored = on_server(chroma_server.host, chroma_server.port, collection).read([f"race/{n}" for n in range(10)])
    winners = [stored.unwrap()[f"race/{n}"].fields["holder"] for n in range(10)]
    assert answers[0] == winners == answers[1]


def test_an_unreachable_server_is_backend_unavailable() -> None:
    ledger = on_server("127.0.0.1", free_port(), "memories")
    error = ledger.claim(LedgerRecord(key="k", store="default", kind="lease")).failure()
    assert error.code is ErrorCode.BACKEND_UNAVAILABLE
