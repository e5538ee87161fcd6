"""The agent tools over a LangGraph `BaseStore` (given, or the graph's own): LangMem's semantics on any store.

`create_manage_memory_tool(store=some_base_store)`, or no store inside a LangGraph run that has one
(`langgraph.config.get_store()`), keeps memories as LangMem does: an item per memory, its key a new UUID, its
value `{"content": …}`; update is a put (an unknown id is created), delete removes (an unknown id is a no-op).
A `MemoryStore` given as the store is the product itself: the tools then use its service, as with `service=`.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping
from typing import Any

from agent_memory.entrypoints.tooling.tool_errors import invalid


def is_base_store(store: object) -> bool:
    """Whether `store` is a LangGraph BaseStore (checked without importing langgraph when it is not loaded)."""
    module = sys.modules.get("langgraph.store.base")
    base = getattr(module, "BaseStore", None)
    return base is not None and isinstance(store, base)


def graph_store() -> Any:
    """The store of the LangGraph run this call is inside (`get_store()`), or None outside one."""
    module = sys.modules.get("langgraph.config")
    get_store = getattr(module, "get_store", None)
    if get_store is None:
        return None
    try:
        return get_store()
    except RuntimeError:  # not inside a runnable context
        return None


def manage_in_store(
    store: Any, namespace: tuple[str, ...], *, content: Any, action: str, id: str | None
) -> tuple[str, str]:
    """(the sentence, the key) of a create, update or delete of one item, as LangMem does it on a BaseStore."""
    if action == "create":
        if id is not None:
            raise invalid(f"create makes a new memory and takes no id (got {id}): omit id, or use action='update'.")
        if content is None:
            raise invalid("create needs content: the text of the memory to store.")
        key = str(uuid.uuid4())
        store.put(namespace, key, {"content": content})
        return f"created memory {key}", key
    if id is None or not str(id).strip():
        raise invalid(f"{action} needs the id of the memory (as returned by create or search_memory).")
    key = str(id).strip()
    if action == "update":
        if content is None:
            raise invalid("update needs content: the full new text of the memory.")
        store.put(namespace, key, {"content": content})
        return f"updated memory {key}", key
    store.delete(namespace, key)
    return f"Deleted memory {key}", key


def search_in_store(
    store: Any,
    namespace: tuple[str, ...],
    *,
    query: str,
    limit: int,
    offset: int,
    filter: Mapping[str, Any] | None,
) -> tuple[str, list[Any]]:
    """(JSON list of items as LangMem shows them, the SearchItems) of a search of a BaseStore."""
    items = store.search(namespace, query=query, filter=dict(filter) if filter else None, limit=limit, offset=offset)
    shown = [item.dict() for item in items]
    return json.dumps(shown, ensure_ascii=False, default=str), list(items)


def check_store(store: object) -> None:
    if store is not None and not isinstance(store, str) and not is_base_store(store):
        raise TypeError(f"store must be a store name or a LangGraph BaseStore, got {type(store).__name__}.")


def structured_content(schema: Any, content: Any) -> str:
    """Content validated against `schema` (a dict, an instance or JSON text), as the JSON text that is stored."""
    from pydantic import TypeAdapter, ValidationError  # pydantic comes with the mcp dependency

    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    try:
        value = adapter.validate_json(content) if isinstance(content, str) else adapter.validate_python(content)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'content'}: {e['msg']}" for e in error.errors())
        raise invalid(f"content does not match {getattr(schema, '__name__', schema)}: {problems}.") from None
    return json.dumps(adapter.dump_python(value, mode="json"), ensure_ascii=False)


__all__ = [
    "check_store",
    "graph_store",
    "is_base_store",
    "manage_in_store",
    "search_in_store",
    "structured_content",
]
