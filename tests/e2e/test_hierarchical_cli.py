"""Spec 002/004 scenarios and the hierarchical commands through the installed `memory` command, per backend."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import MemoryCli, expired_line

pytestmark = pytest.mark.slow


def test_valid_single_and_multi_level_paths_are_identities(cli: MemoryCli) -> None:
    single = cli.ok("add", "category/memory", "--content", "one level")
    multi = cli.ok("add", "category/subcategory/nested/memory", "--content", "four levels")
    assert single["path"] == "category/memory" and multi["path"] == "category/subcategory/nested/memory"
    assert cli.ok("get", "category/subcategory/nested/memory")["id"] == multi["id"]
    assert cli.ok("get", single["id"])["path"] == "category/memory"


def test_add_auto_creates_store_and_category_with_optional_metadata(cli: MemoryCli) -> None:
    added = cli.ok(
        "add",
        "projects/agent-memory/ports",
        "--content",
        "Ports are Protocols",
        "--store",
        "work",
        "--tag",
        "arch",
        "--tag",
        "design",
        "--expires-at",
        "2099-01-01T00:00:00Z",
        "--citation",
        "src/core/types.ts:17",
        "--citation",
        "https://docs.example.com",
    )
    assert added["store"] == "work" and added["tags"] == ["arch", "design"]
    assert added["citations"] == ["src/core/types.ts:17", "https://docs.example.com"]
    assert added["expires_at"] == "2099-01-01T00:00:00Z"
    assert "work" in [s["name"] for s in cli.ok("store", "list")["stores"]]
    listing = cli.ok("list", "projects", "--store", "work")
    assert [s["path"] for s in listing["subcategories"]] == ["projects/agent-memory"]


def test_get_missing_and_expired(cli: MemoryCli) -> None:
    assert cli.fails("get", "notes/missing") == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}
    cli.ok("import", stdin=expired_line("notes/old", "stale"))
    assert "expired" in cli.fails("get", "notes/old")["error"]
    assert cli.ok("get", "notes/old", "--include-expired")["content"] == "stale"
    assert cli.ok("get", "notes/old", "--include-expired")["citations"] == []


def test_update_content_metadata_expiry_and_citations(cli: MemoryCli) -> None:
    cli.ok("add", "notes/c", "--content", "first", "--citation", "a.ts:1", "--expires-at", "2099-01-01T00:00:00Z")
    updated = cli.ok("update", "notes/c", "--content", "second")
    assert updated["content"] == "second" and updated["citations"] == ["a.ts:1"]
    assert updated["updated_at"] > updated["created_at"]
    assert cli.ok("update", "notes/c", "--tag", "x")["content"] == "second"
    assert cli.ok("update", "notes/c", "--clear-expiry")["expires_at"] is None
    assert cli.ok("update", "notes/c", "--citation", "new/path.ts:5")["citations"] == ["new/path.ts:5"]
    assert cli.ok("update", "notes/c", "--clear-citations")["citations"] == []
    assert "Nothing to update" in cli.fails("update", "notes/c")["error"]
    found = cli.ok("search", "second", "--category", "notes")
    assert found["results"][0]["content"] == "second"


def test_remove_move_recent_prune(cli: MemoryCli) -> None:
    cli.ok("add", "inbox/idea", "--content", "an idea")
    cli.ok("add", "archive/taken", "--content", "taken")
    refused = cli.fails("move", "inbox/idea", "archive/taken")
    assert refused["code"] == "DESTINATION_EXISTS"
    assert "Path 'archive/taken' is taken" in refused["error"]
    moved = cli.ok("move", "inbox/idea", "archive/idea")
    assert moved["path"] == "archive/idea"
    assert [m["path"] for m in cli.ok("recent", "--limit", "1")["memories"]] == ["archive/idea"]
    assert "limit must be between 1 and 100" in cli.fails("recent", "--limit", "500")["error"]
    removed = cli.ok("remove", "archive/taken")
    assert removed["removed"] is True
    assert cli.fails("get", "archive/taken") == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}
    cli.ok("import", stdin=expired_line("tmp/old", "old"))
    dry = cli.ok("prune", "--dry-run")
    assert dry["dry_run"] is True and [p["path"] for p in dry["pruned"]] == ["tmp/old"]
    assert cli.ok("get", "tmp/old", "--include-expired")
    assert cli.ok("prune")["count"] == 1
    assert cli.fails("get", "tmp/old", "--include-expired") == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}


def test_categories_and_stores(cli: MemoryCli) -> None:
    assert cli.ok("category", "create", "projects/empty", "--description", "nothing yet")["memory_count"] == 0
    assert cli.ok("category", "describe", "projects/empty", "Still empty")["description"] == "Still empty"
    assert "at most 500" in cli.fails("category", "create", "projects/x", "--description", "d" * 501)["error"]
    one = cli.ok("add", "projects/empty/one", "--content", "now it has one", "--tag", "t", "--citation", "c.md:1")
    deleted = cli.ok("category", "delete", "projects/empty")  # soft: restorable, counted as deleted
    assert (deleted["deleted"], deleted["memory_count"], deleted["restorable"]) == (True, 1, True)
    assert cli.fails("get", "projects/empty/one") == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}
    status = cli.ok("status")
    assert (status["memory_count"], status["deleted_count"]) == (0, 1)
    restored = cli.ok("restore", one["id"])
    # the same id and every field; over a server engine the delete was a revision of the memory (issue 46)
    assert {k: v for k, v in restored.items() if k != "revision"} == {k: v for k, v in one.items() if k != "revision"}
    assert restored["revision"] >= one["revision"]
    purged = cli.ok("category", "delete", "projects", "--purge")  # a root category, like any other; for good
    assert (purged["memory_count"], purged["restorable"]) == (1, False)
    assert cli.fails("restore", one["id"])["code"] == "MEMORY_NOT_FOUND"
    assert cli.ok("status")["deleted_count"] == 0
    assert cli.ok("store", "create", "team")["created"] is True
    assert "already exists" in cli.fails("store", "create", "team")["error"]
    assert "Invalid store name" in cli.fails("store", "create", "Team Notes")["error"]


def test_memories_from_either_door_reach_each_other(cli: MemoryCli) -> None:
    scoped = cli.ok("create", "User prefers Python", "--project", "p")
    pathed = cli.ok("add", "prefs/editor", "--content", "User prefers vim")
    everything = cli.ok("list")
    assert {m["id"] for m in everything["memories"]} == {scoped["id"], pathed["id"]}
    assert cli.ok("get", pathed["id"])["path"] == "prefs/editor"
    assert cli.ok("delete", pathed["id"]) == {"id": pathed["id"], "deleted": True}


def test_reindex_reports_and_search_still_works(cli: MemoryCli) -> None:
    cli.ok("add", "facts/sky", "--content", "The sky is blue because of Rayleigh scattering")
    report = cli.ok("reindex")
    assert report["memory_count"] == 1 and report["embedding_model"]
    assert cli.ok("search", "why is the sky blue")["results"][0]["path"] == "facts/sky"


def test_bad_paths_never_write(cli: MemoryCli) -> None:
    for path in (
        "../escape/x",
        "/etc/passwd",
        "a\\b/c",
        "notes/..",
        "single",
    ):  # one server for all (a start is seconds)
        error = cli.fails("add", path, "--content", "x")
        assert error["error"], path
        assert cli.ok("status")["memory_count"] == 0, path
