"""A stray file never fails the files store: a copied memory file (one id in two files) and an unreadable file are
reported by `status`, every memory stays readable, and `reindex` settles the copy."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.cli.in_process import run_guarded
from tests.isolation import empty_config


class Cli:
    def __init__(self, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys
        self.env = {
            "HOME": str(home),
            "MEMORY_CONFIG": empty_config(home),
            "MEMORY_DATA_DIR": str(home / "data"),
            "MEMORY_BACKEND": "files",
        }
        self.root = home / "data" / "files" / "default"

    def __call__(self, *argv: str) -> str:
        code = run_guarded(
            argv, env=self.env, services=lambda settings: build_service(settings, embedder=HashingEmbedder())
        )
        out, err = self.capsys.readouterr()
        assert code == 0, err
        return out

    def json(self, *argv: str) -> dict[str, object]:
        found: dict[str, object] = json.loads(self(*argv))
        return found


def _ids(cli: Cli) -> dict[str, str]:
    listed = cli.json("list", "--limit", "100")["memories"]
    assert isinstance(listed, list)
    return {m["id"]: m["content"] for m in listed}


def test_a_copied_file_is_reported_read_and_settled_by_reindex(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = Cli(tmp_path, capsys)
    original_id = cli.json("add", "home/door", "--content", "the door PIN is 4711")["id"]
    cli("create", "the safe code is 1234")
    original = cli.root / "home" / "door.md"
    copy = cli.root / "home" / "door copy.md"
    shutil.copy(original, copy)
    os.utime(copy, ns=(original.stat().st_mtime_ns + 10**9,) * 2)  # the copy is the newer file

    ids = _ids(cli)
    assert len(ids) == 3 and ids[str(original_id)] == "the door PIN is 4711"
    (copy_id,) = [i for i in ids if i != original_id and "door" in ids[i]]
    assert cli.json("get", str(original_id))["content"] == "the door PIN is 4711"
    assert cli.json("get", copy_id)["content"] == "the door PIN is 4711"
    assert sum('"content"' in line for line in cli("export").splitlines()) == 3
    status = cli.json("status")
    assert status["status"] == "healthy"  # both files are read; the copy is given its own id by a reindex
    assert any("door copy.md" in p and copy_id in p and "memory reindex" in p for p in status["warnings"])

    cli("reindex")
    assert cli.json("status")["status"] == "healthy"
    texts = [path.read_text() for path in cli.root.rglob("*.md")]
    assert sum(f"id: {copy_id}" in text for text in texts) == 1  # written into the copy (placed by the layout)
    assert sum(f"id: {original_id}" in text for text in texts) == 1 and f"id: {original_id}" in original.read_text()
    assert _ids(cli) == ids
    assert [m["id"] for m in cli.json("search", "door PIN")["results"]].count(copy_id) == 1


@pytest.mark.parametrize("kind", ["no permission", "named pipe"])
def test_an_unreadable_file_is_reported_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """Root reads a file whatever its mode, so as root only the named pipe (which no one reads as a memory, and
    which hung every read of the store, waiting for a writer) is tried."""
    if kind == "no permission" and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions")
    cli = Cli(tmp_path, capsys)
    cli("add", "home/door", "--content", "the door PIN is 4711")
    cli("add", "home/safe", "--content", "the safe code is 1234")
    safe = cli.root / "home" / "safe.md"
    if kind == "named pipe":
        safe.unlink()
        os.mkfifo(safe)
    else:
        safe.chmod(0)
    with _unblocked_after_a_while(safe if kind == "named pipe" else None) as unblocked:
        assert list(_ids(cli).values()) == ["the door PIN is 4711"]
        status = cli.json("status")
    assert not unblocked.is_set(), "a read of the store waited on the named pipe"
    assert status["status"] == "degraded" and any("safe.md" in p for p in status["problems"])


@contextlib.contextmanager
def _unblocked_after_a_while(pipe: Path | None) -> Iterator[threading.Event]:
    """A safety net, not a timing: if a read still waits on the pipe after a long while, open its other end so
    the test fails instead of hanging (the event says it had to)."""
    done, unblocked = threading.Event(), threading.Event()

    def watch() -> None:
        if pipe is None or done.wait(60):
            return
        unblocked.set()
        while not done.is_set():  # a writer that comes and goes: each blocked open of the pipe returns
            with contextlib.suppress(OSError):
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            done.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield unblocked
    finally:
        done.set()
        watcher.join()


def test_a_foreign_file_is_reported_and_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = Cli(tmp_path, capsys)
    cli("add", "home/door", "--content", "the door PIN is 4711")
    (cli.root / "home" / "notes.md").write_bytes(b"\xff\xfe not text")
    assert list(_ids(cli).values()) == ["the door PIN is 4711"]
    assert sum('"content"' in line for line in cli("export").splitlines()) == 1
    status = cli.json("status")
    assert status["status"] == "degraded" and any("notes.md" in p for p in status["problems"])


@pytest.mark.parametrize("form", ["NFD", "NFC"])
def test_a_hand_placed_file_never_takes_an_acknowledged_memorys_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    """`notes/café.md` written by hand (older created_at) beside the acknowledged `notes/cafe`: the newcomer is
    the one read elsewhere, named by status, and moved by reindex; `get notes/cafe` stays the acknowledged one."""
    import unicodedata

    cli = Cli(tmp_path, capsys)
    kept = cli.json("add", "notes/café", "--content", "the acknowledged note about the café")
    assert kept["path"] == "notes/cafe"
    name = unicodedata.normalize(form, "café") + ".md"
    (cli.root / "notes" / name).write_text(
        "---\ncreated_at: '2020-01-01T00:00:00Z'\n---\na note placed by hand\n", encoding="utf-8"
    )
    assert cli.json("get", "notes/cafe")["id"] == kept["id"]
    status = cli.json("status")
    assert status["status"] == "healthy"
    assert any(name in warning and "notes/cafe.md" in warning for warning in status["warnings"]), status
    cli("reindex")
    assert cli.json("get", "notes/cafe")["id"] == kept["id"]
    assert (cli.root / "notes" / "cafe.md").read_text(encoding="utf-8").count("the acknowledged note") == 1
    moved = [m for m in cli.json("list", "--limit", "10")["memories"] if "placed by hand" in m["content"]]
    assert len(moved) == 1 and moved[0]["path"].startswith("notes/cafe-"), moved
    assert "warnings" not in cli.json("status")
