"""agent-memory's public API for other apps: build the service from settings and call its use cases.

Names resolve lazily (PEP 562), so `import agent_memory` costs nothing until a name is used, and the
`memory` command, which lives in `agent_memory.entrypoints`, never pays for the names it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory._version import __version__

if TYPE_CHECKING:
    from agent_memory.domain.commands import (
        CreateCategory,
        CreateMemories,
        CreateMemory,
        CreateStore,
        DeleteCategory,
        DeleteMemory,
        DescribeCategory,
        ExportMemories,
        GetMemory,
        ImportMemories,
        ListMemories,
        ListStores,
        MoveMemory,
        PruneMemories,
        RecentMemories,
        ReindexStore,
        ReinforceMemory,
        RemoveMemory,
        RestoreMemory,
        SearchMemories,
        StoreStatus,
        UpdateMemory,
    )
    from agent_memory.domain.dispatch import dispatch
    from agent_memory.domain.errors import DomainError, ErrorCode
    from agent_memory.domain.model import DecayPolicy, Memory, ScoredMemory
    from agent_memory.domain.service import MemoryService, SearchPolicy
    from agent_memory.domain.views import MemoryView, SearchResults
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import Settings, load_settings
    from agent_memory.langgraph import MemoryStore
    from agent_memory.tools import (
        MemoryTool,
        MemoryToolError,
        create_manage_memory_tool,
        create_search_memory_tool,
        to_langchain_tools,
    )

# public name -> the module that defines it
_EXPORTS = {
    "CreateMemories": "agent_memory.domain.commands",
    "ExportMemories": "agent_memory.domain.commands",
    "ImportMemories": "agent_memory.domain.commands",
    "CreateCategory": "agent_memory.domain.commands",
    "CreateStore": "agent_memory.domain.commands",
    "DeleteCategory": "agent_memory.domain.commands",
    "DeleteMemory": "agent_memory.domain.commands",
    "DescribeCategory": "agent_memory.domain.commands",
    "GetMemory": "agent_memory.domain.commands",
    "ListMemories": "agent_memory.domain.commands",
    "ListStores": "agent_memory.domain.commands",
    "MoveMemory": "agent_memory.domain.commands",
    "PruneMemories": "agent_memory.domain.commands",
    "RecentMemories": "agent_memory.domain.commands",
    "ReindexStore": "agent_memory.domain.commands",
    "ReinforceMemory": "agent_memory.domain.commands",
    "RemoveMemory": "agent_memory.domain.commands",
    "RestoreMemory": "agent_memory.domain.commands",
    "StoreStatus": "agent_memory.domain.commands",
    "CreateMemory": "agent_memory.domain.commands",
    "dispatch": "agent_memory.domain.dispatch",
    "SearchMemories": "agent_memory.domain.commands",
    "UpdateMemory": "agent_memory.domain.commands",
    "DomainError": "agent_memory.domain.errors",
    "ErrorCode": "agent_memory.domain.errors",
    "DecayPolicy": "agent_memory.domain.model",
    "Memory": "agent_memory.domain.model",
    "ScoredMemory": "agent_memory.domain.model",
    "MemoryService": "agent_memory.domain.service",
    "SearchPolicy": "agent_memory.domain.service",
    "MemoryView": "agent_memory.domain.views",
    "SearchResults": "agent_memory.domain.views",
    "build_service": "agent_memory.entrypoints.bootstrap",
    "Settings": "agent_memory.entrypoints.settings",
    "load_settings": "agent_memory.entrypoints.settings",
    "MemoryTool": "agent_memory.tools",
    "MemoryToolError": "agent_memory.tools",
    "create_manage_memory_tool": "agent_memory.tools",
    "create_search_memory_tool": "agent_memory.tools",
    "to_langchain_tools": "agent_memory.tools",
    "MemoryStore": "agent_memory.langgraph",
}

__all__ = [
    "CreateCategory",
    "CreateMemories",
    "CreateMemory",
    "CreateStore",
    "DecayPolicy",
    "DeleteCategory",
    "DeleteMemory",
    "DescribeCategory",
    "DomainError",
    "ErrorCode",
    "ExportMemories",
    "GetMemory",
    "ImportMemories",
    "ListMemories",
    "ListStores",
    "Memory",
    "MemoryService",
    "MemoryStore",
    "MemoryTool",
    "MemoryToolError",
    "MemoryView",
    "MoveMemory",
    "PruneMemories",
    "RecentMemories",
    "ReindexStore",
    "ReinforceMemory",
    "RemoveMemory",
    "RestoreMemory",
    "ScoredMemory",
    "SearchMemories",
    "SearchPolicy",
    "SearchResults",
    "Settings",
    "StoreStatus",
    "UpdateMemory",
    "__version__",
    "build_service",
    "create_manage_memory_tool",
    "create_search_memory_tool",
    "dispatch",
    "load_settings",
    "to_langchain_tools",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
