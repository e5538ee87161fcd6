"""The audit the racing-node suites share (tests/e2e/audit.py) finds each broken promise in a made-up log, and allows
what an answer that said the write may have landed wrote, without requiring it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from tests.e2e.audit import findings

AT = datetime(2026, 12, 7, tzinfo=UTC)


def uid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def stored(*memories: Memory) -> dict[str, Memory]:
    return {m.id: m for m in memories}


def memory(memory_id: str, content: str, path: str, *, tags: tuple[str, ...] = (), deleted: bool = False) -> Memory:
    where = MemoryPath(tuple(path.split("/")))
    return Memory(
        id=uid(memory_id), content=content, created_at=AT, updated_at=AT, path=where, tags=tags, deleted=deleted
    )


def entry(op: str, t0: float, t1: float, ok: bool = True, **what: Any) -> dict[str, Any]:
    return {"node": "a", "op": op, "t0": t0, "t1": t1, "ok": ok, **what}


ADDED = entry("add", 0, 1, mark="qxa1", content="qxa1 about the otter", id=uid("m1"), path="race/p0")
BATCH = entry("batch", 0, 1, mark="qxb2", paths=["batch/0", "batch/1", "batch/2"], ids=[uid(f"b{i}") for i in range(3)])
BATCH["contents"] = [f"qxb2m{i} member" for i in range(3)]
MEMBERS = [memory(f"b{i}", f"qxb2m{i} member", f"batch/{i}") for i in range(3)]


def test_a_log_the_engine_agrees_with_has_no_findings() -> None:
    log = [ADDED, BATCH, entry("update", 2, 3, id=uid("m1"), field="tags", value=["t1"])]
    held = stored(memory("m1", "qxa1 about the otter", "race/p0", tags=("t1",)), *MEMBERS)
    assert not any(findings(log, held).values())


def test_a_lost_update_a_half_batch_and_a_path_held_twice_are_each_found() -> None:
    log = [ADDED, BATCH, entry("update", 2, 3, id=uid("m1"), field="tags", value=["t1"])]
    held = stored(memory("m1", "qxa1 about the otter", "race/p0"), memory("m9", "x", "race/p0"), *MEMBERS[:2])
    found = findings(log, held)
    assert found["paths held by more than one live memory"] == {"race/p0": 2}
    assert any(f"{uid('m1')} tags" in lost for lost in found["acknowledged writes lost"])
    assert any(f"acknowledged new memory {uid('b2')}" in lost for lost in found["acknowledged writes lost"])
    assert found["batches neither whole nor absent"] == ["batch qxb2 acknowledged has 2 of 3 members stored"]


def test_a_write_that_may_have_landed_is_allowed_either_way_and_a_refused_one_never() -> None:
    uncertain = entry("update", 2, 3, ok=False, code="OUTCOME_UNKNOWN", id=uid("m1"), field="tags", value=["t2"])
    refused = {**uncertain, "code": "CONFLICT", "value": ["t3"]}
    batch = {**BATCH, "ok": False, "code": "OUTCOME_UNKNOWN"}
    for tags, members in (((), MEMBERS), (("t2",), [])):
        held = stored(memory("m1", "qxa1 about the otter", "race/p0", tags=tags), *members)
        assert not any(findings([ADDED, uncertain, batch], held).values()), tags
    held = stored(memory("m1", "qxa1 about the otter", "race/p0", tags=("t3",)))
    assert findings([ADDED, refused], held)["acknowledged writes lost"]
    half = stored(memory("m1", "qxa1 about the otter", "race/p0"), *MEMBERS[:1])
    assert findings([ADDED, batch], half)["batches neither whole nor absent"]
