"""Optional extras: the modules each one brings, and the error that names the extra a user must install."""

from __future__ import annotations

import importlib.util

from agent_memory.domain.errors import DomainError, ErrorCode

# extra -> the top-level modules it installs (checked without importing them)
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "qdrant": ("qdrant_client",),
    "rest": ("litestar", "uvicorn"),
    "langchain": ("langchain_core",),
    "langgraph": ("langgraph.store.base",),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extra(extra: str, purpose: str) -> DomainError | None:
    """None when the extra's modules are installed; else an error saying which pip command adds them."""
    absent = [module for module in EXTRA_MODULES[extra] if not _installed(module)]
    if not absent:
        return None
    return DomainError(
        ErrorCode.INVALID_OPERATION,
        f"{purpose} needs the '{extra}' extra, which is not installed: "
        f"run `pip install 'agent-memory[{extra}]'` (missing: {', '.join(absent)}).",
    )
