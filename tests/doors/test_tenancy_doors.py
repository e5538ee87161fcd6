"""Two tenants through every REST route and MCP tool: no reads, writes, deletions or existence hints across them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import anyio
import pytest
from litestar.testing import TestClient
from mcp.types import CallToolResult

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog, InMemoryKeywordIndex
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.mcp.server import build_mcp_server
from agent_memory.entrypoints.rest.app import build_app
from agent_memory.entrypoints.token_tenancy import Tenancy
from tests.unit.conftest import T0

ALICE, BOB = ("user", "alice"), ("user", "bob")
TOKEN_A, TOKEN_B = "token-alice-0123456789", "token-bob-0123456789"
BASE = "http://127.0.0.1:8080"
SECRET = "platypus"  # only Bob's memories hold this word
MODES = ("hybrid", "semantic", "keyword")


@pytest.fixture
def shared(catalog: InMemoryCatalog, clock: FixedClock) -> MemoryService:
    """One store, hybrid search on: Bob's memories sit next to Alice's in every index."""
    return MemoryService(catalog=catalog, embedder=HashingEmbedder(), clock=clock, keywords=InMemoryKeywordIndex())


@pytest.fixture
def bob_ids(shared: MemoryService, clock: FixedClock) -> dict[str, str]:
    """Bob's memories: at paths Alice will use too, tagged, scoped and expiring like hers."""
    bob = shared.within(BOB).unwrap()
    common = {"agent": "carol", "project": "p", "type": "fact", "tags": ("t",)}
    made = {
        "secret": bob.add(CreateMemory(content=f"Bob's {SECRET} secret", path="notes/secret", **common)),  # type: ignore[arg-type]
        "team": bob.add(CreateMemory(content=f"Bob's {SECRET} team", path="shared/team/plan", **common)),  # type: ignore[arg-type]
        "old": bob.add(
            CreateMemory(content=f"Bob's {SECRET} old", path="notes/old", expires_at=T0 + timedelta(hours=1))
        ),
        "loose": bob.create(CreateMemory(content=f"Bob's {SECRET} loose", decay_policy="reinforceable")),
    }
    return {name: view.unwrap().memory.id for name, view in made.items()}


def bob_untouched(shared: MemoryService, ids: dict[str, str]) -> None:
    bob = shared.within(BOB).unwrap()
    for memory_id in ids.values():
        memory = bob.get(memory_id, include_expired=True).unwrap().memory
        assert SECRET in memory.content and not memory.deleted and memory.namespace == BOB


def no_hint(text: str, ids: dict[str, str]) -> None:
    assert SECRET not in text and "bob" not in text
    assert all(memory_id not in text for memory_id in ids.values())


# --- REST, one token per tenant ---------------------------------------------------------------------------


@pytest.fixture
def alice_rest(shared: MemoryService) -> Iterator[TestClient[Any]]:
    tenancy = Tenancy(tokens=((TOKEN_A, ALICE), (TOKEN_B, BOB)))
    app = build_app(shared, tenancy=tenancy)
    with TestClient(app, base_url=BASE) as client:
        client.headers["Authorization"] = f"Bearer {TOKEN_A}"
        yield client


