"""architecture.md and its design pages kept true to the code: every path, module, signature and command they quote.

What is checked is what a reader would follow: each `quoted` path or module must exist (a `folder/module.NAME`
must also hold NAME), each quoted signature `name(params)` must be one a function of that name has, the command
table must name every command of `domain/dispatch.HANDLERS`, and the module map must be the one made from the tree
(`python -m tests.module_map --write`). The pages stay short enough to read: architecture.md and BENCHMARKS.md
at most 350 lines.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests import module_map
from tests.sources import parsed

ROOT = module_map.ROOT
PAGES = [ROOT / "architecture.md", *sorted((ROOT / "docs").glob("design-*.md"))]
SEARCHED = ("", "entrypoints/", "adapters/", "domain/", "src/agent_memory/", "tests/")  # where a quoted path may start
MAX_LINES = 350

QUOTED = re.compile(r"`([^`\n]+)`")
PATHLIKE = re.compile(r"^[A-Za-z_][\w./*-]*$")
FILE_SUFFIXES = (".py", ".md", ".json", ".toml", ".yml", ".ini", ".txt", ".js", ".css", ".html")
PARAMETER = r"(?:\*{0,2}[A-Za-z_]\w*(?:=[\w.'\"-]*)?|\*|/|…|\.\.\.)"
SIGNATURE = re.compile(rf"^([A-Za-z_][\w.]*)\(\s*({PARAMETER}(?:,\s*{PARAMETER})*)?\s*\)$")


def _quoted(page: Path) -> list[str]:
    return QUOTED.findall(page.read_text(encoding="utf-8"))


@cache
def _sources() -> dict[Path, ast.Module]:
    """Every module of the package, parsed (no import: a door's optional library need not be installed)."""
    return {path: parsed(path) for room in module_map.ROOMS for path in (ROOT / room).rglob("*.py")}


def _names_in(path: Path) -> set[str]:
    """What a module defines or imports at any depth: functions, classes, assigned names, imported names."""
    found: set[str] = set()
    for node in ast.walk(_sources().get(path) or parsed(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name | ast.alias):
            found.add(node.id if isinstance(node, ast.Name) else (node.asname or node.name))
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def _file(quoted: str) -> Path | None:
    """The file a quoted path names, tried from the repository's root and from each room."""
    for start in SEARCHED:
        candidate = ROOT / (start + quoted)
        if "*" in quoted:
            if any(candidate.parent.glob(candidate.name)):
                return candidate.parent
        elif candidate.exists():
            return candidate
    if "/" not in quoted and quoted.endswith(FILE_SUFFIXES):  # a file named alone: it must be somewhere
        return next(iter(sorted(ROOT.glob(f"[!.]*/**/{quoted}"))), None)
    return None


def _resolves(quoted: str) -> bool:
    """A path, a `folder/module.NAME`, or a dotted `agent_memory.….NAME`, as existing files and names."""
    if quoted.startswith("agent_memory."):
        parts = quoted.split(".")[1:]
        for cut in range(len(parts), 0, -1):
            path = _file("/".join(parts[:cut]) + ".py") or _file("/".join(parts[:cut]) + "/__init__.py")
            if path is not None:
                return all(name in _names_in(path) for name in parts[cut:][:1])
        return False
    if _file(quoted.rstrip("/")) is not None:
        return True
    module, dot, name = quoted.rpartition(".")
    if dot and not quoted.endswith(FILE_SUFFIXES) and "/" in module:  # cli/handlers.SUBCOMMANDS
        path = _file(module + ".py")
        return path is not None and name.split("(")[0] in _names_in(path)
    return False


def _path_like(quoted: str) -> bool:
    word = quoted.split()[0]
    if not PATHLIKE.match(word) or word.startswith("*") or (word != quoted and not word.endswith(".py")):
        return False
    return "/" in word or word.endswith(FILE_SUFFIXES) or word.startswith("agent_memory.")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_quoted_path_and_module_exists(page: Path) -> None:
    missing = sorted({q for q in _quoted(page) if _path_like(q) and not _resolves(q.split()[0])})
    assert not missing, f"{page.name} names paths or modules that do not exist: {missing}"


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A def's parameters as a signature shows them: `a, *, b=None` (annotations left out; no self or cls)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    shown = [a.arg + ("" if d is None else "=" + ast.unparse(d)) for a, d in zip(positional, defaults, strict=True)]
    if arguments.posonlyargs:
        shown.insert(len(arguments.posonlyargs), "/")
    if arguments.vararg:
        shown.append("*" + arguments.vararg.arg)
    elif arguments.kwonlyargs:
        shown.append("*")
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        shown.append(argument.arg + ("" if default is None else "=" + ast.unparse(default)))
    if arguments.kwarg:
        shown.append("**" + arguments.kwarg.arg)
    return [p for p in shown if p not in ("self", "cls")]


def _dotted(path: Path) -> str:
    shown = path.relative_to(ROOT).with_suffix("").as_posix().removeprefix("src/agent_memory/")
    return "agent_memory." + shown.replace("/", ".")


@cache
def _defs() -> tuple[tuple[str, str, str, list[str]], ...]:
    """Every def of the package once: (its module's dotted name, its class or "", its name, its parameters)."""
    found = []
    for path, tree in _sources().items():
        dotted = _dotted(path)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((dotted, "", node.name, _parameters(node)))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.append((dotted, node.name, "", []))  # the class itself: a qualifier may name it
                found += [
                    (dotted, node.name, method.name, _parameters(method))
                    for method in node.body
                    if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
    return tuple(found)


def _functions(name: str, qualifier: str) -> list[list[str]] | None:
    """The parameter lists of each def called `name` that `qualifier.name` may mean: a module's function or its
    classes' method (a module whose dotted name ends with the qualifier), a class's method (a class so called), any
    function or method of that name (no qualifier). None when the qualifier is none of ours (a library's)."""
    owner = qualifier.rsplit(".", 1)[-1]

    def meant(dotted: str, cls: str) -> bool:
        in_module = ("." + dotted).endswith("." + qualifier)
        return not qualifier or in_module or (owner[:1].isupper() and cls == owner)

    known = [(cls, def_name, params) for dotted, cls, def_name, params in _defs() if meant(dotted, cls)]
    if qualifier and not known:
        return None
    return [params for cls, def_name, params in known if def_name == name]


def _takes(params: list[str], said: list[str]) -> bool:
    """Whether a call shaped like `said` (bare positional names, then `keyword=value`s) fits a def's parameters."""
    star = next((i for i, p in enumerate(params) if p.startswith("*")), len(params))
    positional = [p for p in params[:star] if p != "/"]
    names = {p.split("=")[0].lstrip("*") for p in params if p not in ("*", "/")}
    given = [p for p in said if "=" not in p]
    keywords = [p.split("=")[0] for p in said if "=" in p]
    required = [p for p in positional if "=" not in p]
    fits_positional = len(given) <= len(positional) or any(p.startswith("*") and p != "*" for p in params)
    return (
        fits_positional
        and all(k in names or any(p.startswith("**") for p in params) for k in keywords)
        and len(given) + sum(1 for r in required[len(given) :] if r in keywords) >= len(required)
    )


def _signature_differences(page: Path) -> list[str]:
    """Quoted `name(params)` that no def of that name has. A form with `*` or `/`, or under its full dotted name
    (`agent_memory.….name(…)`), is a signature and must be the def's exactly (or its named parts, where `…` elides
    the rest); any other form is a call and must fit the def (as many positional arguments, keywords it has)."""
    wrong = []
    for quoted in _quoted(page):
        match = SIGNATURE.match(quoted.strip())
        if match is None:
            continue
        qualifier, _, name = match.group(1).rpartition(".")
        candidates = _functions(name, qualifier.removeprefix("agent_memory.") if qualifier else "")
        if candidates is None or (not candidates and not qualifier):  # a library's, or a bare name of no def here
            continue
        said = [p.strip() for p in (match.group(2) or "").split(",") if p.strip()]
        elided = any(p in ("…", "...") for p in said)
        named = [p for p in said if p not in ("…", "...")]
        signature = quoted.startswith("agent_memory.") or any(p in ("*", "/") for p in said)
        if signature:
            fits = any(named == params or (elided and all(p in params for p in named)) for params in candidates)
        else:
            fits = any(elided or _takes(params, named) for params in candidates)
        if not fits:
            shown = "; ".join(f"{name}({', '.join(params)})" for params in candidates) or "no such function"
            wrong.append(f"`{quoted}` but the code has {shown}")
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_quoted_signature_is_the_codes(page: Path) -> None:
    wrong = _signature_differences(page)
    assert not wrong, f"{page.name} quotes signatures the code does not have:\n" + "\n".join(wrong)


def test_a_signature_left_behind_by_the_code_is_refused(tmp_path: Path) -> None:
    """The checker itself: build_service's signature as quoted passes, and with a parameter left out it fails."""
    quoted = [q for q in _quoted(ROOT / "architecture.md") if q.startswith("agent_memory.entrypoints.bootstrap.build")]
    assert len(quoted) == 1 and ", clock=None" in quoted[0]
    page = tmp_path / "page.md"
    page.write_text(f"`{quoted[0]}`", encoding="utf-8")
    assert _signature_differences(page) == []
    page.write_text(f"`{quoted[0].replace(', clock=None', '')}`", encoding="utf-8")
    assert _signature_differences(page), "a signature missing a parameter passed"


def _table_commands() -> list[str]:
    """The command types of `HANDLERS` in domain/dispatch.py, read from its source."""
    tree = ast.parse((ROOT / "domain" / "dispatch.py").read_text(encoding="utf-8"))
    table = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and "HANDLERS" in [t.id for t in ([node.target] if isinstance(node, ast.AnnAssign) else node.targets)]
    )
    assert isinstance(table, ast.Dict)
    return [key.attr for key in table.keys if isinstance(key, ast.Attribute)]


def test_the_command_table_section_names_every_command() -> None:
    text = (ROOT / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## The command table") :]
    section = section[: section.index("\n## ", 1)]
    named = set(QUOTED.findall(section))
    commands = _table_commands()
    assert len(commands) > 20
    missing = [command for command in commands if command not in named]
    assert not missing, f"architecture.md's command table leaves out {missing} (domain/dispatch.HANDLERS)"


def test_the_module_map_is_the_trees() -> None:
    text = (ROOT / "architecture.md").read_text(encoding="utf-8")
    assert module_map.architecture_with_map(text) == text, "run `python -m tests.module_map --write`"
    page = (ROOT / "docs" / "modules.md").read_text(encoding="utf-8")
    assert page == module_map.modules_page(), "run `python -m tests.module_map --write`"
    every = {path.stem for folder in module_map.folders() for path in module_map.modules(folder)}
    assert {"dispatch", "bootstrap", "store", "in_process"} <= every


@pytest.mark.parametrize("name", ["architecture.md", "BENCHMARKS.md"])
def test_the_page_is_short_enough_to_read(name: str) -> None:
    lines = (ROOT / name).read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines; move detail to docs/ (or past runs to bench/results/)"


def test_the_checkers_catch_a_stale_name() -> None:
    """The checks can fail: names this page once held that no longer exist are refused."""
    for stale in ("entrypoints/rest*.py", "langgraph_index.py", "entrypoints/cli/direct.py", "cli/handlers.HANDLERS"):
        assert _path_like(stale) and not _resolves(stale), stale
    for real in ("entrypoints/rest/workers.py", "domain/progress.py", "cli/handlers.SUBCOMMANDS", "adapters/feeds/"):
        assert _resolves(real), real


# a file name two layers share, allowed only where it is one concept at each layer (and the docstrings say which)
SAME_CONCEPT_AT_TWO_LAYERS = {
    "store.py": "a store of each layer: a backend's VectorStore (adapters/*/store.py), LangGraph's BaseStore (langgraph/)",
}


def test_a_module_name_says_which_layer_it_lives_in() -> None:
    """No two layers (domain, adapters, entrypoints, the package's own files) hold a module of the same file name,
    unless it is listed above as the same concept at two layers: a reader told `filters.py` knows which."""
    layers: dict[str, set[str]] = {}
    for room in module_map.ROOMS:
        for path in (ROOT / room).rglob("*.py"):
            if path.name != "__init__.py":
                layers.setdefault(path.name, set()).add(room)
    repeated = {name: sorted(rooms) for name, rooms in layers.items() if len(rooms) > 1}
    assert set(repeated) <= set(SAME_CONCEPT_AT_TWO_LAYERS), {
        name: rooms for name, rooms in repeated.items() if name not in SAME_CONCEPT_AT_TWO_LAYERS
    }
