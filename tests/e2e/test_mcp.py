"""`memory mcp` end to end: the installed command driven by the official MCP client over stdio and HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult

from tests.e2e.conftest import MEMORY, MODES, MemoryCli, expired_line
from tests.http_raw import UNPARSABLE_REQUESTS, unparsable_answers
from tests.isolation import empty_config

pytestmark = [pytest.mark.slow, pytest.mark.server]

EVERY_TOOL = {
    "add_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "restore_memory",
    "find_duplicates",
    "remove_memory",
    "move_memory",
    "reinforce_memory",
    "list_memories",
    "get_recent_memories",
    "search_memories",
    "prune_memories",
    "reindex_store",
    "list_stores",
    "create_store",
    "create_category",
    "set_category_description",
    "delete_category",
    "manage_memory",
    "search_memory",
}


def server_env(home: Path, mode: str = "direct") -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MEMORY_CONFIG": empty_config(home),
        "MEMORY_DATA_DIR": str(home / "data"),
        "MEMORY_BACKEND": "chroma",
        "MEMORY_SERVER": "auto" if mode == "served" else "off",
        "ANONYMIZED_TELEMETRY": "False",
    }


class Mcp:
    """A connected MCP client session, called synchronously through a blocking portal."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, cli: MemoryCli | None = None) -> None:
        self.portal = portal
        self.session = session
        self.cli = cli  # the `memory` command on the same data directory (for what no tool does: import)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self.portal.call(lambda: self.session.call_tool(name, arguments or {}, read_timeout_seconds=120))

    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.portal.call(self.session.list_tools).tools}

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        result = self.call(name, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, text
        return json.loads(text) if text[:1] in "[{" else text

    def fails(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        result = self.call(name, arguments)
        text: str = result.content[0].text  # type: ignore[union-attr]
        assert result.is_error, text
        return text


@asynccontextmanager
async def stdio_session(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[ClientSession]:
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.fixture(scope="module", params=MODES)
def mcp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mcp]:
    """One `memory mcp` process (stdio) for the whole module: each start loads the embedding model. "served": the
    process is a thin client and the session runs in the data directory's memory server."""
    home = tmp_path_factory.mktemp("mcp-home")
    params = StdioServerParameters(command=str(MEMORY), args=["mcp"], env=server_env(home, request.param))
    with (
        (home / "server.log").open("w") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_session(params, errlog)) as session,
    ):
        yield Mcp(portal, session, MemoryCli(home, "chroma", mode=request.param))
    assert "Traceback" not in (home / "server.log").read_text()
    if request.param == "served":
        MemoryCli(home, "chroma", mode="served").stop_servers()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- the tool list ---------------------------------------------------------------------------------


def test_every_tool_is_listed_with_a_description_and_a_schema(mcp: Mcp) -> None:
    listed = {tool.name: tool for tool in mcp.portal.call(mcp.session.list_tools).tools}
    assert set(listed) == EVERY_TOOL
    for tool in listed.values():
        assert tool.description and len(tool.description) > 20
        assert tool.input_schema["type"] == "object"
    assert set(listed["add_memory"].input_schema["required"]) == {"path", "content"}
    assert {"tags", "expires_at", "citations", "source", "namespace", "store"} <= set(
        listed["add_memory"].input_schema["properties"]
    )
    assert set(listed["move_memory"].input_schema["required"]) == {"from", "to"}
    assert "global" in listed["search_memories"].input_schema["properties"]
    assert listed["manage_memory"].input_schema["properties"]["action"]["enum"] == ["create", "update", "delete"]
    recent_limit = listed["get_recent_memories"].input_schema["properties"]["limit"]
    assert (recent_limit["minimum"], recent_limit["maximum"], recent_limit["default"]) == (1, 100, 5)
    assert listed["get_memory"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert listed["remove_memory"].annotations.destructive_hint is True  # type: ignore[union-attr]


def test_resources_show_the_stores_a_stores_index_and_one_memory(mcp: Mcp) -> None:
    from mcp.shared.exceptions import MCPError

    store = unique("res")
    made = mcp.ok("add_memory", {"path": "projects/alpha/plan", "content": "Ship alpha in May", "store": store})
    listed = mcp.portal.call(mcp.session.list_resources).resources
    templates = mcp.portal.call(mcp.session.list_resource_templates).resource_templates
    assert [str(resource.uri) for resource in listed] == ["memory://stores"]
    assert {template.uri_template for template in templates} == {
        "memory://{store}/index",
        "memory://{store}/memories/{+path}",
    }

    def read(uri: str) -> Any:
        contents = mcp.portal.call(lambda: mcp.session.read_resource(uri)).contents
        return json.loads(contents[0].text)  # type: ignore[union-attr]

    assert {"name": store, "memory_count": 1, "deleted_count": 0, "expired_count": 0} in read("memory://stores")[
        "stores"
    ]
    index = read(f"memory://{store}/index")
    assert [(m["path"], m["id"]) for m in index["memories"]] == [("projects/alpha/plan", made["id"])]
    assert [sub["path"] for sub in index["subcategories"]] == ["projects"]
    assert read(f"memory://{store}/memories/projects/alpha/plan")["content"] == "Ship alpha in May"
    assert read(f"memory://{store}/memories/{made['id']}")["path"] == "projects/alpha/plan"
    with pytest.raises(MCPError, match="MEMORY_NOT_FOUND"):
        read(f"memory://{store}/memories/projects/alpha/nothing")
    with pytest.raises(MCPError, match="STORE_NOT_FOUND"):
        read(f"memory://{unique('nostore')}/index")


def test_prompts_recall_memories_and_say_how_to_remember(mcp: Mcp) -> None:
    from mcp.shared.exceptions import MCPError

    store = unique("prompt")
    made = mcp.ok(
        "add_memory", {"path": "projects/alpha/plan", "content": "Ship the alpha kayak in May", "store": store}
    )
    capabilities = mcp.session.server_capabilities
    assert capabilities is not None and capabilities.prompts is not None
    listed = {prompt.name: prompt for prompt in mcp.portal.call(mcp.session.list_prompts).prompts}
    assert set(listed) == {"recall", "remember"}
    arguments = {argument.name: argument.required for argument in listed["recall"].arguments or []}
    assert arguments == {"topic": True, "store": False}

    def prompt(name: str, arguments: dict[str, str]) -> str:
        messages = mcp.portal.call(lambda: mcp.session.get_prompt(name, arguments)).messages
        assert [message.role for message in messages] == ["user"]
        return messages[0].content.text  # type: ignore[union-attr]

    recalled = prompt("recall", {"topic": "kayak", "store": store})
    facts = json.loads(recalled[recalled.index("[") : recalled.rindex("]") + 1])
    assert [(fact["path"], fact["content"]) for fact in facts] == [
        ("projects/alpha/plan", "Ship the alpha kayak in May")
    ]
    assert 0 < facts[0]["confidence"] <= 1 and made["id"] not in recalled
    empty = unique("empty")
    mcp.ok("create_store", {"name": empty})
    assert prompt("recall", {"topic": "kayak", "store": empty}).startswith("No memory")
    remember = prompt("remember", {"fact": "The beta ships in June", "store": store})
    assert "The beta ships in June" in remember and "projects (1 memories)" in remember and "add_memory" in remember
    assert "no categories yet" in prompt("remember", {"fact": "x", "store": unique("fresh")})
    for name, given, expected in [
        ("recollect", {"topic": "x"}, "there is no prompt 'recollect'"),
        ("recall", {}, "recall needs topic"),
        ("recall", {"topic": "x", "limit": "3"}, "recall does not take limit"),
        ("recall", {"topic": "x", "store": unique("nostore")}, "STORE_NOT_FOUND"),
    ]:
        with pytest.raises(MCPError, match=expected) as refused:
            mcp.portal.call(mcp.session.get_prompt, name, given)
        assert refused.value.message.startswith(("INVALID_INPUT", "STORE_NOT_FOUND"))


# --- add / get / update / remove / move / reinforce ------------------------------------------------


def test_add_creates_store_and_category_and_get_returns_citations(mcp: Mcp) -> None:
    store = unique("auto")
    added = mcp.ok(
        "add_memory",
        {
            "path": "Projects/Agent Memory/Types",
            "content": "Types live in core",
            "tags": ["arch"],
            "expires_at": "2099-01-01T00:00:00Z",
            "citations": ["src/core/types.ts:17", "https://docs.example.com"],
            "source": "code review",
            "store": store,
        },
    )
    assert added["path"] == "projects/agent-memory/types" and added["store"] == store
    assert store in {s["name"] for s in mcp.ok("list_stores")["stores"]}
    got = mcp.ok("get_memory", {"path_or_id": "projects/agent-memory/types", "store": store})
    assert got["citations"] == ["src/core/types.ts:17", "https://docs.example.com"]
    assert (got["tags"], got["source"], got["expires_at"]) == (["arch"], "code review", "2099-01-01T00:00:00Z")
    assert mcp.ok("get_memory", {"path_or_id": added["id"], "store": store})["id"] == added["id"]
    listing = mcp.ok("list_memories", {"category": "projects", "store": store})
    assert [s["path"] for s in listing["subcategories"]] == ["projects/agent-memory"]


def test_get_without_citations_has_an_empty_list_and_missing_is_memory_not_found(mcp: Mcp) -> None:
    path = f"{unique('plain')}/note"
    mcp.ok("add_memory", {"path": path, "content": "no sources"})
    assert mcp.ok("get_memory", {"path_or_id": path})["citations"] == []
    error = mcp.fails("get_memory", {"path_or_id": "notes/x-does-not-exist"})
    assert error.startswith("MEMORY_NOT_FOUND: Memory not found (path notes/x-does-not-exist)")
    assert "list_memories" in error
    taken = mcp.fails("add_memory", {"path": path, "content": "again"})
    assert taken.startswith("DESTINATION_EXISTS:")
    assert mcp.fails("add_memory", {"path": "../etc/passwd", "content": "x"}).startswith("INVALID_PATH:")


def test_expired_memories_are_hidden_unless_asked(mcp: Mcp) -> None:
    path = f"{unique('expiry')}/gone"
    added = mcp.ok("add_memory", {"path": path, "content": "old news", "expires_at": "2000-01-01T00:00:00Z"})
    assert added["expires_at"] == "2000-01-01T00:00:00Z"  # an expiry already past expires it at once (issue 50)
    assert mcp.fails("get_memory", {"path_or_id": path}).startswith("MEMORY_EXPIRED:")
    assert mcp.ok("get_memory", {"path_or_id": path, "include_expired": True})["content"] == "old news"


def test_update_content_metadata_expiry_and_citations(mcp: Mcp) -> None:
    path = f"{unique('upd')}/note"
    added = mcp.ok(
        "add_memory",
        {"path": path, "content": "v1", "citations": ["a.ts:1"], "tags": ["x"], "expires_at": "2099-01-01T00:00:00Z"},
    )
    changed = mcp.ok("update_memory", {"path_or_id": path, "content": "v2"})
    assert changed["content"] == "v2" and changed["updated_at"] > added["updated_at"]
    assert changed["citations"] == ["a.ts:1"] and changed["tags"] == ["x"]  # omitted keeps
    tagged = mcp.ok("update_memory", {"path_or_id": path, "tags": ["y", "z"]})
    assert tagged["tags"] == ["y", "z"] and tagged["content"] == "v2"
    assert mcp.ok("update_memory", {"path_or_id": path, "clear_expiry": True})["expires_at"] is None
    assert mcp.ok("update_memory", {"path_or_id": path, "citations": ["new/path.ts:5"]})["citations"] == [
        "new/path.ts:5"
    ]
    assert mcp.ok("update_memory", {"path_or_id": added["id"], "citations": []})["citations"] == []
    assert mcp.fails("update_memory", {"path_or_id": path}).startswith("INVALID_INPUT: Nothing to update")


def test_remove_deletes_for_good(mcp: Mcp) -> None:
    path = f"{unique('rm')}/note"
    added = mcp.ok("add_memory", {"path": path, "content": "bye"})
    assert mcp.ok("remove_memory", {"path_or_id": path}) == {"id": added["id"], "path": path, "removed": True}
    assert mcp.fails("get_memory", {"path_or_id": added["id"]}).startswith("MEMORY_NOT_FOUND:")
    assert mcp.fails("remove_memory", {"path_or_id": path}).startswith("MEMORY_NOT_FOUND:")


def test_move_gives_a_new_path_and_refuses_a_taken_one(mcp: Mcp) -> None:
    category = unique("mv")
    mcp.ok("add_memory", {"path": f"{category}/a", "content": "first"})
    mcp.ok("add_memory", {"path": f"{category}/b", "content": "second"})
    moved = mcp.ok("move_memory", {"from": f"{category}/a", "to": f"{category}/c"})
    assert moved["path"] == f"{category}/c"
    assert mcp.fails("move_memory", {"from": f"{category}/c", "to": f"{category}/b"}).startswith("DESTINATION_EXISTS:")


def test_reinforce_needs_a_reinforceable_memory(mcp: Mcp) -> None:
    category = unique("rf")
    added = mcp.ok("add_memory", {"path": f"{category}/used", "content": "x", "decay_policy": "reinforceable"})
    reinforced = mcp.ok("reinforce_memory", {"id": added["id"]})
    assert reinforced["last_reinforced_at"] is not None and reinforced["confidence"] == 1.0
    mcp.ok("add_memory", {"path": f"{category}/fixed", "content": "y"})
    assert mcp.fails("reinforce_memory", {"id": f"{category}/fixed"}).startswith("INVALID_OPERATION: Stable")


# --- list / recent / search / prune / reindex / stores / categories --------------------------------


def test_recent_is_newest_first_within_its_limit(mcp: Mcp) -> None:
    category = unique("recent")
    for n in range(3):
        mcp.ok("add_memory", {"path": f"{category}/n{n}", "content": f"note {n}"})
    recent = mcp.ok("get_recent_memories", {"limit": 2, "category": category})
    assert [m["path"] for m in recent["memories"]] == [f"{category}/n2", f"{category}/n1"]
    assert mcp.fails("get_recent_memories", {"limit": 101}).startswith("INVALID_INPUT: limit")
    assert mcp.fails("list_memories", {"category": unique("nothing")}).startswith("CATEGORY_NOT_FOUND:")


def test_search_memories_finds_by_meaning_and_applies_filters(mcp: Mcp) -> None:
    category = unique("search")
    mcp.ok("add_memory", {"path": f"{category}/editor", "content": "The user prefers dark mode in every editor"})
    mcp.ok("add_memory", {"path": f"{category}/city", "content": "The user lives in Lisbon", "tags": ["home"]})
    found = mcp.ok("search_memories", {"query": "which colour theme does the user like?", "category": category})
    assert found["results"][0]["path"] == f"{category}/editor"
    assert {"relevance", "similarity", "confidence", "score"} <= set(found["results"][0])
    assert found["broad"] is False and all(0.0 <= hit["relevance"] <= 1.0 for hit in found["results"])
    # the lives-in-Lisbon memory has nothing to do with colour themes: it ranks below the editor, less relevant (issue
    # 48: the shipped model thins no answer, as no rule kept recall on every held-out conversation)
    assert all(r["relevance"] < found["results"][0]["relevance"] for r in found["results"][1:]), found
    broad = mcp.ok("search_memories", {"query": "what do you know about me?", "category": category})
    assert broad["broad"] is True and {r["path"] for r in broad["results"]} == {
        f"{category}/editor",
        f"{category}/city",
    }
    tagged = mcp.ok("search_memories", {"query": "where does the user live", "tags": ["home"], "global": False})
    assert [r["path"] for r in tagged["results"]] == [f"{category}/city"]
    keyword = mcp.ok("search_memories", {"query": "Lisbon", "mode": "keyword", "category": category})
    assert keyword["results"][0]["path"] == f"{category}/city"
    assert mcp.fails("search_memories", {"query": "   "}).startswith("INVALID_INPUT:")
    assert mcp.fails("search_memories", {"query": "x", "min_confidence": 2}).startswith("INVALID_INPUT: min_confidence")


def test_prune_lists_then_removes_expired_memories(mcp: Mcp) -> None:
    store = unique("prune")
    mcp.ok("add_memory", {"path": "new/one", "content": "fresh", "store": store})
    assert mcp.cli is not None
    mcp.cli.ok("import", "--store", store, stdin=expired_line("old/one", "expired"))
    dry = mcp.ok("prune_memories", {"dry_run": True, "store": store})
    assert dry["dry_run"] is True and [p["path"] for p in dry["pruned"]] == ["old/one"]
    assert mcp.ok("list_memories", {"store": store, "include_expired": True})["count"] == 2
    assert mcp.ok("prune_memories", {"store": store})["count"] == 1
    assert mcp.ok("list_memories", {"store": store, "include_expired": True})["count"] == 1


def test_reindex_re_embeds_a_store(mcp: Mcp) -> None:
    store = unique("reindex")
    mcp.ok("add_memory", {"path": "a/b", "content": "something", "store": store})
    report = mcp.ok("reindex_store", {"store": store})
    assert report["store"] == store and report["memory_count"] == 1 and report["embedding_model"]
    assert mcp.fails("reindex_store", {"store": unique("missing")}).startswith("STORE_NOT_FOUND:")


def test_stores_are_listed_and_created(mcp: Mcp) -> None:
    name = unique("work")
    assert mcp.ok("create_store", {"name": name}) == {"name": name, "memory_count": 0, "created": True}
    assert {"name": name, "memory_count": 0, "deleted_count": 0, "expired_count": 0} in mcp.ok("list_stores")["stores"]
    assert mcp.fails("create_store", {"name": name}).startswith("DESTINATION_EXISTS:")
    assert mcp.fails("create_store", {"name": "Bad Name!"}).startswith("INVALID_INPUT: Invalid store name")


def test_categories_are_created_described_and_deleted(mcp: Mcp) -> None:
    root = unique("cat")
    created = mcp.ok("create_category", {"path": f"{root}/sub", "description": "things"})
    assert created == {"path": f"{root}/sub", "memory_count": 0, "description": "things"}
    described = mcp.ok("set_category_description", {"path": f"{root}/sub", "description": "better"})
    assert described["description"] == "better"
    too_long = mcp.fails("set_category_description", {"path": f"{root}/sub", "description": "x" * 501})
    assert too_long.startswith("INVALID_INPUT:")
    mcp.ok("add_memory", {"path": f"{root}/sub/note", "content": "inside"})
    deleted = mcp.ok("delete_category", {"path": f"{root}/sub"})
    assert (deleted["deleted"], deleted["memory_count"], deleted["restorable"]) == (True, 1, True)
    assert mcp.fails("get_memory", {"path_or_id": f"{root}/sub/note"}).startswith("MEMORY_NOT_FOUND:")
    listed = mcp.ok("list_memories", {"category": root, "include_deleted": True})["memories"]
    assert [(m["path"], m["deleted"]) for m in listed] == [(f"{root}/sub/note", True)]
    assert mcp.ok("restore_memory", {"path_or_id": f"{root}/sub/note"})["content"] == "inside"
    purged = mcp.ok("delete_category", {"path": root, "purge": True})  # a root category, like any other
    assert (purged["memory_count"], purged["restorable"]) == (1, False)
    assert mcp.fails("restore_memory", {"path_or_id": f"{root}/sub/note"}).startswith("MEMORY_NOT_FOUND:")
    assert mcp.fails("delete_category", {"path": f"{root}/sub"}).startswith("CATEGORY_NOT_FOUND:")
    assert mcp.fails("set_category_description", {"path": unique("none"), "description": "d"}).startswith(
        "CATEGORY_NOT_FOUND:"
    )


# --- bad arguments -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("get_memory", {"path_or_id": 5}, "INVALID_INPUT: path_or_id"),
        ("get_memory", {}, "INVALID_INPUT: get_memory takes the memory as exactly one of path_or_id or path or id"),
        ("add_memory", {"path": "a/b"}, "INVALID_INPUT: content: Field required"),
        ("add_memory", {"path": "a/b", "content": "x", "tags": "not-a-list"}, "INVALID_INPUT: tags"),
        ("add_memory", {"path": "a/b", "content": "x", "decay_policy": "forever"}, "INVALID_INPUT: decay_policy"),
        ("add_memory", {"path": "a/b", "content": "x", "expires_at": "tomorrow"}, "INVALID_INPUT: expires_at"),
        ("update_memory", {"path_or_id": "a/b", "expires_at": "2026-13-45"}, "INVALID_INPUT: expires_at"),
        ("get_recent_memories", {"limit": "many"}, "INVALID_INPUT: limit"),
        ("search_memories", {"query": "x", "global": "sometimes"}, "INVALID_INPUT: global"),
        ("search_memories", {"query": "x", "mode": "fuzzy"}, "INVALID_INPUT: mode"),
        ("manage_memory", {"action": "explode", "user_id": "u"}, "INVALID_INPUT: action"),
        ("search_memory", {"query": "x", "user_id": "u", "filter": {"colour": "red"}}, "INVALID_INPUT: Unknown filter"),
    ],
)
def test_bad_arguments_are_tool_errors_and_the_server_keeps_answering(
    mcp: Mcp, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    assert expected in mcp.fails(tool, arguments)
    assert "stores" in mcp.ok("list_stores")


# --- the namespaced agent tools (spec 003) --------------------------------------------------------------


def test_manage_memory_create_update_delete(mcp: Mcp) -> None:
    user = {"user_id": unique("u")}
    created = mcp.ok("manage_memory", {"content": "User prefers green tea", **user})["result"]
    assert created.startswith("created memory ")
    memory_id = created.removeprefix("created memory ")
    assert mcp.ok("get_memory", {"path_or_id": memory_id})["namespace"] == ["user", user["user_id"]]
    updated = mcp.ok("manage_memory", {"action": "update", "id": memory_id, "content": "User prefers oolong", **user})
    assert updated == {"action": "update", "id": memory_id, "result": f"updated memory {memory_id}"}
    assert (
        mcp.ok("manage_memory", {"action": "delete", "id": memory_id, **user})["result"]
        == f"Deleted memory {memory_id}"
    )
    assert mcp.fails("manage_memory", {"action": "delete", **user}).startswith("INVALID_INPUT: delete needs the id")
    assert mcp.fails("manage_memory", {"content": "no tenant"}).startswith("INVALID_INPUT: No namespace")


def test_a_near_duplicate_is_named_and_updated_or_skipped_by_policy(mcp: Mcp) -> None:
    """Issue 41: the shipped model's calibrated threshold at the MCP door, on add_memory and manage_memory."""
    user = {"user_id": unique("u")}
    first = mcp.ok("manage_memory", {"content": "User prefers dark mode", **user})["id"]
    again = "Dark mode is the user's preferred theme"
    updated = mcp.call("manage_memory", {"content": again, "on_duplicate": "update", **user})
    assert updated.structured_content is not None and updated.structured_content["id"] == first
    assert mcp.ok("get_memory", {"path_or_id": first})["content"] == again
    assert mcp.fails("manage_memory", {"content": again, "on_duplicate": "merge", **user}).startswith("INVALID_INPUT")
    space = [unique("ns")]
    added = mcp.ok("add_memory", {"path": "preferences/theme", "content": again, "namespace": space})
    skipped = mcp.ok("add_memory", {"path": "preferences/ui", "content": "User prefers dark mode", "namespace": space,
                                    "on_duplicate": "skip"})  # fmt: skip
    assert (skipped["id"], skipped["on_duplicate"], skipped["duplicates"][0]["path"]) == (
        added["id"],
        "skipped",
        "preferences/theme",
    )
    assert "instead of adding twice" in next(
        tool.description or "" for tool in mcp.portal.call(mcp.session.list_tools).tools if tool.name == "add_memory"
    )


def test_agent_tools_isolate_tenants(mcp: Mcp) -> None:
    one, two = {"user_id": unique("u1")}, {"user_id": unique("u2")}
    mine = mcp.ok("manage_memory", {"content": "My favourite fruit is mango", **one})["id"]
    theirs = mcp.ok("manage_memory", {"content": "My favourite fruit is papaya", **two})["id"]
    assert [f["id"] for f in mcp.ok("search_memory", {"query": "favourite fruit", **one})["results"]] == [mine]
    assert [f["id"] for f in mcp.ok("search_memory", {"query": "favourite fruit", **two})["results"]] == [theirs]
    # their id is unknown in my namespace: as in LangMem, update creates mine and delete does nothing
    made = mcp.ok("manage_memory", {"action": "update", "id": theirs, "content": "hacked", **one})["result"]
    assert made.startswith("created memory ") and theirs not in made
    assert mcp.ok("manage_memory", {"action": "delete", "id": theirs, **one})["result"] == f"Deleted memory {theirs}"
    assert mcp.ok("get_memory", {"path_or_id": theirs})["content"] == "My favourite fruit is papaya"
    guarded = mcp.fails("get_memory", {"path_or_id": theirs, "namespace": ["user", one["user_id"]]})
    assert guarded.startswith("MEMORY_NOT_FOUND:")


def test_search_memory_with_namespace_lists_and_org_agents(mcp: Mcp) -> None:
    org = unique("acme")
    for agent, text in (("alpha", "Deploys happen on Tuesday"), ("beta", "Deploys need two approvals")):
        mcp.ok("manage_memory", {"content": text, "org_id": org, "agent_id": agent})
    whole_org = mcp.ok("search_memory", {"query": "deploys", "namespace": ["org", org]})["results"]
    assert {tuple(f["namespace"]) for f in whole_org} == {("org", org, "alpha"), ("org", org, "beta")}
    alpha = mcp.ok("search_memory", {"query": "deploys", "org_id": org, "agent_id": "alpha"})["results"]
    assert [f["content"] for f in alpha] == ["Deploys happen on Tuesday"]
    keys = set(alpha[0])
    assert keys == {"namespace", "id", "content", "metadata", "created_at", "updated_at", "score", "key", "value"}
    page = mcp.ok("search_memory", {"query": "deploys", "namespace": ["org", org], "limit": 1, "offset": 1})["results"]
    assert [f["id"] for f in page] == [whole_org[1]["id"]]


# --- streamable HTTP --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1].decode()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"memory mcp --transport http did not listen on {port} within {timeout} s")


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers=headers)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_streamable_http_transport(tmp_path: Path) -> None:
    port = free_port()
    token = "e2e-" + uuid.uuid4().hex
    process = subprocess.Popen(
        [str(MEMORY), "mcp", "--transport", "http", "--port", str(port)],
        env={**server_env(tmp_path), "MEMORY_API_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_port(port, process)
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(http_session(url, {"Authorization": f"Bearer {token}"})) as session,
        ):
            client = Mcp(portal, session)
            added = client.ok("add_memory", {"path": "notes/over-http", "content": "HTTP works", "citations": ["x"]})
            assert client.ok("get_memory", {"path_or_id": added["id"]})["citations"] == ["x"]
            error = client.fails("get_memory", {"path_or_id": "notes/x"})
            assert error.startswith("MEMORY_NOT_FOUND: Memory not found (path notes/x)")
        refusals = http_refusals(url, token)
        unparsable = unparsable_answers(port)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert b"Traceback" not in stderr
    assert refusals == {
        "no token": (401, "UNAUTHORIZED"),
        "wrong token": (401, "UNAUTHORIZED"),
        "foreign host": (421, "MISDIRECTED_REQUEST"),
        "foreign origin": (403, "FORBIDDEN_ORIGIN"),
        "text/plain": (415, "INVALID_INPUT"),
    }
    assert unparsable == {name: (400, "application/json", "INVALID_INPUT") for name in UNPARSABLE_REQUESTS}


def http_refusals(url: str, token: str) -> dict[str, tuple[int, str]]:
    """What the HTTP door answers (status, code) to requests any local process or web page could send."""
    stream = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    auth = {**stream, "Authorization": f"Bearer {token}"}
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    attempts = {
        "no token": stream,
        "wrong token": {**stream, "Authorization": "Bearer wrong"},
        "foreign host": {**auth, "Host": "attacker.example"},
        "foreign origin": {**auth, "Origin": "http://evil.example"},
        "text/plain": {**auth, "Content-Type": "text/plain"},
    }
    answers = {}
    for name, headers in attempts.items():
        response = httpx.post(url, content=body, headers=headers, timeout=30)
        answers[name] = (response.status_code, response.json()["code"])
    return answers


def test_http_beyond_loopback_without_a_token_exits_1_with_a_json_error(tmp_path: Path) -> None:
    try:
        done = subprocess.run(
            [str(MEMORY), "mcp", "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
            env=server_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("`memory mcp --transport http --host 0.0.0.0` without a token started serving")
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert "MEMORY_API_TOKEN" in json.loads(done.stderr)["error"]


# --- starting the server --------------------------------------------------------------------------


def test_bad_settings_or_transport_fail_as_json_errors_before_serving(cli: MemoryCli) -> None:
    assert "Unknown backend" in cli.fails("mcp", env={"MEMORY_BACKEND": "punched-cards"})["error"]
    assert "invalid choice" in cli.fails("mcp", "--transport", "carrier-pigeon")["error"]
    assert "invalid int value" in cli.fails("mcp", "--transport", "http", "--port", "eighty")["error"]
