"""agent-memory's public API for other apps: build the service from settings and call its use cases.

Names resolve lazily (PEP 562), so `import agent_memory` costs nothing until a name is used, and the
`memory` command, which lives in `agent_memory.entrypoints`, never pays for the names it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent_memory._version import __version__

if TYPE_CHECKING:
    from agent_memory.domain.commands import CreateMemory, SearchMemories, UpdateMemory
    from agent_memory.domain.errors import DomainError, ErrorCode
    from agent_memory.domain.model import DecayPolicy, Memory, ScoredMemory
    from agent_memory.domain.service import MemoryService, SearchPolicy
    from agent_memory.domain.views import MemoryView, SearchResults
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.settings import Settings, load_settings

# public name -> the module that defines it
_EXPORTS = {
    "CreateMemory": "agent_memory.domain.commands",
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
}

__all__ = [
    "CreateMemory",
    "DecayPolicy",
    "DomainError",
    "ErrorCode",
    "Memory",
    "MemoryService",
    "MemoryView",
    "ScoredMemory",
    "SearchMemories",
    "SearchPolicy",
    "SearchResults",
    "Settings",
    "UpdateMemory",
    "__version__",
    "build_service",
    "load_settings",
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
