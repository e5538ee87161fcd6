"""The module map, made from the tree: architecture.md's table of folders and docs/modules.md's line per module.

`python -m tests.module_map --write` rewrites both from the modules' docstrings; tests/unit/test_architecture_doc.py
fails while either is stale, so a module added, renamed or removed shows in the docs with its own first line.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.sources import parsed

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("domain", "adapters", "entrypoints", "src/agent_memory")  # the folders installed as `agent_memory`
BEGIN = "<!-- module map: generated from the tree by `python -m tests.module_map --write`; a unit test keeps it -->"
END = "<!-- end of the module map -->"
ARCHITECTURE = ROOT / "architecture.md"
MODULES_PAGE = ROOT / "docs" / "modules.md"


def folders() -> list[Path]:
    """Every package folder of the rooms, each room before its subfolders."""
    found: list[Path] = []
    for room in ROOMS:
        top = ROOT / room
        found += sorted((init.parent for init in top.rglob("__init__.py")), key=lambda folder: folder.parts)
    return found


def modules(folder: Path) -> list[Path]:
    """A folder's own modules (its subpackages are folders of their own)."""
    return sorted(path for path in folder.glob("*.py") if path.name != "__init__.py")


def role(path: Path) -> str:
    """A module's one-line docstring (every module opens with one: the house rule)."""
    text = ast.get_docstring(parsed(path)) or ""
    return " ".join(text.split("\n\n", 1)[0].split()).replace("|", "\\|")


def shown(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def map_block() -> str:
    """architecture.md's table: each folder, what it is (its `__init__` docstring's first sentence), its modules."""
    lines = [BEGIN, "| folder | what it is | modules |", "|---|---|---|"]
    for folder in folders():
        what = role(folder / "__init__.py").split(": ", 1)[0].rstrip(".")
        names = " · ".join(path.stem for path in modules(folder)) or "—"
        lines.append(f"| `{shown(folder)}/` | {what} | {names} |")
    return "\n".join([*lines, END])


def modules_page() -> str:
    """docs/modules.md: every module of every folder with its docstring's first paragraph."""
    lines = [
        "# Module map",
        "",
        "<!-- generated from the tree by `python -m tests.module_map --write`; a unit test fails while it is stale -->",
        "Every module of the installed package `agent_memory`, folder by folder, with the first paragraph of its "
        "docstring. The layers and how they meet are in [the architecture](architecture.md).",
    ]
    for folder in folders():
        lines += ["", f"## `{shown(folder)}/`", "", role(folder / "__init__.py"), "", "| module | role |", "|---|---|"]
        lines += [f"| `{path.name}` | {role(path)} |" for path in modules(folder)]
    return "\n".join(lines) + "\n"


def architecture_with_map(text: str) -> str:
    """architecture.md with its generated block replaced (the block must be there once)."""
    head, begin, rest = text.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"architecture.md has no module map block ({BEGIN!r} … {END!r})")
    return head + map_block() + tail


def main(argv: list[str]) -> int:
    wanted = {
        ARCHITECTURE: architecture_with_map(ARCHITECTURE.read_text(encoding="utf-8")),
        MODULES_PAGE: modules_page(),
    }
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if "--write" in argv:
        for path in stale:
            path.write_text(wanted[path], encoding="utf-8")
        print("\n".join(f"wrote {shown(path)}" for path in stale) or "up to date")
        return 0
    print("\n".join(f"stale: {shown(path)}" for path in stale) or "up to date")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
