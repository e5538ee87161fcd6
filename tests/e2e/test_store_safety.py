"""Inputs that once broke a store or lost track of a write, through the CLI on every backend (issue: no write lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import MemoryCli

pytestmark = pytest.mark.slow


def test_a_huge_namespace_is_refused_before_storage_and_the_store_keeps_working(cli: MemoryCli) -> None:
    deep = "/".join(["l"] * 6000)  # once made every later command of an embedded Chroma fail for good
    error = cli.fails("create", "deep", "--namespace", deep)
    assert error["code"] == "INVALID_INPUT" and "at most 16" in error["error"]
    too_long = "/".join(["x" * 200] * 3)
    assert "512 characters" in cli.fails("create", "long", "--namespace", too_long)["error"]
    kept = cli.ok("create", "still works", "--namespace", "user/alice")
    assert cli.ok("get", kept["id"])["namespace"] == ["user", "alice"]
    assert cli.ok("status")["status"] == "healthy"


def test_export_import_keeps_content_with_unicode_line_separators(cli: MemoryCli, tmp_path: Path) -> None:
    tricky = "Line one\u2028line two\u2029paragraph\u0085next-line\r\nwindows\nunix"
    created = cli.ok("create", "-", stdin=tricky)
    exported = cli("export")
    lines = exported.stdout.strip().split("\n")
    assert exported.code == 0 and len(lines) == 2 and '"kind": "store"' in lines[0]  # the store, then the memory
    assert all(char not in exported.stdout for char in "\u2028\u2029\u0085")  # escaped, so no reader splits there
    target = MemoryCli(tmp_path / "other", cli.backend, {k: v for k, v in cli.env.items() if k.startswith("CHROMA")})
    target.env["MEMORY_COLLECTION"] = cli.env.get("MEMORY_COLLECTION", "memories") + "-copy"
    assert target.ok("import", stdin=exported.stdout)["count"] == 1
    assert target.ok("get", created["id"])["content"] == tricky


def test_a_batch_in_text_format_reports_success_after_writing(cli: MemoryCli, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"content": "first"}\n{"content": "second"}\n', encoding="utf-8")
    ran = cli("create", "--jsonl", str(batch), "--format", "text")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("Created 2 memories")
    assert cli.ok("status")["memory_count"] == 2


READ_ONLY = (["search", "foo"], ["status"], ["list"], ["recent"], ["export"], ["prune", "--dry-run"])


def test_read_only_commands_never_create_a_store(cli: MemoryCli) -> None:
    cli.ok("create", "something in the default store")
    for command in READ_ONLY:  # one server for all (a start is seconds); the store list is checked after each
        error = cli.fails("--store", "typo", *command)
        assert error["code"] == "STORE_NOT_FOUND", command
        assert "typo" in json.dumps(error), command
        assert "typo" not in {store["name"] for store in cli.ok("store", "list")["stores"]}, command


def test_a_fresh_install_reads_as_empty_without_creating_the_default_store(cli: MemoryCli) -> None:
    assert cli.ok("search", "anything")["results"] == []
    assert cli.ok("status")["memory_count"] == 0
    assert cli.ok("store", "list")["stores"] == []
    created = cli.ok("create", "first memory")
    assert cli.ok("get", created["id"])["content"] == "first memory"


def test_a_batch_never_puts_two_live_memories_at_one_path(cli: MemoryCli, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"content": "one", "path": "notes/same"}\n{"content": "two", "path": "notes/same"}\n')
    error = cli.fails("create", "--jsonl", str(batch))
    assert error["code"] == "DESTINATION_EXISTS" and "notes/same" in error["error"]
    assert cli.ok("status")["memory_count"] == 0  # all or nothing

    cli.ok("add", "notes/taken", "--content", "first")
    batch.write_text('{"content": "fresh", "path": "notes/free"}\n{"content": "clash", "path": "notes/taken"}\n')
    assert cli.fails("create", "--jsonl", str(batch))["code"] == "DESTINATION_EXISTS"
    clash = {"id": "1b4e28ba-2fa1-41d2-883f-0016d3cca427", "content": "imported clash", "path": "notes/taken"}
    exported = next(row for row in map(json.loads, cli("export").stdout.strip().split("\n")) if "kind" not in row)
    assert cli.fails("import", stdin=json.dumps({**exported, **clash}) + "\n")["code"] == "DESTINATION_EXISTS"
    assert cli.ok("get", "notes/taken")["content"] == "first"
    assert cli.ok("status")["memory_count"] == 1
    # re-importing the memory that holds the path (same id) is a replace, not a clash
    assert cli.ok("import", stdin=json.dumps({**exported, "content": "first, edited"}) + "\n")["count"] == 1
    assert cli.ok("get", "notes/taken")["content"] == "first, edited"


@pytest.mark.parametrize("backend", ["chroma", "files", "qdrant"])
def test_a_damaged_keyword_index_refuses_writes_whole_and_reindex_repairs_it(tmp_path: Path, backend: str) -> None:
    cli = MemoryCli(tmp_path, backend)
    first = cli.ok("create", "the platypus lays eggs")
    index = Path(cli.env["MEMORY_DATA_DIR"]) / f"{backend}-keywords.sqlite3"
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    index.write_bytes(b"this is no database" * 100)

    error = cli.fails("create", "a second memory")
    assert error["code"] == "STORAGE_ERROR" and "Nothing was stored" in error["error"]
    status = cli.ok("status")
    assert status["memory_count"] == 1  # a retrying client cannot duplicate it
    assert status["status"] == "degraded" and "memory reindex" in status["problems"][0]

    assert cli.ok("reindex")["memory_count"] == 1
    assert cli.ok("status")["status"] == "healthy"
    assert index.with_name(index.name + ".damaged").exists()
    second = cli.ok("create", "a second memory")
    found = cli.ok("search", "platypus", "--mode", "keyword")["results"]
    assert found and found[0]["id"] == first["id"]
    assert cli.ok("get", second["id"])["content"] == "a second memory"


def test_status_says_when_the_keyword_index_lags_and_what_to_run(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "chroma")
    cli.ok("create", "one")
    cli.ok("create", "two")
    index = Path(cli.env["MEMORY_DATA_DIR"]) / "chroma-keywords.sqlite3"
    import sqlite3

    with sqlite3.connect(index) as connection:  # as a crash between the two writes would leave it
        connection.execute("DELETE FROM kw_default_links WHERE rowid = (SELECT max(rowid) FROM kw_default_links)")
    status = cli.ok("status")
    assert status["status"] == "healthy" and "problems" not in status  # every command works; a reindex is advised
    assert status["warnings"] == ["The keyword index holds 1 of the 2 memories: run `memory reindex`."]
    text = cli("status", "--format", "text").stdout
    assert "is healthy" in text and "warning: The keyword index holds 1 of the 2" in text
    cli.ok("reindex")
    assert "warnings" not in cli.ok("status")


def test_a_malformed_file_is_skipped_with_a_warning_naming_it_never_failing_the_store(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    good = cli.ok("add", "notes/good", "--content", "the good memory about otters")
    broken = Path(cli.env["MEMORY_DATA_DIR"]) / "files" / "default" / "notes" / "broken.md"
    broken.write_text("---\nid: [not: closed\n---\nbody\n", encoding="utf-8")

    assert [m["id"] for m in cli.ok("list")["memories"]] == [good["id"]]
    assert cli.ok("search", "otters")["results"][0]["id"] == good["id"]
    assert cli.ok("reindex")["memory_count"] == 1
    status = cli.ok("status")
    assert status["status"] == "degraded"
    assert any("notes/broken.md" in problem for problem in status["problems"])
    assert broken.read_text(encoding="utf-8").startswith("---\nid: [not")  # never rewritten or deleted

    broken.unlink()
    cli.ok("reindex")
    assert cli.ok("status")["status"] == "healthy"


def test_an_emptied_chroma_database_is_refused_not_silently_replaced(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "chroma")
    cli.ok("create", "precious")
    database = Path(cli.env["MEMORY_DATA_DIR"]) / "chroma" / "chroma.sqlite3"
    database.write_bytes(b"")
    for command in (["status"], ["create", "new"], ["search", "precious"]):
        error = cli.fails(*command)
        assert "chroma.sqlite3 is empty" in error["error"], command
    assert database.stat().st_size == 0  # nothing wrote a fresh store over it


def test_reindex_never_leaves_two_hand_made_files_at_one_path(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    cli.ok("store", "create", "default")
    notes = Path(cli.env["MEMORY_DATA_DIR"]) / "files" / "default" / "notes"
    notes.mkdir(parents=True)
    (notes / "My Note.md").write_text(
        "---\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\n---\nthe first note\n",
        encoding="utf-8",
    )
    (notes / "my_note.md").write_text(
        "---\ncreated_at: 2026-02-01T00:00:00Z\nupdated_at: 2026-02-01T00:00:00Z\n---\nthe second note\n",
        encoding="utf-8",
    )

    report = cli.ok("reindex")
    assert report["memory_count"] == 2 and len(report["renamed"]) == 1
    assert report["renamed"][0].startswith("notes/my-note → notes/my-note-")
    assert cli.ok("get", "notes/my-note")["content"] == "the first note\n"  # the older keeps the path
    moved = report["renamed"][0].split(" → ")[1]
    assert cli.ok("get", moved)["content"] == "the second note\n"
    assert sorted(m["path"] for m in cli.ok("list", "notes")["memories"]) == ["notes/my-note", moved]
    assert "renamed" not in cli.ok("reindex")  # settled


def test_a_deleted_files_index_is_reported_not_silently_empty(tmp_path: Path) -> None:
    import shutil

    cli = MemoryCli(tmp_path, "files")
    kept = cli.ok("add", "notes/otters", "--content", "otters hold hands while sleeping")
    shutil.rmtree(Path(cli.env["MEMORY_DATA_DIR"]) / "files-index")
    status = cli.ok("status")
    assert status["status"] == "healthy"
    assert status["warnings"] == ["The search index holds 0 of the 1 memory files: run `memory reindex`."]
    cli.ok("reindex")
    assert cli.ok("status")["status"] == "healthy"
    assert cli.ok("search", "otters", "--mode", "semantic")["results"][0]["id"] == kept["id"]
