"""Arbitrary memories through export → JSON Lines → import, between every pair of backends: equal field by field."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pytest
from attrs import evolve
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.adapters.clock import SystemClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints import json_codec as out
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.cli.handlers import _records_from_jsonl, jsonl_line
from agent_memory.entrypoints.settings import load_settings
from tests.contract.vector_store_contract import memories_strategy
from tests.field_examples import every_field_set, fields_at_default

pytestmark = pytest.mark.slow
BACKENDS = ("chroma", "files", "qdrant")


def service_at(root: Path, backend: str) -> MemoryService:
    data = root / uuid.uuid4().hex
    loaded = load_settings({"data_dir": str(data), "backend": backend}, {"HOME": str(root)}).unwrap()
    return build_service(loaded, embedder=HashingEmbedder()).unwrap()


def as_jsonl(service: MemoryService) -> str:
    return "\n".join(jsonl_line(out.memory_json(m)) for m in service.export().unwrap())


def unique_paths(memories: list[Memory]) -> list[Memory]:
    """At most one live memory per path, as every store guarantees (the others lose their path)."""
    seen: set[object] = set()
    kept = []
    for memory in memories:
        if memory.path is not None and not memory.deleted:
            if memory.path in seen:
                memory = evolve(memory, path=None)
            seen.add(memory.path)
        kept.append(memory)
    return kept


@pytest.mark.parametrize(("source", "target"), list(itertools.permutations(BACKENDS, 2)))
def test_arbitrary_memories_survive_every_backend_pair(tmp_path: Path, source: str, target: str) -> None:
    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(memories_strategy, min_size=1, max_size=5, unique_by=lambda m: m.id))
    def round_trip(memories: list[Memory]) -> None:
        memories = unique_paths(memories)
        first = service_at(tmp_path, source)
        first.import_memories(memories).unwrap()
        text = as_jsonl(first)
        assert "\u2028" not in text and len(text.split("\n")) == len(memories)
        _outlines, parsed = _records_from_jsonl(text, None).unwrap()
        second = service_at(tmp_path, target)
        second.import_memories(parsed).unwrap()
        assert sorted(second.export().unwrap(), key=lambda m: m.id) == sorted(memories, key=lambda m: m.id)

    round_trip()


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_field_survives_export_and_import(tmp_path: Path, backend: str) -> None:
    """A memory with every field set (derived from attrs.fields(Memory): a new field is in it) through import into
    the backend, export, JSON Lines and import into the in-memory fakes: equal field by field."""
    memory = every_field_set()
    assert fields_at_default(memory) == []
    first = service_at(tmp_path, backend)
    first.import_memories([memory]).unwrap()
    _outlines, parsed = _records_from_jsonl(as_jsonl(first), None).unwrap()
    assert parsed == [memory]
    fakes = MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"), embedder=HashingEmbedder(), clock=SystemClock()
    )
    fakes.import_memories(parsed).unwrap()
    assert fakes.export().unwrap() == [memory]
