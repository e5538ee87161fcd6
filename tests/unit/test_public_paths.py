"""The public import paths: every `from agent_memory… import …` the docs show works, `import agent_memory` stays
light, and the old paths of the agent tools and the LangGraph store still work with a DeprecationWarning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```python\n(.*?)```", re.S)
IMPORT = re.compile(r"^\s*from (agent_memory[\w.]*) import (?:\(([^)]*)\)|([^(\n]+)$)", re.M)


def shown_imports() -> list[tuple[str, str, str]]:
    """(doc, module, name) for every name a python code block of README.md or docs/*.md imports from agent_memory."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text(encoding="utf-8")):
            for module, grouped, inline in IMPORT.findall(block):
                for name in re.split(r"[,\s]+", re.sub(r"#.*", "", grouped or inline)):
                    if name and name.isidentifier():
                        found.append((doc.name, module, name))
    return found


def test_the_docs_show_the_short_paths() -> None:
    modules = {module for _doc, module, _name in shown_imports()}
    assert {"agent_memory", "agent_memory.tools", "agent_memory.langgraph"} <= modules, modules


@pytest.mark.parametrize(("doc", "module", "name"), shown_imports())
def test_every_name_the_docs_import_is_importable(doc: str, module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{doc}: from {module} import {name}"


def test_the_agent_tools_and_the_store_are_public_names_and_import_agent_memory_stays_light() -> None:
    probe = (
        "import sys, agent_memory; light = not any(m.startswith('agent_memory.entrypoints') for m in sys.modules); "
        "from agent_memory import MemoryStore, create_manage_memory_tool, create_search_memory_tool, "
        "to_langchain_tools, MemoryTool, MemoryToolError; print(light)"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        (
            "agent_memory.entrypoints.agent_tools",
            "agent_memory.tools",
            [
                "create_manage_memory_tool",
                "create_search_memory_tool",
                "to_langchain_tools",
                "MemoryTool",
                "run_manage",
            ],
        ),
        (
            "agent_memory.entrypoints.langgraph_store",
            "agent_memory.langgraph",
            ["MemoryStore", "item_path", "CATEGORY"],
        ),
    ],
)
def test_the_old_paths_work_with_a_deprecation_warning(old: str, new: str, names: list[str]) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        module = importlib.import_module(old)
    current = importlib.import_module(new)
    assert all(getattr(module, name) is getattr(current, name) for name in names)