def test_rest_alice_never_reaches_bobs_memories(
    alice_rest: TestClient[Any], shared: MemoryService, clock: FixedClock, bob_ids: dict[str, str]
) -> None:
    client = alice_rest
    refs = [*bob_ids.values(), "notes/secret", "shared/team/plan", "notes/old"]
    for ref in refs:
        for method, url, body in (
            ("GET", f"/memories/{ref}", None),
            ("GET", f"/memories/{ref}?include_expired=true", None),
            ("PATCH", f"/memories/{ref}", {"content": "pwned"}),
            ("DELETE", f"/memories/{ref}", None),
            ("DELETE", f"/memories/{ref}?hard=true", None),
            ("POST", f"/memories/{ref}/reinforce", None),
            ("POST", f"/memories/{ref}/move", {"destination": "mine/now"}),
        ):
            response = client.request(method, url, json=body)
            assert response.status_code == 404, (method, url, response.text)
            if ref.count("-") != 4:  # by path: not even Bob's id comes back
                no_hint(response.text, bob_ids)
    for guard in ("", "user", "user/bob", "/"):
        response = client.get(f"/memories/{bob_ids['secret']}?namespace={guard}")
        # an empty value is refused before any route runs (400, issue 50), the others by the guard's check (422)
        assert response.status_code == (400 if guard == "" else 422), response.text
        assert response.json()["code"] == "INVALID_INPUT"
    clock.advance(hours=2)
    listings = [
        client.get("/memories"),
        client.get("/memories?include_expired=true"),
        client.get("/memories?category=shared"),
        client.get("/recent?include_expired=true"),
        client.post("/prune", json={"dry_run": True}),
        client.get("/stores"),
        client.get("/status"),
    ]
    for response in listings:
        assert response.status_code in (200, 404), response.text
        no_hint(response.text, bob_ids)
    assert client.get("/stores").json()["stores"][0]["memory_count"] == 0
    assert client.post("/prune").json()["count"] == 0
    assert client.delete("/categories/shared/team").status_code == 404
    bob_untouched(shared, bob_ids)


@pytest.mark.parametrize("mode", MODES)
def test_rest_search_never_answers_with_bobs_memories(
    alice_rest: TestClient[Any], bob_ids: dict[str, str], mode: str
) -> None:
    client = alice_rest
    client.post("/memories", json={"content": "Alice writes about otters", "agent": "carol", "tags": ["t"]})
    for filters in ({}, {"agent": "carol"}, {"project": "p"}, {"type": "fact"}, {"tags": ["t"]},
                    {"category": "notes"}, {"include_expired": True, "min_confidence": 0.0}, {"global": False},
                    {"namespace": ["user", "alice"]}):  # fmt: skip
        body = {"query": f"{SECRET} secret", "mode": mode, **filters}
        response = client.post("/search", json=body)
        assert response.status_code == 200, response.text
        no_hint(response.text, bob_ids)
    for namespace in ([], ["user"], ["user", "bob"]):
        response = client.post("/search", json={"query": SECRET, "mode": mode, "namespace": namespace})
        assert response.status_code == 422, response.text


def test_rest_alice_writes_only_in_her_namespace_and_learns_nothing_of_bobs_paths(
    alice_rest: TestClient[Any], shared: MemoryService, bob_ids: dict[str, str]
) -> None:
    client = alice_rest
    # Bob's paths are free for Alice: no DESTINATION_EXISTS tells her they exist
    created = client.post("/memories", json={"content": "Alice's note", "path": "notes/secret"})
    assert created.status_code == 201, created.text
    assert created.json()["namespace"] == ["user", "alice"]
    mine = client.post("/memories", json={"content": "Alice's other", "path": "notes/other"}).json()["id"]
    moved = client.post(f"/memories/{mine}/move", json={"destination": "shared/team/plan"})
    assert moved.status_code == 200, moved.text
    assert client.get("/memories/notes/secret").json()["content"] == "Alice's note"
    for namespace in ([], ["user"], ["user", "bob"]):
        response = client.post("/memories", json={"content": "x", "namespace": namespace})
        assert response.status_code in (201, 422), response.text
        assert response.status_code == 422 or response.json()["namespace"] == ["user", "alice"]
    assert client.post("/categories", json={"path": "bobs/plans"}).status_code == 409
    assert client.delete("/categories/shared/team").status_code == 200
    assert client.post("/reindex").status_code == 409
    bob_untouched(shared, bob_ids)


