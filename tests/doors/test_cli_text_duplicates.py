"""`--format text` of a create says what it did with a near-duplicate (issue 50): the renderer over the CLI's JSON."""

from __future__ import annotations

from typing import Any

from agent_memory.entrypoints.cli import text_format as text

THEME = {"id": "11111111-1111-4111-8111-111111111111", "path": "preferences/theme", "similarity": 0.9312}
NO_PATH = {"id": "22222222-2222-4222-8222-222222222222", "path": None, "similarity": 0.85}


def memory(memory_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": memory_id,
        "content": "User prefers dark mode",
        "path": None,
        "decay_policy": "stable",
        "confidence": 1.0,
        "created_at": "2026-11-29T00:00:00Z",
        **extra,
    }


def test_each_outcome_has_its_own_first_line_then_the_memory() -> None:
    assert text.created(memory("new-id")).startswith("Created memory new-id\n  User prefers dark mode\n")
    kept = text.created(memory("new-id", duplicates=[THEME], on_duplicate="kept"))
    assert kept.startswith(f"Created memory new-id (a near-duplicate of {THEME['id']} (preferences/theme, ")
    assert "similarity 0.93) kept beside it)\n" in kept
    skipped = text.created(memory(THEME["id"], duplicates=[THEME, NO_PATH], on_duplicate="skipped"))
    first = skipped.split("\n")[0]
    assert (
        first
        == f"Skipped: a near-duplicate of {THEME['id']} (preferences/theme, similarity 0.93) and 1 more; nothing stored"
    )
    merged = text.created(memory(NO_PATH["id"], duplicates=[NO_PATH], on_duplicate="updated"))
    assert merged.split("\n")[0] == f"Merged into {NO_PATH['id']} (similarity 0.85): its content is now the new text"
    assert "Memory " not in merged  # the memory's lines follow without a second heading


def test_a_batch_names_each_record_that_repeated_one() -> None:
    batch = {
        "created": ["a", THEME["id"]],
        "count": 2,
        "duplicates": [{"record": 2, "id": THEME["id"], "duplicates": [THEME], "on_duplicate": "skipped"}],
    }
    assert text.created(batch).split("\n") == [
        "Created 1 memory (2 records, 1 skipped or merged into a near-duplicate):",
        "a",
        THEME["id"],
        f"record 2: skipped: a near-duplicate of {THEME['id']} (preferences/theme, similarity 0.93); nothing stored",
    ]
