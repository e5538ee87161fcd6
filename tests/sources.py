"""Test helper: each Python file parsed once per test process (the source-checking tests walk the tree many times)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def parsed(path: Path) -> ast.Module:
    """The module at `path`, parsed once per process and shared: callers read the tree and never change it."""
    return ast.parse(path.read_text(encoding="utf-8"))
