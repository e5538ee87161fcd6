"""The paper cuts a newcomer hit in the first hour (issue 29), each through the `memory` command: in this process
(the very `run_guarded` the memory server runs) where the thin client plays no part, else the installed command."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from attrs import frozen

from agent_memory.entrypoints.cli import in_process as cli
from tests.e2e.conftest import MEMORY, expired_line
from tests.isolation import empty_config

pytestmark = pytest.mark.slow  # the real embedding model, in this process


@frozen
class Said:
    code: int
    out: str
    err: str


class Memory:
    """`memory …` run in this process on a fresh data directory."""

    def __init__(self, home: Path, capsys: pytest.CaptureFixture[str], backend: str = "chroma") -> None:
        self.capsys = capsys
        self.data_dir = home / "data"
        self.env = {
            "HOME": str(home),
            "MEMORY_CONFIG": empty_config(home),
            "MEMORY_DATA_DIR": str(self.data_dir),
            "MEMORY_BACKEND": backend,
        }

    def __call__(self, *argv: str) -> Said:
        self.capsys.readouterr()
        code = cli.run_guarded(list(argv), env=self.env)
        captured = self.capsys.readouterr()
        return Said(code, captured.out, captured.err)

    def ok(self, *argv: str) -> Said:
        said = self(*argv)
        assert said.code == 0, said.err
        return said

    def import_expired(self, path: str | None, content: str) -> None:
        """An expired memory, imported (creating one is refused: its expiry is past)."""
        line = self.data_dir.parent / "expired.jsonl"
        line.write_text(expired_line(path, content), encoding="utf-8")
        self.ok("import", str(line))


def test_a_bare_memory_prints_its_usage(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "MEMORY_CONFIG": empty_config(tmp_path)}
    ran = subprocess.run([str(MEMORY)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert (ran.returncode, ran.stderr) == (0, "")
    assert ran.stdout.startswith("usage: memory"), ran.stdout
    assert "search" in ran.stdout and "create" in ran.stdout


def test_text_output_says_1_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(tmp_path, capsys)
    memory.import_expired("notes/one", "the only one")
    assert memory.ok("list", "--format", "text", "--include-expired").out.startswith("(all categories): 1 memory\n")
    assert memory.ok("prune", "--dry-run", "--format", "text").out.startswith("Would prune 1 expired memory\n")


def test_the_expired_error_names_the_command_line_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(tmp_path, capsys)
    memory.import_expired("notes/old", "stale")
    refused = memory("update", "notes/old", "--content", "fresh")
    assert refused.code == 1
    assert json.loads(refused.err) == {
        "error": "Memory expired: pass --include-expired to update it anyway.",
        "code": "MEMORY_EXPIRED",
    }


def test_store_list_counts_as_status_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(tmp_path, capsys)
    memory.ok("create", "live")
    memory.ok("delete", json.loads(memory.ok("create", "soft-deleted").out)["id"])
    memory.import_expired(None, "expired")
    status = json.loads(memory.ok("status").out)
    listed = json.loads(memory.ok("store", "list").out)["stores"]
    counts = ("memory_count", "deleted_count", "expired_count")
    assert [tuple(store[key] for key in counts) for store in listed] == [tuple(status[key] for key in counts)]
    assert status["memory_count"] == 1


def test_a_text_export_is_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = Memory(tmp_path, capsys)
    memory.ok("add", "notes/a", "--content", "first line\nsecond line")
    memory.ok("delete", json.loads(memory.ok("create", "gone").out)["id"])
    text = memory.ok("export", "--format", "text").out
    assert (
        text
        == f"Store default (categories: none)\n2 memories:\n  default  notes/a: first line\n  default  {_id(memory, 'gone')}: gone  (deleted)\n"
    )
    assert json.loads(memory.ok("export").out.splitlines()[0])["kind"] == "store"  # JSON Lines stay the default


def _id(memory: Memory, content: str) -> str:
    exported = [json.loads(line) for line in memory.ok("export").out.splitlines()]
    return next(str(line["id"]) for line in exported if line.get("content") == content)


def test_a_hand_written_file_without_timestamps_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """README: hand-written files work; a file without created_at/updated_at is as old as its last change."""
    memory = Memory(tmp_path, capsys, backend="files")
    memory.ok("store", "create", "default")
    note = memory.data_dir / "files" / "default" / "notes" / "hand.md"
    note.parent.mkdir(parents=True)
    note.write_text("---\ntags: [by-hand]\n---\nWritten by hand in an editor.\n", encoding="utf-8")
    written = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    os.utime(note, (written.timestamp(), written.timestamp()))
    found = json.loads(memory.ok("get", "notes/hand").out)
    assert (found["content"], found["tags"]) == ("Written by hand in an editor.\n", ["by-hand"])
    assert found["created_at"] == found["updated_at"] == "2026-03-04T05:06:07Z"
    assert memory.ok("reindex").code == 0  # hand-made files join the search index (README)
    assert json.loads(memory.ok("status").out)["status"] == "healthy"
    hits = json.loads(memory.ok("search", "written in an editor", "--min-confidence", "0").out)["results"]
    assert [hit["path"] for hit in hits] == ["notes/hand"]
