"""The LangGraph door: a `BaseStore` over the service, so LangGraph and LangMem keep their tools and gain its backends.

Imported only when used (the `langgraph` extra, which installs langgraph-checkpoint): nothing here loads with
agent_memory. How an item is kept:

- its namespace tuple is the memory's namespace, so tenancy, listing and search scopes are the product's own;
- its key names a memory path `langgraph/<key as a slug>-<digest>`, the digest being a hash of namespace and
  key: the path is stable (a put over an existing key updates that memory, keeping its created_at), never
  collides between keys that slug alike ("A b" and "a-b"), and is readable in `memory list langgraph` and as
  the files backend's markdown file name;
- its value is the memory's content, as the JSON text `{"key": …, "value": {…}}`: content is the one field
  that holds arbitrary structure (up to 100,000 characters; the other fields are short labels), it is what
  hybrid search embeds and indexes, so a query finds an item by what its value says, and it gives the
  value back exactly as JSON has it (the key rides along because a digest cannot be read back).

Search with a query is the service's hybrid search over the namespace prefix; without one it lists the
prefix, newest update first. A filter is matched on the value as LangGraph's own stores match it (equality,
nested dicts, $eq $ne $gt $gte $lt $lte). Operations of a batch run in order, after all have been checked,
so a batch with a bad operation changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from returns.result import Failure

from agent_memory.domain.commands import (
    CreateMemory,
    GetMemory,
    ListMemories,
    RemoveMemory,
    SearchMemories,
    UpdateMemory,
)
from agent_memory.domain.dispatch import dispatch
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import MAX_CONTENT_CHARS, Memory, check_namespace, check_store_name, parse_decay_policy
from agent_memory.domain.paths import normalise_segment
from agent_memory.domain.searching import MAX_SEARCH_LIMIT
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.extras import missing_extra
from agent_memory.entrypoints.tool_errors import invalid, succeeded

try:
    from langgraph.store.base import (
        BaseStore,
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
    from langgraph.store.base import Result as OpResult
except ImportError as missing:  # say which extra to install, not just which module is missing
    absent = missing_extra("langgraph", "agent_memory's LangGraph store")
    raise ImportError(absent.message if absent is not None else str(missing)) from missing

__all__ = ["CATEGORY", "MemoryStore", "item_path"]

CATEGORY = "langgraph"  # the root category every item's path sits in
SOURCE = "langgraph"  # the memories' source field: where they came from
_SLUG_CHARS = 48  # of the key, in the path (the digest makes it unique)
_UPSERT_ROUNDS = 64  # create/update turns a put takes while other writers create and delete its key
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def item_path(namespace: Sequence[str], key: str, *, category: str = CATEGORY) -> str:
    """The memory path of one item: the category, the key as a slug, a digest of namespace and key."""
    digest = hashlib.sha256(json.dumps([list(namespace), key], ensure_ascii=False).encode()).hexdigest()[:32]
    slug = normalise_segment(key)[:_SLUG_CHARS].strip("-")
    return f"{category}/{slug}-{digest}" if slug else f"{category}/{digest}"


class MemoryStore(BaseStore):
    """LangGraph's BaseStore over a MemoryService: any backend (Chroma, Qdrant, files), hybrid search, decay.

    `MemoryStore(service)` uses a ready service; `MemoryStore.from_settings()` builds one from the settings
    (config file, environment, `flags`) as the CLI and servers do. `store` picks the product's store
    (default: the configured one), `decay_policy` the decay of new items (stable: they never fade).
    """

    supports_ttl = False
    __slots__ = ("_category", "_decay_policy", "_service", "_store")

    def __init__(
        self,
        service: MemoryService,
        *,
        store: str | None = None,
        decay_policy: str = "stable",
        category: str = CATEGORY,
    ) -> None:
        if not isinstance(service, MemoryService):
            raise TypeError(f"MemoryStore needs a MemoryService, got {type(service).__name__}.")
        try:
            self._store = None if store is None else check_store_name(store)
            self._decay_policy = parse_decay_policy(decay_policy).value
        except InvalidValue as error:
            raise invalid(error.message) from None
        if normalise_segment(category) != category or not category:
            raise invalid(f"category must be one path segment (letters, digits, '-'), got {category!r}.")
        self._service, self._category = service, category

    @classmethod
    def from_settings(
        cls,
        flags: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        store: str | None = None,
        decay_policy: str = "stable",
    ) -> MemoryStore:
        """A store over the service the composition root builds from the settings (as every door does)."""
        from agent_memory.entrypoints.bootstrap import build_service
        from agent_memory.entrypoints.settings import load_settings

        service = succeeded(load_settings(flags, env).bind(build_service))
        return cls(service, store=store, decay_policy=decay_policy)

    @property
    def service(self) -> MemoryService:
        return self._service

    # --- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[OpResult]:
        """Run the operations in order and return their results; every one is checked before any runs."""
        checked = list(ops)
        for op in checked:
            _check_op(op)
        return [self._run(op) for op in checked]

    async def abatch(self, ops: Iterable[Op]) -> list[OpResult]:
        """batch, in a worker thread: the service's backends block."""
        checked = list(ops)
        return await asyncio.to_thread(self.batch, checked)

    def _run(self, op: Op) -> OpResult:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._namespaces(op)

    # --- get / put --------------------------------------------------------------------------------

    def _load(self, namespace: tuple[str, ...], key: str) -> Item | None:
        path = item_path(namespace, key, category=self._category)
        found = dispatch(self._service, GetMemory(ref=path, store=self._store, namespace=namespace))
        if isinstance(found, Failure) and _absent_code(found.failure()):
            return None
        memory: Memory = succeeded(found).memory
        decoded = self._decoded(memory, namespace)
        return None if decoded is None or decoded[0] != key else _item(memory, *decoded)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        return self._load(namespace, key)

    def _decoded(self, memory: Memory, namespace: tuple[str, ...] | None) -> tuple[str, dict[str, Any]] | None:
        """(key, value) of a memory this store wrote (in `namespace` exactly, when given); None for any other."""
        decoded = _key_and_value(memory)
        if decoded is None or (namespace is not None and memory.namespace != namespace):
            return None
        if str(memory.path) != item_path(memory.namespace, decoded[0], category=self._category):
            return None
        return decoded

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        path = item_path(namespace, key, category=self._category)
        if op.value is None:
            if self._load(namespace, key) is not None:
                gone = dispatch(self._service, RemoveMemory(ref=path, store=self._store, namespace=namespace))
                if not (isinstance(gone, Failure) and _absent_code(gone.failure())):
                    succeeded(gone)
            return
        content = _encoded(key, op.value)
        exists = self._load(namespace, key) is not None
        for _ in range(_UPSERT_ROUNDS):
            if not exists:
                created = dispatch(
                    self._service,
                    CreateMemory(
                        content=content,
                        namespace=namespace,
                        path=path,
                        store=self._store,
                        source=SOURCE,
                        decay_policy=self._decay_policy,
                    ),
                )
                if not (isinstance(created, Failure) and created.failure().code is ErrorCode.DESTINATION_EXISTS):
                    succeeded(created)
                    return
                # another writer created it since we looked: theirs is updated over, as a put does
            command = UpdateMemory(
                ref=path, store=self._store, namespace=namespace, content=content, include_expired=True
            )
            updated = dispatch(self._service, command)
            if not (isinstance(updated, Failure) and _absent_code(updated.failure())):
                succeeded(updated)
                return
            exists = False  # a concurrent delete won since we looked: the put creates it again
        raise invalid(f"The item {key!r} kept being created and deleted by other writers; put it again.")

    # --- search -----------------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit == 0:
            return []
        if op.query:
            return self._ranked(op, prefix)
        listed = self._listed(prefix)
        matching = [(memory, kv) for memory, kv in listed if _matches(kv[1], op.filter)]
        matching.sort(key=lambda pair: (-pair[0].updated_at.timestamp(), pair[1][0]))
        page = matching[op.offset : op.offset + op.limit]
        return [_search_item(memory, key, value, None) for memory, (key, value) in page]

    def _listed(self, prefix: tuple[str, ...]) -> list[tuple[Memory, tuple[str, dict[str, Any]]]]:
        """Every item under the namespace prefix (in the product's namespaces below it too)."""
        listed = ListMemories(category=self._category, store=self._store, namespace=prefix or None)
        listing = dispatch(self._service, listed)
        if isinstance(listing, Failure) and _absent_code(listing.failure()):
            return []
        found = []
        for view in succeeded(listing).memories:
            decoded = self._decoded(view.memory, None)
            if decoded is not None:
                found.append((view.memory, decoded))
        return found

    def _ranked(self, op: SearchOp, prefix: tuple[str, ...]) -> list[SearchItem]:
        """Hybrid search, asking for more hits while the filter leaves fewer than the page needs."""
        window = op.offset + op.limit
        want = window if not op.filter else min(max(window * 4, 40), MAX_SEARCH_LIMIT)
        while True:
            command = SearchMemories(
                query=op.query or "",
                namespace=prefix or None,
                path_prefix=self._category,
                store=self._store,
                limit=want,
                mode="hybrid",
            )
            searched = dispatch(self._service, command)
            if isinstance(searched, Failure) and _absent_code(searched.failure()):
                return []
            results = succeeded(searched)
            hits = []
            for hit in results.results:
                decoded = self._decoded(hit.memory, None)
                if decoded is not None and _matches(decoded[1], op.filter):
                    hits.append(_search_item(hit.memory, *decoded, hit.score))
            if len(hits) >= window or not results.has_more or want >= MAX_SEARCH_LIMIT:
                return hits[op.offset : window]
            want = min(want * 4, MAX_SEARCH_LIMIT)

    # --- list namespaces ----------------------------------------------------------------------------

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        pushdown: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = []
                for label in condition.path:
                    if label == "*":
                        break
                    fixed.append(label)
                pushdown = max(pushdown, tuple(fixed), key=len)
        namespaces = {memory.namespace for memory, _ in self._listed(pushdown)}
        chosen = [ns for ns in namespaces if all(_namespace_matches(condition, ns) for condition in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]


# --- checks: every operation before any runs -------------------------------------------------------


def _check_op(op: object) -> None:
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


def _check_put(op: PutOp) -> None:
    _check_namespace(op.namespace, "namespace")
    if op.namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {tuple(op.namespace)}')
    _check_key(op.key)
    if getattr(op, "ttl", None) is not None:
        raise NotImplementedError("TTL is not supported by MemoryStore: put without ttl (expiry is the product's).")
    if op.value is not None:
        _encoded(op.key, op.value)


def _check_namespace(namespace: object, what: str, *, empty_ok: bool = False) -> None:
    """LangGraph's label rules (no '.', non-empty strings) and the product's (no '/', bounded size)."""
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
        check_namespace(tuple(namespace))
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
            unknown = [name for name in wanted if name not in _OPERATORS]
            if unknown:
                raise invalid(
                    f"Unknown filter operator {unknown[0]!r} on {field!r}: use one of {', '.join(_OPERATORS)}."
                )


# --- values in and out ----------------------------------------------------------------------------------


def _encoded(key: str, value: object) -> str:
    """The content an item is kept as; a value that is not a JSON object with string keys is refused."""
    if not isinstance(value, Mapping):
        raise invalid(f"An item's value must be a dict, got {type(value).__name__}.")
    if not all(isinstance(name, str) for name in value):
        raise invalid("An item's value must have string keys (it is kept as JSON).")
    try:
        content = json.dumps({"key": key, "value": dict(value)}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise invalid(f"An item's value must be JSON-serialisable: {error}.") from None
    if len(content) > MAX_CONTENT_CHARS:
        raise invalid(
            f"An item is kept as {len(content)} characters of JSON; the limit is {MAX_CONTENT_CHARS}: split the value."
        )
    return content


def _key_and_value(memory: Memory) -> tuple[str, dict[str, Any]] | None:
    """The (key, value) a memory's content holds when this store wrote it; None for any other memory."""
    if memory.source != SOURCE or memory.path is None:
        return None
    try:
        envelope = json.loads(memory.content)
    except ValueError:
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("key"), str):
        return None
    value = envelope.get("value")
    if not isinstance(value, dict):
        return None
    return envelope["key"], value


def _item(memory: Memory, key: str, value: dict[str, Any]) -> Item:
    return Item(
        value=value, key=key, namespace=memory.namespace, created_at=memory.created_at, updated_at=memory.updated_at
    )


def _search_item(memory: Memory, key: str, value: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=memory.namespace,
        key=key,
        value=value,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score,
    )


def _absent_code(error: DomainError) -> bool:
    """Nothing there to read: no such memory or item yet, or the named store was never written to."""
    return error.code in (
        ErrorCode.MEMORY_NOT_FOUND,
        ErrorCode.MEMORY_EXPIRED,
        ErrorCode.CATEGORY_NOT_FOUND,
        ErrorCode.STORE_NOT_FOUND,
    )


# --- filters and namespace matching, as LangGraph's own stores do them ------------------------------------


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    return not wanted or all(_compare(value.get(field), expected) for field, expected in wanted.items())


def _compare(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        if any(str(name).startswith("$") for name in expected):
            return all(_operator(actual, name, operand) for name, operand in expected.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(_compare(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _operator(actual: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(actual == operand)
    if name == "$ne":
        return bool(actual != operand)
    left, right = _number(actual), _number(operand)
    if left is None or right is None:
        return False  # a missing or non-numeric field never satisfies an order comparison
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[name]


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        number = float(raw)
    except ValueError:
        return None
    return None if math.isnan(number) else number


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(wanted in ("*", actual) for actual, wanted in pairs)
