"""The LangGraph store's edges: every operation checked before any runs, and items built from memories.

How an item is kept as a memory is tooling/items.py (the agent tools read items too): an envelope also holds the
put's `index` and `ttl` when it gave them (so a search knows which fields it embeds and a read how long to renew
the expiry by).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
)

from agent_memory.domain.context import is_memory_id
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import Memory, check_memory_id, check_namespace
from agent_memory.domain.search.searching import MAX_SEARCH_LIMIT
from agent_memory.entrypoints.langgraph.index import (
    Fields,
    VectorCache,
    check_index_fields,
    cosine,
    field_texts,
    tokenized,
)
from agent_memory.entrypoints.langgraph.labels import from_product, to_product, to_product_path
from agent_memory.entrypoints.langgraph.value_filters import OPERATORS, matches
from agent_memory.entrypoints.tooling.items import ITEM_SOURCE, encoded, extras_of, readable_key
from agent_memory.entrypoints.tooling.tool_errors import invalid

SOURCE = ITEM_SOURCE  # the memories' source field: where they came from
_MAX_TTL = 60 * 24 * 365 * 100  # minutes: a century


# --- checks: every operation before any runs -------------------------------------------------------


def check_op(op: object) -> None:
    if isinstance(op, GetOp):
        _check_namespace(op.namespace, "namespace")
        _check_key(op.key)
    elif isinstance(op, PutOp):
        _check_put(op)
    elif isinstance(op, SearchOp):
        _check_namespace(op.namespace_prefix, "namespace_prefix", empty_ok=True)
        _check_window(op.limit, op.offset)
        if op.query is not None and not isinstance(op.query, str):
            raise invalid(f"query must be text, got {type(op.query).__name__}.")
        if op.query and op.offset + op.limit > MAX_SEARCH_LIMIT:
            raise invalid(f"limit + offset of a search with a query must be at most {MAX_SEARCH_LIMIT}.")
        _check_filter(op.filter)
    elif isinstance(op, ListNamespacesOp):
        _check_window(op.limit, op.offset)
        if op.max_depth is not None and (not _whole(op.max_depth) or op.max_depth < 1):
            raise invalid(f"max_depth must be a whole number of at least 1, got {op.max_depth!r}.")
        for condition in op.match_conditions or ():
            if not isinstance(condition, MatchCondition) or condition.match_type not in ("prefix", "suffix"):
                raise invalid(f"A match condition is MatchCondition('prefix' or 'suffix', path), got {condition!r}.")
            _check_namespace(tuple(label for label in condition.path if label != "*"), "match path", empty_ok=True)
    else:
        raise invalid(f"Unknown store operation {type(op).__name__}: use GetOp, PutOp, SearchOp or ListNamespacesOp.")


def product_op(op: Op) -> Op:
    """A checked operation with its namespaces as the product keeps them (langgraph/labels.py)."""
    if isinstance(op, GetOp | PutOp):
        return op._replace(namespace=to_product(op.namespace))
    if isinstance(op, SearchOp):
        return op._replace(namespace_prefix=to_product(op.namespace_prefix))
    if isinstance(op, ListNamespacesOp) and op.match_conditions:
        conditions = tuple(c._replace(path=to_product_path(c.path)) for c in op.match_conditions)
        return op._replace(match_conditions=conditions)
    return op


def _check_put(op: PutOp) -> None:
    _check_namespace(op.namespace, "namespace")  # the root "langgraph" is refused by put(), as LangGraph does
    _check_key(op.key)
    ttl = op.ttl
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl < _MAX_TTL):
        raise invalid(f"ttl is minutes, more than 0 and less than {_MAX_TTL}; got {ttl!r}.")
    check_index_fields(op.index)
    if op.value is not None:
        encoded(op.key, op.value, {"index": op.index, "ttl": ttl}, plain=readable_key(op.key))


def _check_namespace(namespace: object, what: str, *, empty_ok: bool = False) -> None:
    """LangGraph's label rules (no '.', non-empty strings), then the product's size bounds on the escaped labels."""
    if not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(f"The {what} must be a tuple of labels, like ('user', 'u-1'); got {namespace!r}.")
    if not namespace and not empty_ok:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} in {tuple(namespace)}: labels are non-empty strings without '.'."
            )
    try:
        check_namespace(to_product(namespace))
    except InvalidValue as error:
        raise InvalidNamespaceError(f"Invalid {what} {tuple(namespace)}: {error.message}") from None


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise invalid(f"An item's key must be a string, got {type(key).__name__}.")


def _whole(number: object) -> bool:
    return isinstance(number, int) and not isinstance(number, bool)


def _check_window(limit: object, offset: object) -> None:
    if not _whole(limit) or limit < 0:  # type: ignore[operator]
        raise invalid(f"limit must be a whole number of at least 0, got {limit!r}.")
    if not _whole(offset) or offset < 0:  # type: ignore[operator]
        raise invalid(f"offset must be a whole number of at least 0, got {offset!r}.")


def _check_filter(raw: object) -> None:
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise invalid(f"filter must be a dict like {{'kind': 'note'}}, got {type(raw).__name__}.")
    for field, wanted in raw.items():
        if isinstance(wanted, Mapping) and any(str(name).startswith("$") for name in wanted):
            unknown = [name for name in wanted if name not in OPERATORS]
            if unknown:
                raise invalid(
                    f"Unknown filter operator {unknown[0]!r} on {field!r}: use one of {', '.join(OPERATORS)}."
                )


# --- values in and out ----------------------------------------------------------------------------------


def checked_ttl(ttl: object) -> Any:
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise invalid(f"ttl must be a TTLConfig dict like {{'default_ttl': 60}}, got {type(ttl).__name__}.")
    default = ttl.get("default_ttl")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int | float) or default <= 0):
        raise invalid(f"default_ttl is minutes, more than 0; got {default!r}.")
    return dict(ttl)


def item_of(memory: Memory, key: str, value: dict[str, Any]) -> Item:
    return Item(
        value=value,
        key=key,
        namespace=from_product(memory.namespace),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )


def search_item(memory: Memory, key: str, value: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=from_product(memory.namespace),
        key=key,
        value=value,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score,
    )


def hybrid_ranked(
    op: SearchOp, search: Callable[[int], Any], decoded: Callable[[Memory], tuple[str, dict[str, Any]] | None]
) -> list[SearchItem]:
    """Hybrid search's hits as items, asking `search` (a limit: its results, None when nothing is stored) for more
    while the filter leaves fewer than the page needs."""
    window = op.offset + op.limit
    want = window if not op.filter else min(max(window * 4, 40), MAX_SEARCH_LIMIT)
    while True:
        results = search(want)
        if results is None:
            return []
        hits = []
        for hit in results.results:
            item = decoded(hit.memory)
            if item is not None and matches(item[1], op.filter):
                hits.append(search_item(hit.memory, *item, hit.score))
        if len(hits) >= window or not results.has_more or want >= MAX_SEARCH_LIMIT:
            return hits[op.offset : window]
        want = min(want * 4, MAX_SEARCH_LIMIT)


def id_key(key: str) -> bool:
    """Whether a key is a memory id as the product writes them (so it may name a memory keyed by its id)."""
    return is_memory_id(key) and check_memory_id(key) == key


def absent_code(error: DomainError) -> bool:
    """Nothing there to read: no such memory or item yet, or the named store was never written to."""
    return error.code in (
        ErrorCode.MEMORY_NOT_FOUND,
        ErrorCode.MEMORY_EXPIRED,
        ErrorCode.CATEGORY_NOT_FOUND,
        ErrorCode.STORE_NOT_FOUND,
    )


__all__ = [
    "SOURCE",
    "absent_code",
    "check_op",
    "checked_ttl",
    "hybrid_ranked",
    "id_key",
    "item_of",
    "product_op",
    "search_item",
]


def cosine_ranked(
    op: SearchOp, listed: list[tuple[Memory, tuple[str, dict[str, Any]]]], vectors: VectorCache, config: Any
) -> list[SearchItem]:
    """LangGraph's vector search over the listed items: each scored by the best cosine of its indexed texts (its
    put's `index`, False: none, else the store's configured fields), unindexed ones last."""
    configured: Fields = (config or {}).get("__tokenized_fields", [])
    texts: dict[int, list[str]] = {}
    for memory, (_key, value) in listed:
        chosen = extras_of(memory).get("index")
        fields = [] if chosen is False else tokenized(chosen) if chosen else configured
        texts[id(memory)] = field_texts(value, fields)
    known = vectors.vectors([text for each in texts.values() for text in each])
    query = vectors.query(op.query or "")
    scored, scoreless = [], []
    for memory, (key, value) in listed:
        mine = texts[id(memory)]
        if not mine:
            scoreless.append(search_item(memory, key, value, None))
            continue
        best = max(cosine(query, known[text]) for text in mine)
        scored.append(search_item(memory, key, value, best))
    scored.sort(key=lambda hit: (-(hit.score or 0.0), hit.key))  # ties by key: the same on every backend
    return [*scored, *scoreless][op.offset : op.offset + op.limit]
