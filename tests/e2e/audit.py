"""The audit of racing nodes' logs against what the engine holds afterwards (tests/e2e/test_scale_out.py,
tests/e2e/test_node_faults.py): 0 paths with two live memories, 0 acknowledged writes lost, 0 half batches.

The log is race_node.Node's, one entry a write: `node`, `op`, `t0` and `t1` (when it began and was answered, on the
wall clock the nodes of one machine share), `ok`, and `code` when it was refused. By op: `add` and `create` name
`mark` and `content` (and once stored `id` and `path`); `batch` names `mark`, `paths` and `contents` (stored: `ids`);
`update` names the memory's `id`, the `field` it set and the `value`; `move` names `ref` (the path it moved from) and
`to` (stored: the memory's `id` and its `path`); `delete` names `ref` (stored: `id`). An answer whose code is in
MAY_HAVE_LANDED said the write may be stored after all: the audit allows what it wrote and never requires it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from agent_memory.domain.model import Memory
from tests.e2e.race_node import BATCH_SIZE

MAY_HAVE_LANDED = ("OUTCOME_UNKNOWN",)  # answers saying the write may be stored after all


def findings(log: list[dict[str, Any]], stored: dict[str, Memory]) -> dict[str, Any]:
    """Every broken promise, by kind (none of any kind: every list empty)."""
    return {
        "paths held by more than one live memory": live_paths_held_twice(list(stored.values())),
        "acknowledged writes lost": lost_writes(log, stored),
        "batches neither whole nor absent": broken_batches(log, stored),
    }


def live_paths_held_twice(memories: list[Memory]) -> dict[str, int]:
    held = Counter(str(m.path) for m in memories if not m.deleted and m.path is not None)
    return {path: count for path, count in held.items() if count > 1}


def creations(log: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each acknowledged new memory by id: its text, path and when it was written."""
    made = {}
    for entry in log:
        if entry["ok"] and entry["op"] in ("add", "create"):
            made[entry["id"]] = {"content": entry["content"], "path": entry["path"], **when(entry)}
        if entry["ok"] and entry["op"] == "batch":
            for memory_id, text, path in zip(entry["ids"], entry["contents"], entry["paths"], strict=True):
                made[memory_id] = {"content": text, "path": path, **when(entry)}
    return made


def when(entry: dict[str, Any]) -> dict[str, float]:
    return {"t0": entry["t0"], "t1": entry["t1"]}


def admissible(acknowledged: list[dict[str, Any]], uncertain: Sequence[dict[str, Any]] = ()) -> list[Any]:
    """The values a field may end with: those of acknowledged writes that no other acknowledged write followed (began
    after it was acknowledged), and those of writes that may have landed that no acknowledged write followed."""
    later = [w for w in acknowledged if not w.get("first")]  # a memory's creation comes before every change to it
    last = [w["value"] for w in later or acknowledged if not any(o["t0"] > w["t1"] for o in later)]
    return last + [w["value"] for w in uncertain if not any(o["t0"] > w["t1"] for o in later)]


def lost_writes(log: list[dict[str, Any]], stored: dict[str, Memory]) -> list[str]:
    """Every acknowledged write the engine does not show, and every field holding a value nobody acknowledged (or
    wrote with an answer saying it may have landed)."""
    lost = []
    history: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    maybe: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    moved_to = {e["to"] for e in log if e["op"] == "move" and not e["ok"] and e.get("code") in MAY_HAVE_LANDED}
    for memory_id, what in creations(log).items():
        if memory_id not in stored:
            lost.append(f"acknowledged new memory {memory_id} ({what['content'][:40]}) is not stored")
            continue
        for field, value in (("content", what["content"]), ("tags", []), ("path", what["path"])):
            history[memory_id, field].append({"value": value, "first": True, **when(what)})
    for entry in log:
        if entry["op"] == "update" and (entry["ok"] or entry.get("code") in MAY_HAVE_LANDED):
            (history if entry["ok"] else maybe)[entry["id"], entry["field"]].append(
                {"value": entry["value"], **when(entry)}
            )
        elif entry["op"] == "move" and entry["ok"]:
            history[entry["id"], "path"].append({"value": entry["path"], **when(entry)})
        elif entry["op"] == "delete" and entry["ok"] and entry["id"] in stored and not stored[entry["id"]].deleted:
            lost.append(f"acknowledged delete of {entry['id']} by {entry['node']}: it is live")
    for (memory_id, field), writes in history.items():
        memory = stored.get(memory_id)
        if memory is None:
            lost.append(f"{memory_id}, changed by acknowledged writes, is not stored")
            continue
        path = None if memory.path is None else str(memory.path)
        value = {"content": memory.content, "tags": list(memory.tags), "path": path}[field]
        if value not in admissible(writes, maybe[memory_id, field]) and not (field == "path" and value in moved_to):
            lost.append(f"{memory_id} {field} is {str(value)[:50]!r}, not one of the last acknowledged")
    return lost


def broken_batches(log: list[dict[str, Any]], stored: dict[str, Memory]) -> list[str]:
    """Batches neither whole nor absent (one that may have landed: either); members known by their first word,
    `<mark>m<i>`."""
    by_first_word = Counter(m.content.split()[0] for m in stored.values())
    broken = []
    for entry in (entry for entry in log if entry["op"] == "batch"):
        present = sum(by_first_word[f"{entry['mark']}m{i}"] for i in range(BATCH_SIZE))
        expected = (BATCH_SIZE,) if entry["ok"] else (0, BATCH_SIZE) if entry["code"] in MAY_HAVE_LANDED else (0,)
        if present not in expected:
            answer = "acknowledged" if entry["ok"] else f"refused ({entry['code']})"
            broken.append(f"batch {entry['mark']} {answer} has {present} of {BATCH_SIZE} members stored")
    return broken
