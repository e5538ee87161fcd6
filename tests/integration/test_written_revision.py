"""A change of one memory over a `chroma run` server answers the revision it wrote (Memory.revision), not the one
it read: the answer a caller may carry to its next write is the memory as stored."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from returns.result import Result

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain import commands as c
from agent_memory.domain.errors import DomainError
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import MemoryView
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import Settings
from tests.chroma_server import ChromaServer, chroma_server

__all__ = ["chroma_server"]


def answered(service: MemoryService, result: Result[MemoryView, DomainError]) -> tuple[int, int]:
    """The answer's revision, and the revision stored now."""
    view = result.unwrap()
    return view.memory.revision, service.get(view.memory.id).unwrap().memory.revision


@pytest.mark.server
def test_update_move_reinforce_and_restore_answer_the_revision_they_wrote(
    chroma_server: ChromaServer, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        backend="chroma",
        chroma_host=chroma_server.host,
        chroma_port=chroma_server.port,
        collection=f"t{uuid.uuid4().hex}",
    )
    service = build_service(settings, embedder=HashingEmbedder()).unwrap()
    made = service.create(c.CreateMemory(content="the plan", path="notes/plan", decay_policy="reinforceable"))
    ref = made.unwrap().memory.id
    assert answered(service, service.update(c.UpdateMemory(ref=ref, tags=("one",)))) == (1, 1)
    assert answered(service, service.update(c.UpdateMemory(ref=ref, content="the new plan"))) == (2, 2)
    assert answered(service, service.move(ref, "notes/moved")) == (3, 3)
    assert answered(service, service.reinforce(ref)) == (4, 4)
    service.delete(ref).unwrap()
    assert answered(service, service.restore(ref)) == (6, 6)
