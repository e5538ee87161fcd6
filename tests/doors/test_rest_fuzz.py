"""Schemathesis over the REST app's own /openapi.json (in-process, over fakes): no input ever earns a 5xx."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from agent_memory.adapters.clock import FixedClock  # noqa: E402
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog  # noqa: E402
from agent_memory.domain.commands import CreateMemory  # noqa: E402
from agent_memory.domain.service import MemoryService  # noqa: E402
from agent_memory.entrypoints.rest.app import build_app  # noqa: E402


def _seeded_service() -> MemoryService:
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(),
        clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)),
    )
    service.add(CreateMemory(content="The user prefers vim.", path="prefs/editor", decay_policy="reinforceable"))
    service.add(CreateMemory(content="Deploys go out on Fridays.", path="projects/agent-memory/deploys"))
    return service


# per operation; REST_FUZZ_EXAMPLES=300 for a deeper run (about 2.5 minutes)
EXAMPLES = int(os.environ.get("REST_FUZZ_EXAMPLES", "25"))
APP = build_app(_seeded_service(), allowed_hosts=("testserver",))  # schemathesis's ASGI client sends this Host
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()  # type: ignore[untyped-decorator]
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_no_request_earns_a_server_error(case: Any) -> None:
    case.call_and_validate(checks=[not_a_server_error])
