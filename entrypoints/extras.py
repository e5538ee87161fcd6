"""Optional extras: the modules each one brings, and the error that names the extra a user must install."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
from urllib.parse import unquote, urlparse

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


def _direct_url() -> dict[str, object] | None:
    """How pip recorded this install when it came from a folder or a file (PEP 610), else None (the index)."""
    try:
        raw = importlib.metadata.distribution("agent-memory").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        found = json.loads(raw) if raw else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def install_command(extra: str) -> str:
    """The pip command that adds `extra` to this very install: an editable install or a checkout names its folder
    (`pip install -e '<folder>[rest]'`), a wheel installed from a file names the file, an install from the index the
    project's name (the only one of the three the index can answer)."""
    recorded = _direct_url()
    url = str(recorded.get("url", "")) if recorded else ""
    if url.startswith("file://"):
        where = unquote(urlparse(url).path)
        info = recorded.get("dir_info") if recorded else None
        editable = isinstance(info, dict) and bool(info.get("editable"))
        return f"pip install {'-e ' if editable else ''}'{where}[{extra}]'"
    if recorded is None:  # from the index, or run from a checkout (then pip may have recorded nothing)
        import agent_memory

        checkout = Path(agent_memory.__file__).resolve().parents[2]  # src/agent_memory/__init__.py in a checkout
        if (checkout / "pyproject.toml").is_file() and (checkout / "entrypoints").is_dir():
            return f"pip install -e '{checkout}[{extra}]'"
    return f"pip install 'agent-memory[{extra}]'"


def missing_extra(extra: str, purpose: str) -> DomainError | None:
    """None when the extra's modules are installed; else an error saying which pip command adds them."""
    absent = [module for module in EXTRA_MODULES[extra] if not _installed(module)]
    if not absent:
        return None
    return DomainError(
        ErrorCode.INVALID_OPERATION,
        f"{purpose} needs the '{extra}' extra, which is not installed: "
        f"run `{install_command(extra)}` (missing: {', '.join(absent)}).",
    )
