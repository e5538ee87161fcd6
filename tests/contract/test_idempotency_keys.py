"""The IdempotencyKeys port on the Ledger (in memory, embedded Chroma, a `chroma run` server, Qdrant local mode) and
on files: the first fingerprint of a key is kept, racing callers all read the one that won."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.ledger import ChromaLedger
from agent_memory.adapters.idempotency_keys import FileIdempotencyKeys, LedgerIdempotencyKeys
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.adapters.qdrant.ledger import QdrantLedger
from agent_memory.adapters.shared.ledger import InMemoryLedger
from agent_memory.domain.ports import IdempotencyKeys
from tests.chroma_server import ChromaServer
from tests.contract.vector_store_contract import DIM, MODEL


class IdempotencyKeysContract:
    def test_the_first_fingerprint_of_a_key_is_kept(self, keys: IdempotencyKeys) -> None:
        assert keys.remember("default", "k", "first").unwrap() == "first"
        assert keys.remember("default", "k", "second").unwrap() == "first"
        assert keys.remember("other", "k", "third").unwrap() == "third"  # keys are per store
        assert keys.remember("default", "k2", "fourth").unwrap() == "fourth"

    def test_of_racing_callers_exactly_one_wins_and_all_read_it(self, keys: IdempotencyKeys) -> None:
        answers: list[str] = []
        start = threading.Barrier(6)

        def race(number: int) -> None:
            start.wait(timeout=30)
            answers.append(keys.remember("default", "raced", f"caller-{number}").unwrap())

        threads = [threading.Thread(target=race, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(answers) == 6 and len(set(answers)) == 1 and answers[0].startswith("caller-")


class TestFileKeys(IdempotencyKeysContract):
    @pytest.fixture
    def keys(self, tmp_path: Path) -> IdempotencyKeys:
        return FileIdempotencyKeys(tmp_path / "idempotency")

    def test_the_files_are_the_owners_alone(self, keys: IdempotencyKeys, tmp_path: Path) -> None:
        keys.remember("default", "k", "first").unwrap()
        (kept,) = (tmp_path / "idempotency" / "default").iterdir()
        assert kept.stat().st_mode & 0o077 == 0


class TestInMemoryLedgerKeys(IdempotencyKeysContract):
    @pytest.fixture
    def keys(self) -> IdempotencyKeys:
        return LedgerIdempotencyKeys(InMemoryLedger())


class TestChromaEmbeddedLedgerKeys(IdempotencyKeysContract):
    @pytest.fixture
    def keys(self, tmp_path: Path) -> IdempotencyKeys:
        catalog = ChromaCatalog(path=tmp_path / "chroma", embedder_name=MODEL, dimension=DIM)
        return LedgerIdempotencyKeys(ChromaLedger.of(catalog))


@pytest.mark.server
class TestChromaServerLedgerKeys(IdempotencyKeysContract):
    @pytest.fixture
    def keys(self, chroma_server: ChromaServer) -> IdempotencyKeys:
        catalog = ChromaCatalog(
            host=chroma_server.host,
            port=chroma_server.port,
            collection=f"t{uuid.uuid4().hex}",
            embedder_name=MODEL,
            dimension=DIM,
        )
        return LedgerIdempotencyKeys(ChromaLedger.of(catalog))


class TestQdrantLocalLedgerKeys(IdempotencyKeysContract):
    @pytest.fixture
    def keys(self, tmp_path: Path) -> Iterator[IdempotencyKeys]:
        catalog = QdrantCatalog(path=tmp_path / "qdrant", embedder_name=MODEL, dimension=DIM)
        yield LedgerIdempotencyKeys(QdrantLedger.of(catalog))
        catalog.close()
