"""The LangGraph store's public home: `from agent_memory.langgraph import MemoryStore` (needs the langgraph extra);
`AsyncMemoryStore` for async code ported from AsyncSqliteStore (its TTL sweep and sweeper are coroutines)."""

from __future__ import annotations

from agent_memory.entrypoints.langgraph.aio import AsyncMemoryStore
from agent_memory.entrypoints.langgraph.store import CATEGORY, MemoryStore, item_path

__all__ = ["CATEGORY", "AsyncMemoryStore", "MemoryStore", "item_path"]
