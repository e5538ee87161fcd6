"""The CLI's `--format text`: short human-readable renderings of the JSON payloads."""

from __future__ import annotations

from typing import Any


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


def created(m: dict[str, Any]) -> str:
    return "Created " + memory(m)[0].lower() + memory(m)[1:]


def reinforced(m: dict[str, Any]) -> str:
    return f"Reinforced memory {m['id']}: confidence {m['confidence']} (at {m['last_reinforced_at']})"


def deleted(payload: dict[str, Any]) -> str:
    return f"Deleted memory {payload['id']}"


def search(payload: dict[str, Any]) -> str:
    if not payload["results"]:
        return "No memories found."
    lines = [f"{payload['count']} memor{'y' if payload['count'] == 1 else 'ies'} found:"]
    for rank, hit in enumerate(payload["results"], start=1):
        lines.append(f"{rank}. {hit['content']}")
        lines.append(
            f"   similarity {hit['similarity']:.4f}  confidence {hit['confidence']}  {_scope(hit)}  id {hit['id']}"
        )
    return "\n".join(lines)


def status(payload: dict[str, Any]) -> str:
    details = "  ".join(f"{k}: {v}" for k, v in payload.items() if k != "status")
    return f"agent-memory is {payload['status']}  {details}"
