"""Expiry, counts, config and files-layout rules, through the `memory` command (issue: a store you can trust)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import PAST, MemoryCli, expired_line

pytestmark = pytest.mark.slow


def test_update_move_and_delete_refuse_an_expired_memory_unless_told(cli: MemoryCli) -> None:
    cli.ok("import", stdin=expired_line("notes/old", "stale"))
    for command, verb in (
        (["update", "notes/old", "--content", "fresh"], "update"),
        (["move", "notes/old", "notes/older"], "move"),
        (["delete", "notes/old"], "delete"),
    ):
        error = cli.fails(*command)
        assert error["code"] == "MEMORY_EXPIRED", command
        assert error["error"] == f"Memory expired: pass --include-expired to {verb} it anyway."
    kept = cli.ok("get", "notes/old", "--include-expired")
    assert (kept["content"], kept["path"], kept["updated_at"]) == ("stale", "notes/old", kept["created_at"])

    assert cli.ok("update", "notes/old", "--content", "fresh", "--include-expired")["content"] == "fresh"
    assert cli.ok("move", "notes/old", "notes/older", "--include-expired")["path"] == "notes/older"
    assert cli.ok("delete", "notes/older", "--include-expired")["deleted"] is True
    cli.ok("import", stdin=expired_line("notes/gone", "removed for good"))
    assert cli.ok("remove", "notes/gone")["removed"] is True  # remove and prune exist for expired memories


def test_status_counts_live_memories_with_deleted_and_expired_beside_them(cli: MemoryCli) -> None:
    cli.ok("create", "live one")
    cli.ok("create", "live two")
    cli.ok("delete", cli.ok("create", "soft-deleted")["id"])
    cli.ok("create", "expired", "--expires-at", PAST)  # hidden the moment it is stored (issue 50: not refused)
    cli.ok("import", stdin=expired_line(None, "expired too"))  # an export's expired memory still imports
    status = cli.ok("status")
    assert (status["memory_count"], status["deleted_count"], status["expired_count"]) == (2, 1, 2)
    assert status["status"] == "healthy"
    assert "memory_count: 2  deleted_count: 1  expired_count: 2" in cli("status", "--format", "text").stdout


def test_a_missing_memory_config_file_is_an_error_naming_it(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    missing = tmp_path / "typo-config.toml"
    error = cli.fails("status", env={"MEMORY_CONFIG": str(missing), "MEMORY_BACKEND": "qdrant"})
    assert error["code"] == "INVALID_INPUT"
    assert str(missing) in error["error"] and "unset MEMORY_CONFIG" in error["error"]
    missing.write_text('store = "from-the-file"\n', encoding="utf-8")
    read = cli.fails("status", env={"MEMORY_CONFIG": str(missing)})  # once it exists, it is read
    assert read["code"] == "STORE_NOT_FOUND" and "from-the-file" in read["error"]


def test_a_new_memory_at_a_soft_deleted_path_gets_the_path_own_file(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    notes = Path(cli.env["MEMORY_DATA_DIR"]) / "files" / "default" / "notes"
    old = cli.ok("add", "notes/idea", "--content", "the first idea")
    cli.ok("delete", "notes/idea")
    new = cli.ok("add", "notes/idea", "--content", "the second idea")
    assert sorted(p.name for p in notes.iterdir()) == sorted(["idea.md", f"idea.{old['id']}.md"])
    assert f"id: {new['id']}" in (notes / "idea.md").read_text(encoding="utf-8")

    for _ in range(2):  # the layout survives reindex, and the live memory stays the one found at the path
        assert cli.ok("get", "notes/idea")["id"] == new["id"]
        assert [m["id"] for m in cli.ok("list", "notes")["memories"]] == [new["id"]]
        cli.ok("reindex")
    assert sorted(p.name for p in notes.iterdir()) == sorted(["idea.md", f"idea.{old['id']}.md"])
    exported = {row["id"]: row for row in map(json.loads, cli("export").stdout.strip().split("\n")[1:])}
    assert exported[old["id"]]["deleted"] is True and exported[old["id"]]["path"] == "notes/idea"
    assert exported[new["id"]]["deleted"] is False
    status = cli.ok("status")
    assert (status["memory_count"], status["deleted_count"], status["status"]) == (1, 1, "healthy")


def test_reindex_gives_a_file_without_an_id_a_uuid4_written_into_it(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    cli.ok("store", "create", "default")
    hand = Path(cli.env["MEMORY_DATA_DIR"]) / "files" / "default" / "garden" / "beans.md"
    hand.parent.mkdir(parents=True)
    text = "---\ncreated_at: 2026-01-01T00:00:00Z\nupdated_at: 2026-01-01T00:00:00Z\ntags: [veg]\n---\nBeans climb.\n"
    hand.write_text(text, encoding="utf-8")
    seen = cli.ok("get", "garden/beans")["id"]
    assert uuid.UUID(seen).version == 4
    assert cli.ok("list", "garden")["memories"][0]["id"] == seen  # the same id in every process

    cli.ok("reindex")
    first, rest = text.split("\n", 1)
    assert hand.read_text(encoding="utf-8") == f"{first}\nid: {seen}\n{rest}"  # only the id line is new
    cli.ok("reindex")
    assert hand.read_text(encoding="utf-8") == f"{first}\nid: {seen}\n{rest}"
    assert cli.ok("get", seen)["content"] == "Beans climb.\n"


def test_export_gets_every_record_out_of_a_chroma_store_whose_vector_index_is_damaged(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "chroma")
    batch = tmp_path / "batch.jsonl"  # past Chroma's sync threshold (1000), so the HNSW files hold the vectors
    batch.write_text("".join(json.dumps({"content": f"note {i} on topic {i % 13}"}) + "\n" for i in range(1010)))
    created = cli.ok("create", "--jsonl", str(batch))["created"]
    cli.ok("delete", created[0])
    segments = [p.parent for p in (Path(cli.env["MEMORY_DATA_DIR"]) / "chroma").glob("*/index_metadata.pickle")]
    assert len(segments) == 1
    for part in segments[0].glob("*.bin"):
        part.write_bytes(b"\x07" * part.stat().st_size)  # same size, garbage inside

    error = cli.fails("search", "note")
    assert error["code"] == "STORAGE_ERROR" and "vector index (HNSW files) is damaged" in error["error"]
    exported = cli("export")
    assert exported.code == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.strip().split("\n")[1:]]
    assert sorted(row["id"] for row in rows) == sorted(created)
    assert [row["id"] for row in rows if row["deleted"]] == [created[0]]
    assert {row["content"] for row in rows} == {f"note {i} on topic {i % 13}" for i in range(1010)}
    status = cli.ok("status")
    assert status["status"] == "degraded" and "`memory reindex`" in status["problems"][0]
    assert (status["memory_count"], status["deleted_count"]) == (1009, 1)

    assert cli.ok("reindex")["memory_count"] == 1010  # rebuilt from the records
    assert cli.ok("status")["status"] == "healthy"
    assert cli.ok("search", "note 7 on topic 7", "--limit", "1")["count"] == 1
