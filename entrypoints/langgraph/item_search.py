"""The LangGraph store's reads of many items: search (hybrid, by the index's cosine, or a listing) and namespaces.

Search with a query is the service's hybrid search over the namespace prefix, or, with LangGraph's index
configured, the cosine of the query's embedding against the fields it embeds; without a query it lists the
prefix, newest update first. A filter is matched on the value as LangGraph's own stores match it (equality, nested
dicts, $eq $ne $gt $gte $lt $lte). Listing namespaces lists the items under the op's prefix and keeps their
namespaces (value_filters.py chooses among them).
"""

from __future__ import annotations

from typing import Any, Protocol

from langgraph.store.base import IndexConfig, ListNamespacesOp, SearchItem, SearchOp, TTLConfig
from returns.result import Failure

from agent_memory.domain.commands import ListMemories, SearchMemories
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.model import Memory
from agent_memory.entrypoints.langgraph.index import VectorCache
from agent_memory.entrypoints.langgraph.labels import to_product
from agent_memory.entrypoints.langgraph.ops import absent_code, cosine_ranked, hybrid_ranked, search_item
from agent_memory.entrypoints.langgraph.ttl import renewed
from agent_memory.entrypoints.langgraph.value_filters import chosen_namespaces, matches, prefix_pushdown
from agent_memory.entrypoints.langgraph.writes import ItemStore
from agent_memory.entrypoints.tooling.tool_errors import succeeded

Listed = list[tuple[Memory, tuple[str, dict[str, Any]]]]  # each memory with its item's (key, value)


class SearchedStore(ItemStore, Protocol):
    """What a search reads of the LangGraph store (store.py's MemoryStore) beyond what its writes read."""

    index_config: IndexConfig | None
    ttl_config: TTLConfig | None

    @property
    def vectors(self) -> VectorCache | None: ...

    def _decoded(self, memory: Memory, namespace: tuple[str, ...] | None) -> tuple[str, dict[str, Any]] | None: ...


def searched(store: SearchedStore, op: SearchOp) -> list[SearchItem]:
    """The items a SearchOp finds, best first (newest update first without a query), TTLs renewed when it asks."""
    prefix = tuple(op.namespace_prefix)
    if op.limit == 0:
        return []
    if op.query and store.vectors is not None:
        listed = [(memory, kv) for memory, kv in listed_items(store, prefix) if matches(kv[1], op.filter)]
        return _refreshing(store, op, cosine_ranked(op, listed, store.vectors, store.index_config))
    if op.query:
        return _refreshing(store, op, _ranked(store, op, prefix))
    matching = [(memory, kv) for memory, kv in listed_items(store, prefix) if matches(kv[1], op.filter)]
    matching.sort(key=lambda pair: (-pair[0].updated_at.timestamp(), pair[1][0]))
    page = matching[op.offset : op.offset + op.limit]
    return _refreshing(store, op, [search_item(memory, key, value, None) for memory, (key, value) in page])


def namespaces(store: SearchedStore, op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """The namespaces a ListNamespacesOp asks for, of the items under its prefix."""
    found = {memory.namespace for memory, _ in listed_items(store, prefix_pushdown(op))}
    return chosen_namespaces(op, found)


def listed_items(store: SearchedStore, prefix: tuple[str, ...]) -> Listed:
    """Every item under the namespace prefix (in the product's namespaces below it too): every memory there."""
    listing = dispatch(store.service, ListMemories(store=store.store_name, namespace=prefix or None))
    if isinstance(listing, Failure) and absent_code(listing.failure()):
        return []
    found = []
    for view in succeeded(listing).memories:
        decoded = store._decoded(view.memory, None)
        if decoded is not None:
            found.append((view.memory, decoded))
    return found


def _refreshing(store: SearchedStore, op: SearchOp, hits: list[SearchItem]) -> list[SearchItem]:
    """The hits, their items' TTLs renewed when the search asks it (LangGraph's refresh on read)."""
    if op.refresh_ttl and store.ttl_config is not None:
        held = [store._memory(to_product(hit.namespace), hit.key) for hit in hits]
        renewed(store, [memory for memory in held if memory is not None])
    return hits


def _ranked(store: SearchedStore, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
    def search(limit: int) -> Any:  # LangGraph's stores rank every item of the prefix: no relevance floor
        command = SearchMemories(
            query=op.query or "", namespace=prefix or None, store=store.store_name, limit=limit, min_similarity=0.0
        )
        found = dispatch(store.service, command)
        return None if isinstance(found, Failure) and absent_code(found.failure()) else succeeded(found)

    return hybrid_ranked(op, search, lambda memory: store._decoded(memory, None))