def test_rest_a_wrong_token_gets_nobody_and_bob_still_sees_his_own(
    shared: MemoryService, bob_ids: dict[str, str]
) -> None:
    app = build_app(shared, tenancy=Tenancy(tokens=((TOKEN_A, ALICE), (TOKEN_B, BOB))))
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/memories").status_code == 401
        assert client.get("/memories", headers={"Authorization": "Bearer nope"}).status_code == 401
        as_bob = client.get(f"/memories/{bob_ids['secret']}", headers={"Authorization": f"Bearer {TOKEN_B}"})
        assert as_bob.status_code == 200 and SECRET in as_bob.text


# --- MCP, a server pinned to Alice, and the findings on an unpinned one -----------------------------


class Mcp:
    def __init__(self, service: MemoryService, tenancy: Tenancy | None = None) -> None:
        self.server = build_mcp_server(service, default_store="default", tenancy=tenancy)

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        async def run() -> CallToolResult:
            result = await self.server.call_tool(name, arguments)
            assert isinstance(result, CallToolResult)
            return result

        result = anyio.run(run)
        return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]


def test_mcp_pinned_alice_never_reaches_bobs_memories(
    shared: MemoryService, clock: FixedClock, bob_ids: dict[str, str]
) -> None:
    mcp = Mcp(shared, Tenancy(pin=ALICE))
    clock.advance(hours=2)
    for ref in [*bob_ids.values(), "notes/secret", "notes/old"]:
        for name, arguments in (
            ("get_memory", {"path_or_id": ref, "include_expired": True}),
            ("update_memory", {"path_or_id": ref, "content": "pwned"}),
            ("remove_memory", {"path_or_id": ref}),
            ("delete_memory", {"path_or_id": ref, "include_expired": True}),
            ("move_memory", {"from": ref, "to": "mine/now"}),
            ("reinforce_memory", {"id": ref}),
            ("update_memory", {"path_or_id": ref, "content": "pwned", "namespace": []}),
            ("update_memory", {"path_or_id": ref, "content": "pwned", "namespace": ["user"]}),
            ("update_memory", {"path_or_id": ref, "content": "pwned", "namespace": ["user", "bob"]}),
            ("manage_memory", {"action": "update", "id": ref, "content": "pwned", "namespace": []}),
            ("manage_memory", {"action": "update", "id": ref, "content": "pwned", "user_id": "bob"}),
        ):
            failed, text = mcp.call(name, arguments)
            assert failed, (name, arguments, text)
            if ref.count("-") != 4 and "bob" not in json.dumps(arguments):  # else it echoes Alice's own input
                no_hint(text, bob_ids)
        # an id Alice's namespace does not hold is unknown to her: as in LangMem, update creates her own memory
        # and delete does nothing (bob_untouched below checks Bob's memories)
        failed, text = mcp.call("manage_memory", {"action": "update", "id": ref, "content": "hers", "user_id": "alice"})
        said = json.loads(text)["result"]
        assert not failed and said.startswith("created memory ") and not any(i in text for i in bob_ids.values())
        failed, text = mcp.call("manage_memory", {"action": "delete", "id": ref, "user_id": "alice"})
        assert not failed and json.loads(text)["result"] == f"Deleted memory {ref}"
    for name, arguments in (
        ("list_memories", {"include_expired": True}),
        ("get_recent_memories", {"include_expired": True}),
        ("list_stores", {}),
        ("prune_memories", {"dry_run": True}),
        ("prune_memories", {}),
        ("delete_category", {"path": "shared/team"}),
        *(("search_memories", {"query": SECRET, "mode": mode, "include_expired": True}) for mode in MODES),
        ("search_memory", {"query": SECRET, "user_id": "alice"}),
        ("search_memory", {"query": SECRET, "namespace": ["user", "alice"], "filter": {"tags": "t"}}),
    ):
        _, text = mcp.call(name, arguments)
        no_hint(text, bob_ids)
    for arguments in ({"namespace": []}, {"namespace": ["user"]}, {"user_id": "bob"}):
        failed, _ = mcp.call("search_memory", {"query": SECRET, **arguments})
        assert failed
    failed, text = mcp.call("add_memory", {"path": "notes/secret", "content": "Alice's own"})
    assert not failed and json.loads(text)["namespace"] == ["user", "alice"]
    assert mcp.call("create_category", {"path": "bobs/plans"})[0]
    bob_untouched(shared, bob_ids)


