"""Expiry, counts, config and files-layout rules, through the `memory` command (issue: a store you can trust)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import MemoryCli

pytestmark = pytest.mark.slow

PAST = "2001-01-01T00:00:00Z"


def test_update_move_and_delete_refuse_an_expired_memory_unless_told(cli: MemoryCli) -> None:
    cli.ok("add", "notes/old", "--content", "stale", "--expires-at", PAST)
    for command, verb in (
        (["update", "notes/old", "--content", "fresh"], "update"),
        (["move", "notes/old", "notes/older"], "move"),
        (["delete", "notes/old"], "delete"),
    ):
        error = cli.fails(*command)
        assert error["code"] == "MEMORY_EXPIRED", command
        assert error["error"] == f"Memory expired: pass include_expired to {verb} it anyway."
    kept = cli.ok("get", "notes/old", "--include-expired")
    assert (kept["content"], kept["path"], kept["updated_at"]) == ("stale", "notes/old", kept["created_at"])

    assert cli.ok("update", "notes/old", "--content", "fresh", "--include-expired")["content"] == "fresh"
    assert cli.ok("move", "notes/old", "notes/older", "--include-expired")["path"] == "notes/older"
    assert cli.ok("delete", "notes/older", "--include-expired")["deleted"] is True
    cli.ok("add", "notes/gone", "--content", "removed for good", "--expires-at", PAST)
    assert cli.ok("remove", "notes/gone")["removed"] is True  # remove and prune exist for expired memories


def test_status_counts_live_memories_with_deleted_and_expired_beside_them(cli: MemoryCli) -> None:
    cli.ok("create", "live one")
    cli.ok("create", "live two")
    cli.ok("delete", cli.ok("create", "soft-deleted")["id"])
    cli.ok("create", "expired", "--expires-at", PAST)
    status = cli.ok("status")
    assert (status["memory_count"], status["deleted_count"], status["expired_count"]) == (2, 1, 1)
    assert status["status"] == "healthy"
    assert "memory_count: 2  deleted_count: 1  expired_count: 1" in cli("status", "--format", "text").stdout


def test_a_missing_memory_config_file_is_an_error_naming_it(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    missing = tmp_path / "typo-config.toml"
    error = cli.fails("status", env={"MEMORY_CONFIG": str(missing), "MEMORY_BACKEND": "qdrant"})
    assert error["code"] == "INVALID_INPUT"
    assert str(missing) in error["error"] and "unset MEMORY_CONFIG" in error["error"]
    missing.write_text('store = "from-the-file"\n', encoding="utf-8")
    read = cli.fails("status", env={"MEMORY_CONFIG": str(missing)})  # once it exists, it is read
    assert read["code"] == "STORE_NOT_FOUND" and "from-the-file" in read["error"]
