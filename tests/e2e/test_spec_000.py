"""Every scenario of spec 000 (and the service rules of spec 001) through the installed `memory` command."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.conftest import MemoryCli

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def data_dir_the_user_made(cli: MemoryCli) -> None:
    """Every scenario runs in a data directory the user made first, as `mkdir -p ~/memories` does (0755)."""
    cli.data_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    cli.data_dir.chmod(0o755)


MEMORY_FIELDS = {
    "id",
    "content",
    "agent",
    "personality",
    "project",
    "type",
    "global",
    "decay_policy",
    "confidence",
    "created_at",
}


def test_create_with_all_options(cli: MemoryCli) -> None:
    created = cli.ok(
        "create",
        "User prefers Python",
        "--agent",
        "claude",
        "--personality",
        "engineer",
        "--project",
        "my-project",
        "--type",
        "preference",
        "--global",
        "--decay",
        "stable",
    )
    assert set(created) >= MEMORY_FIELDS
    assert created["content"] == "User prefers Python"
    assert (created["agent"], created["personality"], created["project"], created["type"]) == (
        "claude",
        "engineer",
        "my-project",
        "preference",
    )
    assert created["global"] is True and created["decay_policy"] == "stable" and created["confidence"] == 1.0
    assert created["created_at"].endswith("Z")


def test_create_with_minimal_arguments_applies_defaults(cli: MemoryCli) -> None:
    created = cli.ok("create", "A simple observation")
    assert set(created) >= MEMORY_FIELDS
    assert (created["agent"], created["personality"], created["project"], created["type"]) == ("", "", "", "")
    assert created["global"] is False and created["decay_policy"] == "stable"
    assert cli.ok("get", created["id"])["content"] == "A simple observation"


def test_create_with_text_output_is_not_json(cli: MemoryCli) -> None:
    ran = cli("create", "test", "--format", "text")
    assert ran.code == 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(ran.stdout)
    assert "test" in ran.stdout and "Created memory" in ran.stdout


def test_basic_search_returns_results_with_confidence_and_similarity(cli: MemoryCli) -> None:
    cli.ok("create", "The user builds python CLI tools with argparse")
    found = cli.ok("search", "python CLI tools")
    assert set(found) == {"results", "count"} and found["count"] == len(found["results"]) == 1
    hit = found["results"][0]
    assert hit["confidence"] == 1.0 and 0.0 < hit["similarity"] <= 1.0


def test_filtered_search_honours_scope_limit_and_confidence(cli: MemoryCli) -> None:
    for i in range(7):
        cli.ok("create", f"preference number {i} of claude", "--agent", "claude", "--project", "my-project")
    cli.ok("create", "preference of claude elsewhere", "--agent", "claude", "--project", "other")
    cli.ok("create", "preference of another agent", "--agent", "gpt", "--project", "my-project")
    found = cli.ok(
        "search",
        "preferences",
        "--agent",
        "claude",
        "--project",
        "my-project",
        "--limit",
        "5",
        "--min-confidence",
        "0.5",
    )
    assert found["count"] == 5
    for hit in found["results"]:
        assert (hit["agent"], hit["project"]) == ("claude", "my-project")
        assert hit["confidence"] >= 0.5


def test_search_with_no_results_is_an_empty_list(cli: MemoryCli) -> None:
    ran = cli("search", "nonexistent topic")
    assert ran.code == 0
    assert json.loads(ran.stdout) == {"results": [], "count": 0}
    # issue 28: the default relevance floor: memories that have nothing to do with the query are not results either
    cli.ok("create", "User prefers Python for scripting")
    cli.ok("create", "The office coffee machine is broken again")
    assert cli.ok("search", "nonexistent topic") == {"results": [], "count": 0}
    related = cli.ok("search", "which programming language does the user like?")["results"]
    assert related[0]["content"] == "User prefers Python for scripting" and 0 < related[0]["similarity"] <= 1
    # issue 48: the shipped model thins no answer (no rule kept recall on every held-out conversation:
    # BENCHMARKS.md); what is related comes first, with a higher relevance than the coffee machine, 0 to 1
    assert all(hit["relevance"] < related[0]["relevance"] for hit in related[1:]), related
    assert 0.5 < related[0]["relevance"] <= 1
    broad = cli.ok("search", "what do you know about me?")  # names no subject: the store's memories, marked
    assert broad["broad"] is True and broad["count"] == 2
    text = cli("search", "which programming language does the user like?", "--format", "text").stdout
    assert "relevance 0." in text or "relevance 1.00" in text
    assert "similarity" not in text and "score" not in text  # one number a person reads
    assert cli.ok("search", "nonexistent topic", "--min-similarity", "0")["count"] == 2  # off: the nearest memories


def test_get_existing_memory_has_fields_and_confidence(cli: MemoryCli) -> None:
    created = cli.ok("create", "Deploys happen on Fridays", "--decay", "contextual")
    got = cli.ok("get", created["id"])
    assert got["id"] == created["id"] and got["content"] == "Deploys happen on Fridays"
    assert got["decay_policy"] == "contextual" and 0.99 <= got["confidence"] <= 1.0


def test_get_non_existent_memory(cli: MemoryCli) -> None:
    for ref in ("3f2b1c4d-0000-4000-8000-000000000000", "invalid-id"):  # one server for both (a start is seconds)
        assert cli.fails("get", ref) == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}, ref


def test_reinforce_a_reinforceable_memory(cli: MemoryCli) -> None:
    created = cli.ok("create", "Prefers dark mode", "--decay", "reinforceable")
    reinforced = cli.ok("reinforce", created["id"])
    assert reinforced["id"] == created["id"] and reinforced["confidence"] == 1.0
    assert reinforced["last_reinforced_at"].endswith("Z")
    assert cli.ok("get", created["id"])["last_reinforced_at"] == reinforced["last_reinforced_at"]


def test_reinforce_refuses_stable_and_contextual(cli: MemoryCli) -> None:
    for policy in ("stable", "contextual"):  # one server for both (a start is seconds)
        created = cli.ok("create", "x", "--decay", policy)
        error = cli.fails("reinforce", created["id"])
        assert f"{policy.capitalize()} memories cannot be reinforced" in error["error"]


def test_delete_existing_then_again(cli: MemoryCli) -> None:
    created = cli.ok("create", "Temporary secret plan")
    assert cli.ok("delete", created["id"]) == {"id": created["id"], "deleted": True}
    assert "already deleted" in cli.fails("delete", created["id"])["error"]
    assert cli.fails("get", created["id"]) == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}
    assert cli.ok("search", "secret plan")["count"] == 0


def test_status_healthy(cli: MemoryCli) -> None:
    cli.ok("create", "one")
    status = cli.ok("status")
    assert status["status"] == "healthy" and status["memory_count"] == 1
    assert "warnings" not in status and "problems" not in status, status  # the 0755 folder holds nothing readable
    if cli.backend == "chroma":
        assert status["collection"] == cli.env.get("MEMORY_COLLECTION", "memories") and status["chromadb_host"]
        if "CHROMADB_HOST" in cli.env:
            assert status["chromadb_host"] == f"{cli.env['CHROMADB_HOST']}:{cli.env['CHROMADB_PORT']}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_status_unhealthy_and_commands_with_an_unreachable_chroma(cli: MemoryCli) -> None:
    port = _free_port()
    env = {"CHROMADB_HOST": "127.0.0.1", "CHROMADB_PORT": str(port), "MEMORY_BACKEND": "chroma"}
    status = cli.fails("status", env=env)
    message = f"Cannot connect to ChromaDB at 127.0.0.1:{port}. Is Docker running?"
    assert status["status"] == "unhealthy" and status["error"] == message
    assert cli.fails("create", "x", env=env) == {"error": message, "code": "BACKEND_UNAVAILABLE"}
    assert cli.fails("search", "x", env=env) == {"error": message, "code": "BACKEND_UNAVAILABLE"}


def test_every_command_accepts_text_format(cli: MemoryCli) -> None:
    created = cli.ok("create", "Likes tea", "--decay", "reinforceable")
    for args in (
        ["search", "tea"],
        ["get", created["id"]],
        ["reinforce", created["id"]],
        ["status"],
        ["delete", created["id"]],
    ):
        ran = cli(*args, "--format", "text")
        assert ran.code == 0 and ran.stdout.strip()
        with pytest.raises(json.JSONDecodeError):
            json.loads(ran.stdout)


def test_a_paraphrase_finds_the_right_memory_among_unrelated_ones(cli: MemoryCli) -> None:
    """Proof that the embeddings are real: no word of the query is in the memory it must find."""
    target = cli.ok("create", "User prefers Python for scripting", "--project", "my-project")
    for text in (
        "The weekly team meeting moved to Thursday afternoon",
        "The office coffee machine is broken again",
        "Deployment to production requires two approvals",
        "The cat's vet appointment is next month",
    ):
        cli.ok("create", text, "--project", "my-project")
    found = cli.ok(
        "search", "which programming language does the user like?", "--project", "my-project", "--limit", "1"
    )
    assert found["results"][0]["id"] == target["id"]
