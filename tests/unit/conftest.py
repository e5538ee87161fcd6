"""Fixtures for unit tests: the service over in-memory fakes and a clock that moves on command."""

from datetime import UTC, datetime

import pytest

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.service import MemoryService

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0)


@pytest.fixture
def catalog() -> InMemoryCatalog:
    return InMemoryCatalog(embedder_name="hashing-bow")


@pytest.fixture
def service(catalog: InMemoryCatalog, clock: FixedClock) -> MemoryService:
    return MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock)
