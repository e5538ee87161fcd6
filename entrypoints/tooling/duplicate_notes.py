"""What the agent tools say of near-duplicates (issue 41): a create's sentence naming the memory that already said
the same thing."""

from __future__ import annotations

from agent_memory.domain.views import MemoryView


def created_sentence(view: MemoryView) -> str:
    """What a create answers: spec 003's 'created memory <id>', or, when a memory of the namespace already said the
    same thing, which one and what was done; the id last is always the memory the call left (as LangMem's)."""
    if not view.duplicates:
        return f"created memory {view.memory.id}"
    best = view.duplicates[0]
    if view.on_duplicate == "updated":
        return f"it already said this (similarity {best.similarity:.2f}), now in your words: updated memory {best.id}"
    if view.on_duplicate == "skipped":
        return (
            f"nothing stored: it is already said (similarity {best.similarity:.2f}; change it with action='update') "
            f"by memory {best.id}"
        )
    return (
        f"memory {best.id} already said this (similarity {best.similarity:.2f}): update that one instead of adding "
        f"twice; created memory {view.memory.id}"
    )
