"""The CLI's `--format text`: short human-readable renderings of the JSON payloads."""

from __future__ import annotations

from typing import Any


def _memories(count: int, kind: str = "") -> str:
    """'1 memory', '2 memories', '1 expired memory'."""
    return f"{count} {kind + ' ' if kind else ''}memor{'y' if count == 1 else 'ies'}"


def _scope(m: dict[str, Any]) -> str:
    parts = [f"{k}={m[k]}" for k in ("agent", "personality", "project", "type") if m.get(k)]
    if m.get("global"):
        parts.append("global")
    if m.get("path"):
        parts.append(f"path={m['path']}")
    if m.get("tags"):
        parts.append("tags=" + ",".join(m["tags"]))
    return " ".join(parts) or "(no scope)"


def memory(m: dict[str, Any]) -> str:
    lines = [
        f"Memory {m['id']}",
        f"  {m['content']}",
        f"  scope:      {_scope(m)}",
        f"  decay:      {m['decay_policy']}   confidence: {m['confidence']}",
        f"  created:    {m['created_at']}",
    ]
    if m.get("last_reinforced_at"):
        lines.append(f"  reinforced: {m['last_reinforced_at']}")
    if m.get("expires_at"):
        lines.append(f"  expires:    {m['expires_at']}")
    return "\n".join(lines)


def _duplicate(d: dict[str, Any]) -> str:
    """'<id> (<path>, similarity 0.93)': a near-duplicate a create found."""
    where = f"{d['path']}, " if d.get("path") else ""
    return f"{d['id']} ({where}similarity {d['similarity']:.2f})"


def _what_was_done(m: dict[str, Any]) -> str:
    """What a create did, the near-duplicate it found first: skipped, merged into it, or created beside it."""
    found = m.get("duplicates") or []
    if not found:
        return f"created memory {m['id']}"
    best = _duplicate(found[0]) + (f" and {len(found) - 1} more" if len(found) > 1 else "")
    if m.get("on_duplicate") == "skipped":
        return f"skipped: a near-duplicate of {best}; nothing stored"
    if m.get("on_duplicate") == "updated":
        return f"merged into {best}: its content is now the new text"
    return f"created memory {m['id']} (a near-duplicate of {best} kept beside it)"


def created(m: dict[str, Any]) -> str:
    if "created" in m:  # a batch (`create --jsonl`): the ids, one per line, then the records that repeated one
        repeats = m.get("duplicates", [])
        not_made = sum(1 for r in repeats if r.get("on_duplicate") in ("skipped", "updated"))
        head = f"Created {_memories(m['count'] - not_made)}"
        if not_made:
            head += f" ({m['count']} records, {not_made} skipped or merged into a near-duplicate)"
        lines = [head + ":", *m["created"], *(f"record {r['record']}: {_what_was_done(r)}" for r in repeats)]
        return "\n".join(lines)
    said = _what_was_done(m)
    return said[0].upper() + said[1:] + "\n" + memory(m).split("\n", 1)[1]


def reinforced(m: dict[str, Any]) -> str:
    return f"Reinforced memory {m['id']}: confidence {m['confidence']} (at {m['last_reinforced_at']})"


def deleted(payload: dict[str, Any]) -> str:
    return f"Deleted memory {payload['id']}"


def restored(m: dict[str, Any]) -> str:
    return "Restored " + memory(m)[0].lower() + memory(m)[1:]


def search(payload: dict[str, Any]) -> str:
    if not payload["results"]:
        return "No memories found."
    if payload.get("broad"):  # the question named no subject: the scope's memories, by what matters
        lines = [f"{_memories(payload['count'])}, by confidence then the latest (the question names no subject):"]
    else:  # the ranker's order weighs words as well as meaning: relevance is the meaning's part, 0 to 1
        lines = [f"{_memories(payload['count'])} found, best first (relevance: 0 unrelated, 1 answers it):"]
    for rank, hit in enumerate(payload["results"], start=1):
        lines.append(f"{rank}. {hit['content']}")
        lines.append(
            f"   relevance {hit['relevance']:.2f}  confidence {hit['confidence']}  {_scope(hit)}  id {hit['id']}"
        )
        part = hit.get("matched_part")
        if part:  # a long memory found by one of its parts: the part that answered, where it lies
            lines.append(f"   matched (characters {part['start']}–{part['end']}): {' '.join(part['text'].split())}")
    return "\n".join(lines)


def status(payload: dict[str, Any]) -> str:
    details = "  ".join(f"{k}: {v}" for k, v in payload.items() if k not in ("status", "problems", "warnings"))
    problems = "".join(f"\n  - {problem}" for problem in payload.get("problems", []))
    warnings = "".join(f"\n  warning: {warning}" for warning in payload.get("warnings", []))
    return f"agent-memory is {payload['status']}  {details}{problems}{warnings}"


def removed(payload: dict[str, Any]) -> str:
    return f"Removed memory {payload['id']}" + (f" ({payload['path']})" if payload.get("path") else "")


def listing(payload: dict[str, Any]) -> str:
    title = payload["category"] or "(all categories)"
    lines = [
        f"{title}: {_memories(payload['count'])}" + (f" — {payload['description']}" if payload["description"] else "")
    ]
    for sub in payload["subcategories"]:
        note = f" — {sub['description']}" if sub["description"] else ""
        lines.append(f"  {sub['path']}/  ({sub['memory_count']}){note}")
    for m in payload["memories"]:
        mark = " (deleted: `memory restore` brings it back)" if m.get("deleted") else ""
        lines.append(f"  {m['path'] or m['id']}: {_first_line(m['content'])}{mark}")
    return "\n".join(lines)


def recent(payload: dict[str, Any]) -> str:
    if not payload["memories"]:
        return "No memories yet."
    return "\n".join(
        f"{m['updated_at']}  {m['path'] or m['id']}: {_first_line(m['content'])}" for m in payload["memories"]
    )


def prune(payload: dict[str, Any]) -> str:
    verb = "Would prune" if payload["dry_run"] else "Pruned"
    lines = [f"{verb} {_memories(payload['count'], 'expired')}"]
    lines.extend(f"  {p['path'] or p['id']} (expired {p['expires_at']})" for p in payload["pruned"])
    return "\n".join(lines)


def exported(records: list[dict[str, Any]]) -> str:
    """`memory export --format text`: each store, then each memory as `store  path or id: first line (state)`."""
    lines: list[str] = []
    memories = [r for r in records if r.get("kind") != "store"]
    for outline in (r for r in records if r.get("kind") == "store"):
        described = ", ".join(outline.get("categories") or {}) or "none"
        lines.append(f"Store {outline['name']} (categories: {described})")
    lines.append(f"{_memories(len(memories))}:")
    for m in memories:
        notes = (["deleted"] if m.get("deleted") else []) + (
            [f"expires {m['expires_at']}"] if m.get("expires_at") else []
        )
        note = f"  ({', '.join(notes)})" if notes else ""
        lines.append(f"  {m.get('store') or ''}  {m.get('path') or m['id']}: {_first_line(m['content'])}{note}")
    return "\n".join(lines)


def generic(payload: dict[str, Any]) -> str:
    """key: value lines, lists one item per line; for the small administrative payloads."""
    lines: list[str] = []
    for key, value in payload.items():
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {_flat(item)}" for item in value)
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _flat(item: object) -> str:
    if isinstance(item, dict):
        return "  ".join(f"{k}={v}" for k, v in item.items())
    return str(item)


def _first_line(content: str, width: int = 100) -> str:
    line = content.strip().splitlines()[0] if content.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"
