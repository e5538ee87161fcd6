"""The recipe "a field" (architecture.md) followed in a scratch copy: a new Memory field with a rule of its own
touches only model.py, commands.py, its strategy in tests/field_examples.py and the deliberate stored-format update,
and the field and contract tests pass there.

The copy is the repository's tracked files (`git ls-files`) under tmp_path, importable as `agent_memory` through a
package folder whose domain/, adapters/ and entrypoints/ link to the copy's. The field added is a range-checked
optional number, `importance` in [0, 1] (its validator refuses 2.0), that create sets, update changes and
`clear_importance` clears; without its strategy the contract suite would draw any float and fail.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # one pytest run in a subprocess (about 25 s on a quiet machine)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("domain", "adapters", "entrypoints")
BIG = 1_000_000  # bytes: larger tracked files (the model) are linked, not copied

# each file the recipe touches, and its edits: (text found exactly once, the text it becomes)
EDITS: dict[str, list[tuple[str, str]]] = {
    "domain/model.py": [
        (  # its rule: a validator raising InvalidValue
            "def _tuple(value: Iterable[str] | str) -> tuple[str, ...]:\n",
            "def _importance(_i: object, _a: object, value: float | None) -> None:\n"
            "    if value is not None and not 0.0 <= value <= 1.0:\n"
            '        raise InvalidValue(f"importance must be between 0 and 1, got {value}.")\n'
            "\n\n"
            "def _tuple(value: Iterable[str] | str) -> tuple[str, ...]:\n",
        ),
        (
            "    deleted_at: datetime | None = field(default=None, validator=_aware)\n",
            "    deleted_at: datetime | None = field(default=None, validator=_aware)\n"
            "    importance: float | None = field(\n"
            "        default=None,\n"
            "        validator=_importance,\n"
            '        metadata=stored(optional_in_old_records=True, clear_with="clear_importance"),\n'
            "    )\n",
        ),
    ],
    "domain/commands.py": [
        (  # CreateMemory
            '    created_at: datetime | None = field(default=None, metadata=doc("When it was made (ISO 8601; default now)."))\n',
            '    created_at: datetime | None = field(default=None, metadata=doc("When it was made (ISO 8601; default now)."))\n'
            '    importance: float | None = field(default=None, metadata=doc("How much it matters, 0 to 1.", least=0, most=1))\n',
        ),
        (  # UpdateMemory
            '    clear_expiry: bool = field(default=False, metadata=doc("Remove the expiry date."))\n',
            '    clear_expiry: bool = field(default=False, metadata=doc("Remove the expiry date."))\n'
            '    importance: float | None = field(default=None, metadata=doc("New importance, 0 to 1.", least=0, most=1))\n'
            '    clear_importance: bool = field(default=False, metadata=doc("Remove the importance."))\n',
        ),
    ],
    "tests/field_examples.py": [  # its strategy: draw only values its rule takes
        (
            '    "revision": st.integers(min_value=0, max_value=2**31),  # a count of changes: never negative\n}\n',
            '    "revision": st.integers(min_value=0, max_value=2**31),  # a count of changes: never negative\n'
            '    "importance": st.none() | st.floats(min_value=0.0, max_value=1.0),\n}\n',
        )
    ],
    "tests/adapters/test_stored_formats.py": [  # the deliberate update: the pinned bytes gain the new key
        (
            "MEMORY = Memory(**FIELDS, revision=3)  # type: ignore[arg-type]\n",
            "MEMORY = Memory(**FIELDS, revision=3, importance=0.5)  # type: ignore[arg-type]\n",
        ),
        (
            '"record": \'{"v":1,"store":"work","namespace":["user","a"],"tags":["x","y","x"],"source":"s","citations":["c1"],"thread":"th","revision":3',
            '"record": \'{"v":1,"store":"work","namespace":["user","a"],"tags":["x","y","x"],"source":"s","citations":["c1"],"thread":"th","importance":0.5,"revision":3',
        ),
        (
            '    "deleted": True,\n    "revision"',
            '    "deleted": True,\n    "importance": 0.5,\n    "revision"',
        ),
        (
            'deleted: true\ndeleted_at: 2026-11-23T01:02:03.456789Z\nrevision: 3\n---\ny"""\n\n\ndef test_chroma',
            'deleted: true\ndeleted_at: 2026-11-23T01:02:03.456789Z\nimportance: 0.5\nrevision: 3\n---\ny"""\n\n\ndef test_chroma',
        ),
    ],
}
# where a file's edits stop: the records of earlier versions after it are never edited
FROZEN_FROM = {"tests/adapters/test_stored_formats.py": "# --- what earlier versions wrote"}
# the tests that prove the field: every backend's round trips of a memory with every field set and of generated ones
# (the contract suite, the fakes included), the stored formats old and new, the plain converter, the commands' fields
SELECTION = [
    "tests/unit/test_every_field.py",
    "tests/adapters/test_stored_formats.py",
    "tests/adapters/test_plain.py",
    "tests/contract/test_in_memory_store.py",
    "tests/contract/test_files_store.py",
    "tests/contract/test_chroma_embedded.py",
    "tests/contract/test_qdrant_local.py",
    "-m",
    "not variant",  # the adapters in their default configuration: the variants store a record the same way
    "-k",
    "every_field or full_memory or generated or stored_formats or earlier_versions or plain or the_example "
    "or create_sets or update_changes or clearing or empty_update",
]


