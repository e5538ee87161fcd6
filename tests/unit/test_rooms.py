"""The house's rooms, checked on the source: a folder per door, small modules, and no import circles."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "domain": "agent_memory.domain",
    "adapters": "agent_memory.adapters",
    "entrypoints": "agent_memory.entrypoints",
}
DOORS = ("cli", "mcp", "rest", "agents", "langgraph")
MAX_LOOSE_ENTRYPOINTS = 12
MAX_MODULE_LINES = 500


def modules() -> dict[str, Path]:
    """Every module of the package under its import name (a package under its own name, for its __init__)."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The package's own modules a file imports when it runs, lazy imports inside functions included (an import
    only for the type checker, under `if TYPE_CHECKING:`, is not one)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            found.update(name for name in names if name in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_each_door_has_its_folder_and_few_modules_are_loose_in_entrypoints() -> None:
    loose = sorted(path.name for path in (ROOT / "entrypoints").glob("*.py"))
    assert len(loose) <= MAX_LOOSE_ENTRYPOINTS, loose
    for door in DOORS:
        assert (ROOT / "entrypoints" / door / "__init__.py").is_file(), door


def test_no_module_is_over_500_lines() -> None:
    long = {
        name: lines
        for name, path in sorted(modules().items())
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


def test_no_two_modules_import_each_other_even_lazily() -> None:
    known = modules()
    graph = {name: imports_of(path, known) - {name} for name, path in known.items()}
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # a package's __init__ importing its own submodules is not a circle worth naming: none of ours does
    assert not circles, circles
