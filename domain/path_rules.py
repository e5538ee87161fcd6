"""One live memory per path and namespace: the check a write makes before it puts memories at their paths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from returns.iterables import Fold
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import VectorStore

_PATH_SCANS = 8  # above this many paths in one batch, one scan of the store beats a scan per path

Place = tuple[tuple[str, ...], MemoryPath]  # paths are unique per namespace: (namespace, path)


def paths_free(store: VectorStore, memories: Sequence[Memory]) -> Result[VectorStore, DomainError]:
    """DESTINATION_EXISTS unless every live memory of the batch has a path no other live memory of its
    namespace holds (paths are unique per namespace: tenants never learn of each other's paths).

    A batch may replace memories by id (import): a path held by one of the batch's own ids is free.
    """
    placed = [m for m in memories if m.path is not None and not m.deleted]
    if not placed:
        return Success(store)
    owners: dict[Place, str] = {}
    for memory in placed:
        assert memory.path is not None  # for the type checker: filtered above
        if owners.setdefault((memory.namespace, memory.path), memory.id) != memory.id:
            return Failure(_taken(memory.path, "the batch holds two memories"))
    ids = {m.id for m in memories}
    # a few paths: one exact scan each; many: one scan of the store's live memories
    scans = (
        [store.scan(MemoryFilter(path=path, namespace=namespace)) for namespace, path in owners]
        if len(owners) <= _PATH_SCANS
        else [store.scan(MemoryFilter())]
    )
    return Fold.collect(scans, Success(())).bind(lambda found: _none_taken(found, owners, ids)).map(lambda _: store)


def _none_taken(
    found: Sequence[Sequence[Memory]], owners: Mapping[Place, str], ids: set[str]
) -> Result[None, DomainError]:
    for other in (memory for group in found for memory in group):
        if other.path is not None and (other.namespace, other.path) in owners and other.id not in ids:
            return Failure(_taken(other.path, "a memory is already there"))
    return Success(None)


def _taken(path: MemoryPath, why: str) -> DomainError:
    return DomainError(
        ErrorCode.DESTINATION_EXISTS,
        f"Path '{path}' is taken ({why}): update that memory, or choose another path.",
        path=str(path),
    )
