"""The LangGraph store's public home: `from agent_memory.langgraph import MemoryStore` (needs the langgraph extra)."""

from __future__ import annotations

from agent_memory.entrypoints.langgraph.store import CATEGORY, MemoryStore, item_path

__all__ = ["CATEGORY", "MemoryStore", "item_path"]
