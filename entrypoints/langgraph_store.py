"""Deprecated (an unreleased path): the LangGraph store is `agent_memory.langgraph` now; this alias warns and will go."""

from __future__ import annotations

import warnings

from agent_memory.langgraph import *  # noqa: F403
from agent_memory.langgraph import __all__ as __all__

warnings.warn(
    "agent_memory.entrypoints.langgraph_store is deprecated: import MemoryStore from agent_memory.langgraph "
    "(or agent_memory) instead.",
    DeprecationWarning,
    stacklevel=2,
)
