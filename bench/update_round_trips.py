"""What an update of one memory costs over a `chroma run` server: the engine calls one update makes (by Ledger method
and by Chroma collection call), counted and timed, with the memory's revision claimed (adapters/revision_claims.py)
and, for the before figure, without (`--without-revisions`: ClaimedStore writes as it did before, paths claimed only).
Tag updates and content updates, one after another from one process, a hashing embedder. Prints one JSON object.

    PYTHONPATH=. python bench/update_round_trips.py --updates 40
    PYTHONPATH=. python bench/update_round_trips.py --updates 40 --without-revisions
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from returns.result import Result

from agent_memory.adapters.revision_claims import RevisionClaims
from agent_memory.domain import commands as c
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import Memory
from agent_memory.domain.ports import Vector, VectorStore
from bench.create_round_trips import calls, counted_service, spent


def unclaimed(
    _self: RevisionClaims,
    inner: VectorStore,
    pairs: Sequence[Any],
    embeddings: Sequence[Vector] | None,
    claimed: Callable[..., Result[None, DomainError]],
) -> Result[list[Memory], DomainError]:
    """The write as it was before revisions: the paths claimed around the inner store's write, nothing more."""
    memories = [after for _, after in pairs]
    if embeddings is None:
        return claimed(pairs, lambda: inner.update_metadata(memories)).map(lambda _: memories)
    return claimed(pairs, lambda: inner.replace(memories, embeddings)).map(lambda _: memories)


def per_update(service: Any, ids: list[str], change: Callable[[str, int], c.UpdateMemory]) -> dict[str, Any]:
    calls.clear()
    spent.clear()
    began = time.perf_counter()
    for n, memory_id in enumerate(ids):
        service.update(change(memory_id, n)).unwrap()
    ms = (time.perf_counter() - began) * 1000 / len(ids)
    engine = sum(count for label, count in calls.items() if label.startswith("chroma."))
    return {
        "ms_per_update": round(ms, 1),
        "engine_calls_per_update": round(engine / len(ids), 2),
        "calls_per_update": {label: round(count / len(ids), 2) for label, count in sorted(calls.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--without-revisions", action="store_true")
    args = parser.parse_args()
    if args.without_revisions:
        RevisionClaims.write = unclaimed  # type: ignore[method-assign]
    with counted_service() as service:
        made = [
            service.create(c.CreateMemory(content=f"note {n} about leases", path=f"bench/n{n}")).unwrap()
            for n in range(args.updates)
        ]
        ids = [view.memory.id for view in made]
        service.update(c.UpdateMemory(ref=ids[0], tags=("warm",))).unwrap()  # the first lease before the count
        tags = per_update(service, ids, lambda ref, n: c.UpdateMemory(ref=ref, tags=(f"t{n}",)))
        texts = per_update(service, ids, lambda ref, n: c.UpdateMemory(ref=ref, content=f"note {n}, reworded"))
    print(
        json.dumps(
            {
                "updates": args.updates,
                "revisions": not args.without_revisions,
                "tag_update": tags,
                "content_update": texts,
            }
        )
    )


if __name__ == "__main__":
    main()