def test_mcp_manage_memory_with_an_empty_namespace_no_longer_updates_another_tenant(
    shared: MemoryService, bob_ids: dict[str, str]
) -> None:
    mcp = Mcp(shared)  # not pinned: the finding
    failed, text = mcp.call(
        "manage_memory", {"action": "update", "id": bob_ids["secret"], "content": "x", "namespace": []}
    )
    assert failed and text.startswith("INVALID_INPUT"), text
    bob_untouched(shared, bob_ids)


def test_mcp_get_of_another_tenants_path_does_not_answer_with_its_id(
    shared: MemoryService, bob_ids: dict[str, str]
) -> None:
    failed, text = Mcp(shared).call("get_memory", {"path_or_id": "notes/secret", "namespace": ["user", "alice"]})
    assert failed and text.startswith("MEMORY_NOT_FOUND")
    no_hint(text, bob_ids)


def test_mcp_delete_category_and_prune_under_a_namespace_spare_other_tenants(
    shared: MemoryService, clock: FixedClock, bob_ids: dict[str, str]
) -> None:
    mcp = Mcp(shared)
    alice = ["user", "alice"]
    mcp.call("add_memory", {"path": "shared/team/mine", "content": "Alice's team", "namespace": alice})
    failed, text = mcp.call("delete_category", {"path": "shared/team", "namespace": alice})
    assert not failed, text
    clock.advance(hours=2)
    failed, text = mcp.call("prune_memories", {"namespace": alice})
    assert not failed and json.loads(text)["count"] == 0, text
    bob_untouched(shared, bob_ids)


def test_mcp_paths_are_per_namespace_so_destination_exists_reveals_nothing(
    shared: MemoryService, bob_ids: dict[str, str]
) -> None:
    failed, text = Mcp(shared).call(
        "add_memory", {"path": "notes/secret", "content": "Alice's", "namespace": ["user", "alice"]}
    )
    assert not failed, text


def test_mcp_unknown_or_misspelt_arguments_are_errors_naming_the_nearest(shared: MemoryService) -> None:
    mcp = Mcp(shared)
    failed, text = mcp.call("get_memory", {"path_or_id": "notes/x", "namepsace": ["user", "alice"]})
    assert failed and text.startswith("INVALID_INPUT") and "'namespace'" in text, text
    failed, text = mcp.call("search_memories", {"query": "x", "limt": 3})
    assert failed and "'limit'" in text, text
    failed, text = mcp.call("add_memory", {"path": "notes/x", "content": "y", "zzz": 1})
    assert failed and "zzz" in text
    assert Mcp(shared).call("list_memories", {})[1].startswith("{")  # nothing was written
    assert json.loads(Mcp(shared).call("list_memories", {})[1])["memories"] == []


def test_mcp_traversal_on_reads_is_invalid_path(shared: MemoryService) -> None:
    mcp = Mcp(shared)
    for name, arguments in (
        ("get_memory", {"path_or_id": "../../etc/passwd"}),
        ("remove_memory", {"path_or_id": "/etc/passwd"}),
        ("delete_memory", {"path_or_id": "/etc/passwd"}),
        ("update_memory", {"path_or_id": "notes/../../x", "content": "y"}),
    ):
        failed, text = mcp.call(name, arguments)
        assert failed and text.startswith("INVALID_PATH"), text


def test_rest_traversal_on_reads_is_invalid_path(shared: MemoryService) -> None:
    with TestClient(build_app(shared), base_url=BASE) as client:
        response = client.get("/memories/notes/..%5Cx")
        assert response.status_code == 422 and response.json()["code"] == "INVALID_PATH", response.text
        response = client.delete("/memories/notes/%2E%2E/%2E%2E/x")
        assert response.json()["code"] in ("INVALID_PATH",), response.text
