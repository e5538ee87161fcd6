"""The hexagon's rules, checked on the source: the domain imports nothing outward, entrypoints load lazily."""

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.sources import parsed

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_THIRD_PARTY = {"attrs", "returns"}
FORBIDDEN_STDLIB = {"sqlite3", "argparse", "http", "urllib", "socket", "asyncio", "subprocess", "tomllib", "json"}
# the one domain module that reads a file: the ranker's weights, package data of its own package
DOMAIN_DATA_READERS = {"domain/search/ranker_weights.py": {"json"}}


PACKAGES = ("domain", "adapters", "entrypoints")  # mapped into agent_memory.* by the build (pyproject.toml)


@cache
def imported_names(path: Path) -> frozenset[str]:
    """Every absolute module name a file imports, in full (once per file: several tests ask)."""
    found: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return frozenset(found)


def imported_modules(path: Path) -> set[str]:
    return {name.split(".")[0] for name in imported_names(path)}


def python_files() -> list[Path]:
    roots = [ROOT / name for name in (*PACKAGES, "src", "tests", "bench")]
    return [path for root in roots for path in root.rglob("*.py") if "research" not in path.parts]


def test_domain_imports_only_the_standard_library_attrs_and_returns() -> None:
    offenders: dict[str, set[str]] = {}
    for path in sorted((ROOT / "domain").rglob("*.py")):
        bad = {
            name
            for name in imported_modules(path)
            if name not in ALLOWED_THIRD_PARTY | {"agent_memory", "__future__"}
            and (name not in sys.stdlib_module_names or name in FORBIDDEN_STDLIB)
            and name not in DOMAIN_DATA_READERS.get(str(path.relative_to(ROOT)), set())
        } | {
            name
            for name in imported_names(path)
            if name.startswith("agent_memory") and not name.startswith("agent_memory.domain")
        }
        if bad:
            offenders[path.name] = bad
    assert offenders == {}


def test_every_module_opens_with_a_docstring_saying_its_role() -> None:
    missing = [
        str(path.relative_to(ROOT))
        for package in (*PACKAGES, "src")
        for path in (ROOT / package).rglob("*.py")
        if ast.get_docstring(parsed(path)) is None
    ]
    assert missing == []


def test_importing_the_cli_loads_no_storage_or_model_library() -> None:
    probe = (
        "import sys, agent_memory, agent_memory.entrypoints.cli.in_process, agent_memory.entrypoints.bootstrap;"
        "heavy = {'chromadb', 'qdrant_client', 'onnxruntime', 'tokenizers', 'numpy', 'mcp', 'litestar'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_nothing_imports_the_folders_as_top_level_packages() -> None:
    """`domain`, `adapters` and `entrypoints` are other projects' names on the registry: only agent_memory.* is ours."""
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in python_files()
        if (found := imported_modules(path) & set(PACKAGES))
    }
    assert offenders == {}


# --- small modules, no import circles; inside adapters/: one error style, no backend reaching into another --

MAX_MODULE_LINES = 500
# what a backend package may import from agent_memory.adapters: itself and the shared modules
SHARED_ADAPTER_MODULES = ("agent_memory.adapters.shared",)


def package_modules(package: str) -> list[Path]:
    modules = sorted((ROOT / "adapters" / package).rglob("*.py"))
    assert len(modules) > 1, f"adapters/{package} is a package of modules"
    return modules


DOORS = ("cli", "mcp", "rest", "agents", "langgraph")
MAX_LOOSE_ENTRYPOINTS = 13  # the shared pieces beside the doors: bootstrap, seams, settings, the JSON edge, …
# old public paths kept as warning aliases of agent_memory.tools and agent_memory.langgraph (CHANGELOG.md)
DEPRECATED_ALIASES = frozenset({"agent_tools.py", "langgraph_store.py"})


def test_each_door_has_its_folder_and_few_modules_are_loose_in_entrypoints() -> None:
    loose = sorted(path.name for path in (ROOT / "entrypoints").glob("*.py") if path.name not in DEPRECATED_ALIASES)
    assert len(loose) <= MAX_LOOSE_ENTRYPOINTS, loose
    assert [door for door in DOORS if not (ROOT / "entrypoints" / door / "__init__.py").is_file()] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_500_lines(package: str) -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted((ROOT / package).rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def module_name(path: Path) -> str:
    """A source file's name in the installed package: domain/search/hybrid.py → agent_memory.domain.search.hybrid."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(("agent_memory", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def import_graph() -> dict[str, set[str]]:
    """Which of the package's modules each module imports, as written (under TYPE_CHECKING and in functions too):
    `from package import name` counts as importing the submodule when `name` is one."""
    files = {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        found: set[str] = set()
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in files)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in files:
                submodules = {f"{node.module}.{alias.name}" for alias in node.names} & files.keys()
                found.update(submodules or {node.module})
        graph[name] = found - {name}
    return graph


def test_no_import_circles() -> None:
    """No module reaches itself through the modules it imports (issue 32): each layer and each door reads one way."""
    graph = import_graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                circles.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                visit(imported)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert circles == []


@pytest.mark.parametrize("package", ["chroma", "files", "qdrant", "shared"])
def test_a_backend_package_imports_no_other_backend(package: str) -> None:
    own = f"agent_memory.adapters.{package}"
    allowed = (own, *SHARED_ADAPTER_MODULES) if package != "shared" else (own,)
    modules = package_modules(package)
    offenders = {
        str(path.relative_to(ROOT)): sorted(found)
        for path in modules
        if (
            found := {
                name
                for name in imported_names(path)
                if name.startswith("agent_memory.adapters") and not name.startswith(allowed)
            }
        )
    }
    assert offenders == {}


@pytest.mark.parametrize("package", ["chroma", "files", "qdrant", "shared"])
def test_adapter_packages_convert_to_a_result_once_rather_than_unwrapping(package: str) -> None:
    """Plain Python raises inside; the boundary turns it into a Result once per port method."""
    offenders = {
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in package_modules(package)
        for node in ast.walk(parsed(path))
        if (isinstance(node, ast.Attribute) and node.attr == "unwrap")
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and "Failure" in ast.unparse(node)
        )
    }
    assert offenders == set()


def test_no_domain_or_adapter_module_branches_on_isinstance_failure() -> None:
    """One error style: a Result is bound, lashed or matched, never tested with isinstance(…, Failure)."""
    offenders = {
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for room in ("domain", "adapters")
        for path in sorted((ROOT / room).rglob("*.py"))
        for node in ast.walk(parsed(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and "Failure" in ast.unparse(node)
    }
    assert offenders == set()
