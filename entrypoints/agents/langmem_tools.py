"""The agent-tool door (spec 003): manage_memory and search_memory factories, namespaced per call."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from returns.result import Failure

from agent_memory.domain.model import Memory
from agent_memory.domain.namespaces import ConfigurationError, resolve_namespace
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.base_store_tools import (
    check_store,
    graph_store,
    manage_in_store,
    search_in_store,
    structured_content,
)
from agent_memory.entrypoints.agents.descriptions import (
    default_action,
    manage_description,
    manage_schema,
    search_schema,
)
from agent_memory.entrypoints.agents.memory_tool import MemoryTool
from agent_memory.entrypoints.tooling.calls import ACTIONS, check_action, check_window, run_manage, run_search
from agent_memory.entrypoints.tooling.items import CATEGORY
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError, error_text

__all__ = [
    "ACTIONS",
    "ConfigurationError",
    "MemoryTool",
    "MemoryToolError",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "error_text",
    "run_manage",
    "run_search",
    "to_langchain_tools",
]

RESPONSE_FORMATS = ("content", "content_and_artifact")


# --- the tool objects ----------------------------------------------------------------------------


def run_config(config: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The config given, else the one of the langchain-core run this call is inside (LangGraph's get_config()).

    Read from langchain-core's context variable only when langchain-core is already loaded: the
    tools never import it themselves, so plain use costs nothing.
    """
    if config is not None:
        return config
    module = sys.modules.get("langchain_core.runnables.config")
    current = getattr(module, "var_child_runnable_config", None)
    ambient = current.get() if current is not None else None
    if not isinstance(ambient, Mapping):
        return None
    return {"configurable": dict(ambient.get("configurable") or {})}  # not its callbacks, tags, metadata


