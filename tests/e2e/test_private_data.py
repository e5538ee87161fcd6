"""Private by default: under a permissive umask (022), nothing the store creates is readable by group or others,
through the `memory` command (in process) and through the Python API, on every embedded backend."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.dispatch import dispatch
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.cli.in_process import run_guarded
from agent_memory.entrypoints.settings import load_settings
from tests.e2e.conftest import BACKENDS
from tests.isolation import empty_config


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _exposed(data_dir: Path) -> list[str]:
    """Every path at or under `data_dir` that group or others may read, write or enter (symlinks: their target)."""
    paths = [data_dir, *data_dir.rglob("*")]
    return [f"{oct(stat.S_IMODE(p.stat().st_mode))} {p}" for p in paths if p.exists() and p.stat().st_mode & 0o077]


def _env(home: Path, backend: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "MEMORY_CONFIG": empty_config(home),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_BACKEND": backend,
    }


def _cli(env: dict[str, str], capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = run_guarded(argv, env=env, services=lambda settings: build_service(settings, embedder=HashingEmbedder()))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.usefixtures("permissive_umask")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_command_leaves_nothing_readable_by_others(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(tmp_path, backend)
    _cli(env, capsys, "create", "the door PIN is 4711", "--type", "fact")
    _cli(env, capsys, "search", "door PIN")
    _cli(env, capsys, "export", "--output", str(tmp_path / "data" / "backup.jsonl"))
    _cli(env, capsys, "list")
    assert _exposed(tmp_path / "data") == []
    assert json.loads(_cli(env, capsys, "status"))["status"] == "healthy"


@pytest.mark.usefixtures("permissive_umask")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_python_api_leaves_nothing_readable_by_others(tmp_path: Path, backend: str) -> None:
    settings = load_settings({}, _env(tmp_path, backend)).unwrap()
    service = build_service(settings, embedder=HashingEmbedder()).unwrap()
    dispatch(service, CreateMemory(content="the door PIN is 4711")).unwrap()
    dispatch(service, CreateMemory(content="the safe code is 1234")).unwrap()
    dispatch(service, SearchMemories(query="door PIN")).unwrap()
    assert os.umask(0o022) == 0o022  # the caller's umask is left as it was
    assert _exposed(tmp_path / "data") == []


def test_status_says_what_to_run_when_others_can_read_the_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(tmp_path, "files")
    _cli(env, capsys, "create", "the door PIN is 4711")
    data = tmp_path / "data"
    data.chmod(0o755)
    (data / "files-keywords.sqlite3").chmod(0o644)
    body = json.loads(_cli(env, capsys, "status"))
    assert body["status"] == "healthy" and "problems" not in body  # every command works: it is advice
    assert any(f"chmod -R go-rwx {data}" in warning for warning in body["warnings"])
    assert "warning: Other users of this machine can read" in _cli(env, capsys, "status", "--format", "text")


def test_a_data_directory_the_user_made_0755_is_healthy_when_what_is_inside_is_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`mkdir -p ~/memories` (0755 under the usual umask): the product makes all it writes inside 0700/0600, so
    nobody else can read memory data and no warning is given; a file made readable by hand is named."""
    env = _env(tmp_path, "files")
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    _cli(env, capsys, "add", "notes/door", "--content", "the door PIN is 4711")
    body = json.loads(_cli(env, capsys, "status"))
    assert body["status"] == "healthy" and "warnings" not in body, body
    leaked = next(path for path in data.rglob("door.md"))
    leaked.chmod(0o644)
    for folder in [path for path in leaked.parents if path.is_relative_to(data)]:
        folder.chmod(0o755)  # others reach it
    body = json.loads(_cli(env, capsys, "status"))
    assert body["status"] == "healthy" and any("door.md" in warning for warning in body["warnings"]), body


def test_a_file_written_where_a_symlink_sat_is_private(tmp_path: Path) -> None:
    from agent_memory.adapters.shared.durable import write_atomically

    target, elsewhere = tmp_path / "memory.md", tmp_path / "elsewhere.md"
    elsewhere.write_text("outside")
    elsewhere.chmod(0o644)
    target.symlink_to(elsewhere)
    write_atomically(target, b"secret")
    assert not target.is_symlink()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert elsewhere.read_text() == "outside"


READS = (
    ("search", "door PIN"),
    ("status",),
    ("list",),
    ("recent",),
    ("export",),
    ("store", "list"),
    ("prune", "--dry-run"),
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reads_on_a_fresh_data_dir_create_nothing(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(tmp_path, backend)
    for argv in READS:
        _cli(env, capsys, *argv)
    assert not (tmp_path / "data").exists()
    _cli(env, capsys, "create", "the door PIN is 4711")  # and the first write then makes the store
    assert "4711" in _cli(env, capsys, "search", "door PIN")


@pytest.mark.slow
def test_the_memory_server_leaves_nothing_readable_by_others(tmp_path: Path) -> None:
    """Through the installed `memory` command and its local server (which makes its directory in the user's state
    directory and its log before any storage is made), under umask 022: the data directory and everything in it,
    and the server's files, stay the user's alone."""
    env = {**_env(tmp_path, "files"), "PATH": os.environ["PATH"]}
    memory = [str(Path(sys.executable).with_name("memory"))]
    try:
        ran = subprocess.run(
            [*memory, "create", "kept private"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
            preexec_fn=lambda: os.umask(0o022),
        )
        assert ran.returncode == 0, ran.stderr
        assert _exposed(tmp_path / "data") == []
        assert _exposed(tmp_path / ".local" / "state" / "agent-memory") == []
    finally:
        subprocess.run([*memory, "server", "stop"], env=env, capture_output=True, timeout=180, check=False)
