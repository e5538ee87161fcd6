"""The recipe for a command (architecture.md, "A command") followed to the letter in a scratch copy of the repository:
`CountTags` added there touches exactly the files the recipe names, and the door tests pass with it there."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# the files the recipe names, in its order (the handler's module is reading.py: counting tags reads)
RECIPE = (
    "domain/views.py",
    "domain/commands.py",
    "domain/reading.py",
    "domain/dispatch.py",
    "tests/doors/examples.py",
    "tests/unit/test_count_tags.py",
    "entrypoints/cli/manifest.json",
)

ANSWER = '''

@frozen
class TagCount:
    """How many live memories of a store carry a tag."""

    store: str
    tag: str
    count: int
'''

COMMAND = '''

from agent_memory.domain.views import TagCount  # noqa: E402


@frozen(kw_only=True)
class CountTags(Asks[TagCount]):
    """Count the live memories of a store that carry a tag."""

    tag: str = field(metadata=doc("The tag to count."))
    store: str | None = _store()
'''

HANDLER = """

from agent_memory.domain.commands import CountTags  # noqa: E402
from agent_memory.domain.views import TagCount  # noqa: E402


def count_tags(ctx: Context, command: CountTags) -> Result[TagCount, DomainError]:
    name = command.store or ctx.policy.default_store
    wanted = MemoryFilter(tags=(command.tag,), namespace=ctx.tenant)
    return (
        ctx.open(name, create=False)
        .bind(lambda store: store.scan(wanted))
        .map(lambda memories: TagCount(name, command.tag, len(memories)))
    )
"""

UNIT_TEST = '''"""CountTags over the fakes: the live memories of a store that carry a tag."""

from agent_memory.domain import commands as c
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import TagCount


def test_it_counts_the_live_memories_with_the_tag(service: MemoryService) -> None:
    for content, tags in (("tabs", ("style",)), ("spaces", ("style", "old")), ("deploys", ())):
        service.dispatch(c.CreateMemory(content=content, tags=tags, path=f"notes/{content}")).unwrap()
    service.dispatch(c.DeleteMemory(ref="notes/spaces")).unwrap()
    assert service.dispatch(c.CountTags(tag="style")).unwrap() == TagCount("default", "style", 1)
'''

# the door tests that read the table, and the one test the recipe adds
DOOR_TESTS = (
    "tests/doors/test_command_table.py",
    "tests/doors/test_cli_table.py",
    "tests/doors/test_mcp_outputs.py",
    "tests/doors/test_mcp_server.py",
    "tests/doors/test_rest_commands.py",
    "tests/doors/test_add_a_command.py",
    "tests/unit/test_count_tags.py",
)


# in them, the tests of the new command and those of the whole table (the manifest, the tool list, the handlers)
PICKED = "CountTags or count_tags or manifest or every_tool_with or registered_in_order or has_a_handler or subcommand"


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the recipe is followed in a copy of the repository's tracked files")
    listed = subprocess.run(  # and files not yet committed, so the test reads the working tree
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


def _digests(root: Path) -> dict[str, str]:
    skipped = {"__pycache__", ".pytest_cache", ".hypothesis"}
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and not skipped & set(path.relative_to(root).parts)
    }


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _insert_after(path: Path, anchor: str, text: str) -> None:
    body = path.read_text(encoding="utf-8")
    assert anchor in body, f"{path.name} no longer holds {anchor!r}: update this test's recipe"
    path.write_text(body.replace(anchor, anchor + text, 1), encoding="utf-8")


def _importable(copy: Path, site: Path) -> None:
    """The copy as the package `agent_memory` (pyproject's mapping: src/agent_memory, domain, adapters,
    entrypoints), through links in `site`, which goes first on the subprocess's path."""
    package = site / "agent_memory"
    package.mkdir(parents=True)
    for entry in (copy / "src" / "agent_memory").iterdir():
        (package / entry.name).symlink_to(entry)
    for room in ("domain", "adapters", "entrypoints"):
        (package / room).symlink_to(copy / room, target_is_directory=True)


@pytest.mark.slow
def test_a_command_added_by_the_recipe_touches_only_its_files_and_every_door_offers_it(tmp_path: Path) -> None:
    copy, site = tmp_path / "repository", tmp_path / "site"
    for name in _tracked():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    before = _digests(copy)
    _importable(copy, site)
    recipe = (ROOT / "architecture.md").read_text(encoding="utf-8")
    recipe = recipe[recipe.index("**A command**") : recipe.index("**A backend**")]
    assert all(Path(name).name in recipe for name in RECIPE if name != "tests/unit/test_count_tags.py")

    _append(copy / "domain/views.py", ANSWER)  # 1. the answer type
    _append(copy / "domain/commands.py", COMMAND)  # 2. the command
    _append(copy / "domain/reading.py", HANDLER)  # 3. its handler, and its HANDLERS line
    dispatch = copy / "domain/dispatch.py"
    body = dispatch.read_text(encoding="utf-8")
    body = body.replace(
        "\nHANDLERS:", "\nfrom agent_memory.domain.reading import count_tags  # noqa: E402\n\nHANDLERS:", 1
    )
    dispatch.write_text(body, encoding="utf-8")
    _insert_after(dispatch, "HANDLERS: dict[type[c.Asks[Any]], Handler] = {\n", "    c.CountTags: count_tags,\n")
    _insert_after(  # 4. one example
        copy / "tests/doors/examples.py",
        "EXAMPLES: dict[type[c.Asks[Any]], c.Asks[Any]] = {\n",
        '    c.CountTags: c.CountTags(tag="tools"),\n',
    )
    (copy / "tests/unit/test_count_tags.py").write_text(UNIT_TEST, encoding="utf-8")  # 5. its unit test
    inherited = {key: value for key, value in os.environ.items() if not key.startswith(("COV_CORE_", "COVERAGE_"))}
    env = {**inherited, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}  # the copy measured by no coverage
    generated = subprocess.run(  # 6. the generated manifest
        [sys.executable, "-m", "agent_memory.entrypoints.cli.manifest", "--write"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert generated.returncode == 0, generated.stderr

    after = _digests(copy)
    touched = sorted(name for name in after.keys() | before.keys() if before.get(name) != after.get(name))
    assert touched == sorted(RECIPE)

    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow",
            "-rA",
            "-k",
            PICKED,
            *DOOR_TESTS,
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    passed = {line.split(" ", 1)[1] for line in ran.stdout.splitlines() if line.startswith("PASSED ")}
    for test in (
        "tests/doors/test_command_table.py::test_every_command_reaches_its_use_case[CountTags]",
        "tests/doors/test_cli_table.py::test_every_command_runs_from_the_cli[CountTags]",
        "tests/doors/test_mcp_outputs.py::test_every_tool_answers_structured_content_that_fits_its_output_schema"
        "[count_tags]",
        "tests/doors/test_rest_commands.py::test_every_command_of_the_table_runs_by_its_name[CountTags]",
        "tests/unit/test_count_tags.py::test_it_counts_the_live_memories_with_the_tag",
    ):
        assert test in passed, f"{test} did not pass in the copy"
