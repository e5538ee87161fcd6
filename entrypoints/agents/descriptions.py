"""What a model reads about the agent tools: manage_memory's description and both tools' JSON argument schemas."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.domain.duplicates import DUPLICATE_POLICIES
from agent_memory.entrypoints.tooling.calls import MAX_WINDOW
from agent_memory.entrypoints.tooling.langmem_filters import FILTER_HELP

__all__ = ["DUPLICATES_HELP", "MAX_WINDOW", "ON_DUPLICATE_HELP", "manage_description", "manage_schema", "search_schema"]

# what an agent reads about near-duplicates (issue 41): one memory per fact, updated rather than added twice
DUPLICATES_HELP = (
    "One memory per fact: when a memory of the namespace already says what you create, the answer names it; "
    "update that memory instead of adding the same thing twice, or give `on_duplicate`='update' (put your text in "
    "it), 'skip' (leave it as it is) or 'keep' (store both)."
)
ON_DUPLICATE_HELP = (
    "create only: what to do when a memory of the namespace already says this: update (put this text in it), "
    "skip (store nothing) or keep (store both); omit for the server's setting (keep unless set)."
)


def manage_description(permitted: Sequence[str], instructions: str) -> str:
    how = {
        "create": "create: give `content` and no `id`; the id is generated and returned",
        "update": "update: give the memory's `id` (from search_memory) and the full new `content`",
        "delete": "delete: give the memory's `id`",
    }
    verbs = {"create": "Create", "update": "update", "delete": "delete"}
    named = [verbs[action] if i == 0 else verbs[action].lower() for i, action in enumerate(permitted)]
    said = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    lines = [
        f"{said[0].upper()}{said[1:]} a long-term memory (a fact, preference or piece of context) "
        "so it persists across conversations.",
        f"Permitted actions: {', '.join(permitted)} (default {default_action(permitted)}).",
        *(f"- {how[action]}." for action in permitted),
    ]
    if any(action in permitted for action in ("create", "update")):
        lines.append("Optionally give `type` (e.g. 'preference'; search_memory's filter calls it category) and `tags`.")
    if "create" in permitted:
        lines.append(DUPLICATES_HELP)
    # custom instructions replace the default guidance on when to call the tool (as in LangMem)
    lines.append(instructions or _when_to_call(permitted))
    return "\n".join(lines)


def _when_to_call(permitted: Sequence[str]) -> str:
    cases = []
    if "create" in permitted:
        cases += [
            "learn a new user preference",
            "are asked to remember something or to change your behaviour",
            "want to record important context",
        ]
    if "update" in permitted:
        cases.append("find that a stored memory is wrong or outdated (update it)")
    if "delete" in permitted:
        cases.append("are asked to forget something (delete it)")
    return "Proactively call this tool when you: " + "; ".join(f"{n}. {c}" for n, c in enumerate(cases, 1)) + "."


def default_action(permitted: Sequence[str]) -> str:
    """What a call without `action` does, as in LangMem: create when it is permitted, else the first permitted."""
    return "create" if "create" in permitted else permitted[0]


def manage_schema(permitted: Sequence[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "content": {
            "type": ["string", "null"],
            "description": "The memory's text. Required for create and update.",
        },
        "action": {"type": "string", "enum": list(permitted), "description": "What to do."},
    }
    properties["action"]["default"] = default_action(permitted)  # as in LangMem: create when permitted
    if any(a in permitted for a in ("create", "update")):
        properties["type"] = {
            "type": ["string", "null"],
            "description": "What kind of memory, e.g. 'preference' (search_memory's filter calls it category).",
        }
        properties["tags"] = {
            "type": ["array", "null"],
            "items": {"type": "string"},
            "description": "Labels to find the memory by (update: replaces them; [] clears).",
        }
    if "create" in permitted:
        properties["on_duplicate"] = {
            "type": ["string", "null"],
            "enum": [*DUPLICATE_POLICIES, None],
            "description": ON_DUPLICATE_HELP,
        }
        properties["idempotency_key"] = {
            "type": ["string", "null"],
            "description": "For create: a key of your choosing; repeating the create with the same key (a retry) "
            "answers the memory the first stored, never a second one.",
        }
    if any(a in permitted for a in ("update", "delete")):
        properties["id"] = {
            "type": ["string", "null"],
            "format": "uuid",
            "description": "The id of the memory to update or delete. Omit when creating.",
        }
    return {
        "type": "object",
        "properties": properties,
        "required": [],
        "additionalProperties": False,
    }


def search_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for, in natural language or keywords."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_WINDOW, "default": 10},
            "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Results to skip (paging)."},
            "filter": {"type": ["object", "null"], "description": FILTER_HELP},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