async def _in_worker_thread(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Runs a blocking tool call off the event loop; the context (and so the run's config) goes along."""
    return await asyncio.to_thread(func, *args, **kwargs)


class _Services:
    """The service the tools use: the one given, or one built from the settings on first use."""

    _shared: MemoryService | None = None
    _lock = threading.Lock()

    def __init__(self, service: MemoryService | None) -> None:
        self._service = service

    @property
    def given(self) -> MemoryService | None:
        return self._service

    def get(self) -> MemoryService:
        if self._service is not None:
            return self._service
        with _Services._lock:
            if _Services._shared is None:
                _Services._shared = _build_default_service()
            return _Services._shared


def _target(services: _Services, store: Any) -> tuple[Any, Any, str | None, str]:
    """What a call runs on: (the service, None, its store name, its items' category) or (None, a LangGraph
    BaseStore, None, …). A MemoryStore is its service (its items are memories, decision 25); without a store or
    service, a call inside a LangGraph run takes the graph's."""
    chosen = store if store is not None else (graph_store() if services.given is None else None)
    if chosen is None or isinstance(chosen, str):
        return services.get(), None, chosen, CATEGORY
    own = getattr(chosen, "service", None)
    if isinstance(own, MemoryService):  # a MemoryStore: the product itself, with its search and filters
        return own, None, getattr(chosen, "store_name", None), getattr(chosen, "category", CATEGORY)
    return None, chosen, None, CATEGORY


def _build_default_service() -> MemoryService:
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import load_settings

    built = load_settings().bind(build_service)
    if isinstance(built, Failure):
        raise ConfigurationError(f"Cannot build the memory service from the settings: {error_text(built.failure())}")
    return built.unwrap()


def create_manage_memory_tool(
    namespace: tuple[str, ...] | str | None = None,
    *,
    instructions: str = "",
    actions_permitted: Sequence[str] = ACTIONS,
    service: MemoryService | None = None,
    store: Any = None,
    name: str = "manage_memory",
    schema: Any = str,
) -> MemoryTool:
    """A tool to create, update and delete memories in a namespace resolved from each call's config.

    `namespace` is a template like ("{user_id}", "memories"); without one, config["user_id"] gives
    ("user", id) and config["org_id"] + config["agent_id"] give ("org", org, agent) (decision 18).
    Delete is the soft delete of spec 001 (decision 13): the memory never surfaces again but stays stored.
    `schema` (LangMem's option): a pydantic model or any type pydantic validates; content is checked
    against it (a dict, an instance or JSON text) and stored as JSON. The default, str, stores text.
    `store`: a store name of this product, or a LangGraph BaseStore (agent_tool_stores.py); without
    store or service, a call inside a LangGraph run uses the graph's store, as LangMem does.
    """
    permitted = tuple(actions_permitted)
    if not permitted:
        raise ValueError("actions_permitted is empty: permit at least one of create, update, delete.")
    unknown = [a for a in permitted if a not in ACTIONS]
    if unknown:
        raise ValueError(f"Unknown action(s) {', '.join(map(repr, unknown))} in actions_permitted: use {ACTIONS}.")
    services = _Services(service)
    check_store(store)

    def manage_memory(
        content: Any = None,
        action: str | None = None,
        *,
        id: str | None = None,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        config: Mapping[str, Any] | None = None,
        on_duplicate: str | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        chosen = default_action(permitted) if action is None else action  # LangMem's default: create
        check_action(chosen, permitted)
        resolved = resolve_namespace(namespace, run_config(config))
        target, base_store, store_name, category = _target(services, store)
        if base_store is not None:
            value = content if schema is str or content is None else json.loads(structured_content(schema, content))
            return manage_in_store(base_store, resolved, content=value, action=chosen, id=id)[0]
        return run_manage(
            target,
            resolved,
            content=content if schema is str or content is None else structured_content(schema, content),
            action=chosen,
            id=id,
            store=store_name,
            permitted=permitted,
            type=type,
            tags=tags,
            structured=schema is not str,
            category=category,
            on_duplicate=on_duplicate,
            idempotency_key=idempotency_key,
        )

    async def amanage_memory(
        content: Any = None,
        action: str | None = None,
        *,
        id: str | None = None,
        type: str | None = None,
        tags: Sequence[str] | None = None,
        config: Mapping[str, Any] | None = None,
        on_duplicate: str | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        arguments = {"id": id, "type": type, "tags": tags, "config": run_config(config), "on_duplicate": on_duplicate}
        arguments["idempotency_key"] = idempotency_key
        answer: str = await _in_worker_thread(manage_memory, content, action, **arguments)
        return answer

    return MemoryTool(
        name,
        manage_description(permitted, instructions),
        manage_schema(permitted),
        manage_memory,
        amanage_memory,
        partial(_typed_schema, "manage", permitted, schema),
    )


def _typed_schema(kind: str, permitted: tuple[str, ...] = (), content_type: Any = str) -> type[Any]:
    from agent_memory.entrypoints.agents.langchain import manage_arguments, search_arguments

    return manage_arguments(permitted, content_type) if kind == "manage" else search_arguments()


def create_search_memory_tool(
    namespace: tuple[str, ...] | str | None = None,
    *,
    instructions: str = "",
    response_format: str = "content",
    service: MemoryService | None = None,
    store: Any = None,
    name: str = "search_memory",
) -> MemoryTool:
    """A tool to search memories (hybrid where the service offers it) in the namespace and those below it.

    Returns a JSON list of {namespace, id, content, metadata, created_at, updated_at, score, key, value}; with
    response_format="content_and_artifact", the tuple (that JSON, the list of domain Memory objects).
    """
    if response_format not in RESPONSE_FORMATS:
        raise ValueError(f"Unknown response_format {response_format!r}: use one of {', '.join(RESPONSE_FORMATS)}.")
    services = _Services(service)
    check_store(store)

    def search_memory(
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str | tuple[str, list[Memory]]:
        resolved = resolve_namespace(namespace, run_config(config))
        target, base_store, store_name, category = _target(services, store)
        if base_store is not None:
            check_window(limit, offset)
            found: tuple[str, list[Any]] = search_in_store(
                base_store, resolved, query=query, limit=limit, offset=offset, filter=filter
            )
        else:
            found = run_search(
                target,
                resolved,
                query=query,
                limit=limit,
                offset=offset,
                filter=filter,
                store=store_name,
                category=category,
            )
        return found if response_format == "content_and_artifact" else found[0]

    # custom instructions replace the default guidance on when to call the tool (as in LangMem)
    when = instructions or (
        "Call it to recall user preferences, facts and context from earlier conversations before answering."
    )
    description = (
        f"Search your long-term memories by meaning and keywords. {when}\nReturns a JSON list of memories "
        "with namespace, id, content, metadata, created_at, updated_at and score (higher is better)."
    )

    async def asearch_memory(
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        filter: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str | tuple[str, list[Memory]]:
        arguments = {"limit": limit, "offset": offset, "filter": filter, "config": run_config(config)}
        answer: str | tuple[str, list[Memory]] = await _in_worker_thread(search_memory, query, **arguments)
        return answer

    return MemoryTool(
        name,
        description,
        search_schema(),
        search_memory,
        asearch_memory,
        partial(_typed_schema, "search"),
        response_format,
    )


# --- LangChain -----------------------------------------------------------------------------------


def to_langchain_tools(*tools: MemoryTool) -> list[Any]:
    """The tools as langchain_core StructuredTools with typed (pydantic) arguments and a native coroutine.

    A call the model can correct (an unknown argument, a wrong type, an action not permitted, a
    refused update) comes back as a ToolMessage with status="error" saying what to change; a missing
    tenant key in the config (ConfigurationError) still stops the run.
    """
    from agent_memory.entrypoints.extras import missing_extra

    absent = missing_extra("langchain", "to_langchain_tools")
    if absent is not None:
        raise ImportError(absent.message)
    from agent_memory.entrypoints.agents.langchain import structured_tool

    return [structured_tool(tool) for tool in tools]