def tracked_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the scratch copy is made from `git ls-files`")
    return [name for name in listed.stdout.split("\0") if name and (ROOT / name).is_file()]


def scratch_copy(target: Path) -> None:
    for name in tracked_files():
        source, copy = ROOT / name, target / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if source.stat().st_size > BIG:
            copy.symlink_to(source)
        else:
            shutil.copyfile(source, copy)


def importable_package(copy: Path, site: Path) -> None:
    """`agent_memory` as the wheel lays it out: src/agent_memory's files, and the copy's three folders inside."""
    package = site / "agent_memory"
    shutil.copytree(copy / "src" / "agent_memory", package)
    for folder in PACKAGE_FOLDERS:
        (package / folder).symlink_to(copy / folder, target_is_directory=True)


def apply_edits(copy: Path) -> set[str]:
    for name, edits in EDITS.items():
        path = copy / name
        text, frozen = path.read_text(encoding="utf-8"), ""
        if name in FROZEN_FROM:
            text, marker, rest = text.partition(FROZEN_FROM[name])
            frozen = marker + rest
        for found, becomes in edits:
            assert text.count(found) == 1, f"{name} no longer holds {found[:60]!r}: update this test's EDITS"
            text = text.replace(found, becomes)
        path.write_text(text + frozen, encoding="utf-8")
    # the domain's tracked files that differ (a checkout's __pycache__ is no part of the recipe)
    domain = [name for name in tracked_files() if name.startswith("domain/")]
    return {Path(name).name for name in domain if (copy / name).read_bytes() != (ROOT / name).read_bytes()}


def test_a_field_added_to_model_and_commands_passes_the_field_and_contract_tests(tmp_path: Path) -> None:
    copy, site = tmp_path / "repo", tmp_path / "site"
    scratch_copy(copy)
    importable_package(copy, site)
    assert apply_edits(copy) == {"model.py", "commands.py"}
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(copy)]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    probe = (  # the field is the copy's, and its rule refuses a value out of range
        "import attrs, uuid, datetime as d, agent_memory.domain.model as m\n"
        "from agent_memory.domain.errors import InvalidValue\n"
        "now = d.datetime.now(d.UTC)\n"
        "try:\n"
        "    m.Memory(id=str(uuid.uuid4()), content='x', created_at=now, updated_at=now, importance=2.0)\n"
        "    refused = False\n"
        "except InvalidValue:\n"
        "    refused = True\n"
        "print(m.__file__, hasattr(attrs.fields(m.Memory), 'importance'), refused)"
    )
    where = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=env, capture_output=True, text=True)
    assert where.stdout.startswith(str(site)) and where.stdout.strip().endswith("True True"), (
        where.stdout + where.stderr
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *SELECTION],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed is not None and int(passed.group(1)) >= 50, run.stdout[-2000:]  # the selection ran, not a part
