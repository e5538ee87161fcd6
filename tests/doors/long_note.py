"""A store holding a long note found by its last part, for the doors' tests of the matched part (issue 48)."""

from __future__ import annotations

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryKeywordIndex, InMemoryPartVectors
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.service import MemoryService

WINDOW = 12  # words the fake embedder reads of a memory; the rest are its parts
LONG = " ".join(f"filler{n}" for n in range(40)) + " the platypus lays eggs"
QUERY = "platypus eggs"
SHORTS = ("the kettle is blue", "a walk in the park")


def long_service(clock: FixedClock, namespace: tuple[str, ...] = ()) -> MemoryService:
    """A service whose embedder reads WINDOW words, with parts and keywords, holding two short memories and LONG
    (the query's words are in LONG's last part only), in `namespace`."""
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(window=WINDOW),
        clock=clock,
        keywords=InMemoryKeywordIndex(),
        parts=InMemoryPartVectors(),
    )
    for content in (*SHORTS, LONG):
        service.create(CreateMemory(content=content, namespace=namespace)).unwrap()
    return service


def shows_the_last_part(part: object) -> bool:
    """Whether a door's matched_part is LONG's last part: its text, and where it lies in LONG."""
    assert isinstance(part, dict), part
    return LONG[part["start"] : part["end"]] == part["text"] and part["end"] == len(LONG) and part["start"] > 0
