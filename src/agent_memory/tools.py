"""The agent tools' public home: `from agent_memory.tools import create_manage_memory_tool, to_langchain_tools`."""

from __future__ import annotations

from agent_memory.entrypoints.agents.langmem_tools import (
    ACTIONS,
    ConfigurationError,
    MemoryTool,
    MemoryToolError,
    create_manage_memory_tool,
    create_search_memory_tool,
    error_text,
    run_manage,
    run_search,
    to_langchain_tools,
)

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
