"""Near-duplicates at the doors (issue 41) with the shipped model and its calibrated threshold: the `memory` command,
the agent tools' manage_memory, the LangGraph store; MCP's and REST's are in their own modules (one server each)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.agents.langmem_tools import create_manage_memory_tool
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.e2e.conftest import MemoryCli

pytestmark = pytest.mark.slow  # the real model: the threshold is its own

DARK = "User prefers dark mode"
DARK_AGAIN = "Dark mode is the user's preferred theme"  # over the shipped model's threshold (cosine 0.86)
LIGHT = "User switched to light mode for presentations"  # the same subject, another fact
# the done-when of issue 41: "User prefers dark mode" five times in five wordings
FIVE_WORDINGS = (
    DARK,
    "The user likes dark themes in their editor",
    "User wants a dark colour scheme in every app",
    DARK_AGAIN,
    "The user always switches their tools to dark mode",
)


@pytest.fixture
def service(tmp_path: Path) -> MemoryService:
    settings = load_settings({"data_dir": str(tmp_path / "data"), "server": "off"}, {"HOME": str(tmp_path)}).unwrap()
    made = build_service(settings).unwrap()
    assert made.context.policy.duplicate_similarity is not None, "the shipped model carries a calibrated threshold"
    return made


def live(service: MemoryService) -> list[str]:
    return sorted(view.memory.content for view in service.list().unwrap().memories)


def test_cli_names_the_duplicate_skips_by_flag_and_refuses_an_unknown_policy(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "chroma")
    first = cli.ok("add", "preferences/theme", "--content", DARK)
    kept = cli.ok("create", DARK_AGAIN)
    assert kept["on_duplicate"] == "kept" and kept["id"] != first["id"]
    assert kept["duplicates"][0]["id"] == first["id"] and kept["duplicates"][0]["path"] == "preferences/theme"
    skipped = cli.ok("create", DARK_AGAIN, "--on-duplicate", "skip")
    assert (skipped["id"], skipped["on_duplicate"]) == (kept["id"], "skipped")  # the most similar: the same text
    other = cli.ok("create", LIGHT, "--on-duplicate", "update")
    assert "duplicates" not in other and other["content"] == LIGHT
    error = cli.fails("create", DARK, "--on-duplicate", "merge")
    assert "keep" in error["error"] and "update" in error["error"]
    assert cli.ok("status")["memory_count"] == 3


def test_cli_text_says_what_each_policy_did(tmp_path: Path) -> None:
    """Issue 50: `--format text` says skipped / merged into / created beside, naming the near-duplicate."""
    cli = MemoryCli(tmp_path, "chroma")
    first = cli.ok("add", "preferences/theme", "--content", DARK)
    named = rf"{first['id']} \(preferences/theme, similarity [01]\.\d\d\)"

    def text(*args: str) -> str:
        ran = cli(*args, "--format", "text")
        assert ran.code == 0, ran.stderr
        return ran.stdout

    kept = text("create", DARK_AGAIN, "--on-duplicate", "keep")
    assert re.match(rf"Created memory [0-9a-f-]{{36}} \(a near-duplicate of {named} kept beside it\)\n", kept), kept
    assert re.match(
        rf"Skipped: a near-duplicate of {named} and 1 more; nothing stored\n",
        text("create", DARK, "--on-duplicate", "skip"),
    )
    merged = text("create", DARK, "--on-duplicate", "update")
    assert re.match(rf"Merged into {first['id']} \(preferences/theme, similarity 1\.00\)", merged), merged
    assert f"\n  {DARK}\n" in merged  # then the memory it names, as it now reads
    assert text("create", LIGHT).startswith("Created memory ")  # no duplicate: as before
    assert cli.ok("status")["memory_count"] == 3


def test_manage_memory_with_update_keeps_one_memory_for_one_fact(service: MemoryService) -> None:
    manage = create_manage_memory_tool(("user", "u1"), service=service)
    first = manage.invoke({"content": DARK})
    again = manage.invoke({"content": DARK_AGAIN, "on_duplicate": "update"})
    assert again.endswith(f"updated memory {first.removeprefix('created memory ')}")  # LangMem's: the id last
    assert live(service) == [DARK_AGAIN]
    kept = manage.invoke({"content": DARK})  # the setting's policy: keep, named so the agent updates next time
    assert "already said this" in kept and "update that one" in kept
    assert "on_duplicate" in manage.description or "on_duplicate" in str(manage.args_schema)


@pytest.mark.xfail(
    strict=True,
    reason="finding (issue 41): at the shipped model's calibrated threshold (precision first) MiniLM puts several "
    "of these wordings under it (best match 0.61-0.65; four memories are left): BENCHMARKS.md, near-duplicates",
)
def test_five_wordings_of_one_preference_through_manage_memory_with_update_leave_one_memory(
    service: MemoryService,
) -> None:
    manage = create_manage_memory_tool(("user", "u1"), service=service)
    for wording in FIVE_WORDINGS:
        manage.invoke({"content": wording, "on_duplicate": "update"})
    assert len(live(service)) == 1


def test_langgraph_puts_are_kept_by_key_whatever_the_setting(tmp_path: Path) -> None:
    pytest.importorskip("langgraph.store.base")
    from agent_memory.entrypoints.langgraph.store import MemoryStore

    flags = {"data_dir": str(tmp_path / "data"), "server": "off", "on_duplicate": "skip"}
    service = build_service(load_settings(flags, {"HOME": str(tmp_path)}).unwrap()).unwrap()
    store = MemoryStore(service)
    store.put(("users", "u1"), "theme", {"text": DARK})
    store.put(("users", "u1"), "theme-again", {"text": DARK})
    assert {item.key for item in store.search(("users", "u1"))} == {"theme", "theme-again"}
    assert service.context.policy.duplicate_similarity is not None  # the check ran, and kept both
