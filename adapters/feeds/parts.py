"""Long memories' parts on a server engine: a local SQLite cache of their vectors, fed from the engine."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from returns.result import Failure, Result, Success

from agent_memory.adapters.feeds.feed import REBUILD, Change, ChangeFeed, chunked
from agent_memory.adapters.shared.ledger import Ledger
from agent_memory.adapters.sqlite_parts import SqlitePartVectors
from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    from agent_memory.domain.ports import Vector

T = TypeVar("T")
Parts = Sequence[tuple[str, Sequence["Vector"]]]


def _encoded(vector: Vector) -> str:
    import numpy as np

    return base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode("ascii")


def _decoded(text: str) -> list[float]:
    import numpy as np

    return [float(v) for v in np.frombuffer(base64.b64decode(text, validate=True), dtype=np.float32)]


def _parts_text(run: Parts) -> str:
    """Each memory's parts as base64 float32 rows: replay needs no model (and gives exactly the writer's vectors)."""
    return json.dumps([[memory_id, [_encoded(v) for v in vectors]] for memory_id, vectors in run])


class FedPartVectors:
    """PartVectors whose truth is the engine's change feed "parts": every write is claimed there first and then
    applied to this node's SQLite file; every read first applies what other nodes wrote since. A write that
    changes nothing (short memories that had no parts) claims nothing.

    A file that is missing (a new node, a wiped disk) or damaged is rebuilt from the feed by the node itself."""

    def __init__(self, local: SqlitePartVectors, ledger: Ledger) -> None:
        self.local = local
        self.feed = ChangeFeed(ledger, "parts", local.path, self._apply)

    def _apply(self, store: str, change: Change) -> Result[None, DomainError]:
        try:
            if change.op == "remove":
                return self.local.remove(store, [str(i) for i in change.body])
            parts = {str(memory_id): [_decoded(v) for v in vectors] for memory_id, vectors in change.body}
        except (TypeError, ValueError, binascii.Error) as error:
            return Failure(
                DomainError(ErrorCode.STORAGE_ERROR, "A parts change record is malformed.", cause=str(error))
            )
        return self.local.rebuild(store, parts) if change.op == REBUILD else self.local.put(store, parts)

    def _read(
        self, store: str, read: Callable[[], Result[T, DomainError]], *, again: bool = True
    ) -> Result[T, DomainError]:
        """Catch up, then read (ChangeFeed.read: a damaged file is set aside and replayed from the feed)."""
        return self.feed.read(store, read, lambda: self.local.rebuild(store, {}), again=again)

    def _forget(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        """A remove record only for the ids that have parts (most memories have none: no record, no round trip)."""
        return self._read(store, lambda: self.local.holding(store, ids)).bind(
            lambda held: self.feed.append(store, "remove", chunked(sorted(held), json.dumps)) if held else Success(None)
        )

    # --- the port ---------------------------------------------------------------------------

    def put(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        longs = [(memory_id, vectors) for memory_id, vectors in parts.items() if vectors]
        shorts = [memory_id for memory_id, vectors in parts.items() if not vectors]
        forgotten = self._forget(store, shorts) if shorts else Success(None)
        return forgotten.bind(
            lambda _: self.feed.append(store, "put", chunked(longs, _parts_text)) if longs else Success(None)
        )

    def remove(self, store: str, ids: Sequence[str]) -> Result[None, DomainError]:
        return self._forget(store, ids) if ids else Success(None)

    def rebuild(self, store: str, parts: Mapping[str, Sequence[Vector]]) -> Result[None, DomainError]:
        longs = [(memory_id, vectors) for memory_id, vectors in parts.items() if vectors]
        return self.feed.append(store, REBUILD, chunked(longs, _parts_text), then="put")

    def nearest(self, store: str, embedding: Vector, limit: int) -> Result[list[tuple[str, float]], DomainError]:
        return self._read(store, lambda: self.local.nearest(store, embedding, limit))

    def holding(self, store: str, ids: Sequence[str]) -> Result[set[str], DomainError]:
        """Which of the ids have parts, as of the feed's latest record (what `memory status` checks)."""
        if not ids:
            return Success(set())
        return self._read(store, lambda: self.local.holding(store, ids))

    def similarities(self, store: str, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        if not ids:
            return Success({})
        return self._read(store, lambda: self.local.similarities(store, embedding, ids), again=False)

    def nearest_parts(
        self, store: str, embedding: Vector, ids: Sequence[str]
    ) -> Result[dict[str, tuple[int, float]], DomainError]:
        if not ids:
            return Success({})
        return self._read(store, lambda: self.local.nearest_parts(store, embedding, ids), again=False)
