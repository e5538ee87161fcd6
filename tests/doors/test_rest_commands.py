"""The REST door read from the command table: body and query names as the other doors spell them, one operation
per command, and the deprecated spellings that keep older clients working."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from litestar import Litestar
from litestar.di import Provide
from litestar.testing import TestClient

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import field_doc
from agent_memory.domain.dispatch import commands, dispatch
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest.app import build_app
from agent_memory.entrypoints.rest.queries import QueryRoute, query_handler
from agent_memory.entrypoints.rest.replies import Door
from agent_memory.entrypoints.rest.table import NOT_ROUTED, door_spec, route_name
from tests.doors.examples import door_arguments, example, seeded

BASE = "http://127.0.0.1:8080"


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service), base_url=BASE) as test_client:
        yield test_client


def seed(client: TestClient[Any]) -> None:
    for path in ("prefs/editor", "notes/editor"):
        made = client.post("/memories", json={"path": path, "content": "The user prefers vim as editor."})
        assert made.status_code == 201, made.text


def paths(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["path"] for hit in response.json()["results"]]


def schema_of(document: dict[str, Any], route: str, method: str = "post") -> dict[str, Any]:
    reference = document["paths"][route][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema: dict[str, Any] = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    return schema


# --- the search's category filter ---------------------------------------------------------------------------------


def test_search_filters_by_category_as_the_cli_and_mcp_call_it(client: TestClient[Any]) -> None:
    seed(client)
    assert paths(client.post("/search", json={"query": "editor", "category": "prefs", "min_confidence": 0})) == [
        "prefs/editor"
    ]


def test_path_prefix_still_filters_as_a_deprecated_alias(client: TestClient[Any]) -> None:
    seed(client)
    assert paths(client.post("/search", json={"query": "editor", "path_prefix": "notes", "min_confidence": 0})) == [
        "notes/editor"
    ]


def test_category_and_path_prefix_at_once_is_400_saying_which_to_keep(client: TestClient[Any]) -> None:
    seed(client)
    both = client.post("/search", json={"query": "editor", "category": "prefs", "path_prefix": "notes"})
    assert both.status_code == 400, both.text
    body = both.json()
    assert body["code"] == "INVALID_INPUT" and "keep `category`" in body["error"]


def test_the_search_body_documents_category_and_deprecates_path_prefix(client: TestClient[Any]) -> None:
    body = schema_of(client.get("/openapi.json").json(), "/search")["properties"]
    command_text = field_doc(attrs.fields(c.SearchMemories).path_prefix).text
    assert body["category"]["description"] == command_text and not body["category"].get("deprecated")
    assert body["path_prefix"]["deprecated"] is True


# --- reinforce and move: one operation each, their bodies from the commands ---------------------------------------


def test_reinforce_and_move_are_operations_of_their_own_with_bodies_from_the_commands(
    client: TestClient[Any],
) -> None:
    document = client.get("/openapi.json").json()
    reinforce, move = document["paths"]["/reinforce"]["post"], document["paths"]["/move"]["post"]
    assert reinforce["operationId"] != move["operationId"]
    for operation, command, wire in (
        (reinforce, c.ReinforceMemory, {"ref"}),
        (move, c.MoveMemory, {"ref", "destination", "include_expired"}),
    ):
        body = schema_of(document, "/reinforce" if command is c.ReinforceMemory else "/move")
        assert set(body["properties"]) == wire and "ref" in body["required"]
        for name in wire:
            assert body["properties"][name]["description"] == field_doc(attrs.fields_dict(command)[name]).text
        assert not operation.get("deprecated")
    old = document["paths"]["/memories/{ref}"]["post"]
    assert old["deprecated"] is True


def made(client: TestClient[Any], path: str, decay: str = "reinforceable") -> str:
    answer = client.post("/memories", json={"path": path, "content": f"about {path}", "decay_policy": decay})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_the_new_and_the_old_reinforce_answer_the_same(client: TestClient[Any]) -> None:
    made(client, "habits/tea")
    made(client, "facts/pi", decay="stable")
    for ref in ("habits/tea", "facts/pi", "facts/none"):
        new = client.post("/reinforce", json={"ref": ref})
        old = client.post(f"/memories/{ref}/reinforce")
        assert (new.status_code, new.json()) == (old.status_code, old.json())
    assert client.post("/reinforce", json={"ref": "facts/pi"}).json()["code"] == "INVALID_OPERATION"


def test_the_new_and_the_old_move_answer_the_same(client: TestClient[Any]) -> None:
    first, second = made(client, "inbox/one"), made(client, "inbox/two")
    made(client, "inbox/taken")
    new = client.post("/move", json={"ref": first, "destination": "done/one"})
    old = client.post(f"/memories/{second}/move", json={"destination": "done/two"})
    assert new.status_code == old.status_code == 200, (new.text, old.text)
    assert (new.json()["path"], old.json()["path"]) == ("done/one", "done/two")
    for body, status, code in (
        ({"ref": "done/one", "destination": "inbox/taken"}, 409, "DESTINATION_EXISTS"),
        ({"ref": "done/one", "destination": "/abs"}, 422, "INVALID_PATH"),
        ({"ref": "inbox/none", "destination": "done/x"}, 404, "MEMORY_NOT_FOUND"),
    ):
        new = client.post("/move", json=body)
        old = client.post(f"/memories/{body['ref']}/move", json={"destination": body["destination"]})
        assert (new.status_code, new.json()["code"]) == (old.status_code, old.json()["code"]) == (status, code)


def test_the_namespace_guard_and_the_store_are_query_parameters_of_both(client: TestClient[Any]) -> None:
    ref = made(client, "habits/tea")
    outside = {"namespace": "user/u-2"}
    assert client.post("/reinforce", params=outside, json={"ref": ref}).json()["code"] == "MEMORY_NOT_FOUND"
    assert client.post("/move", params=outside, json={"ref": ref, "destination": "x/y"}).status_code == 404
    assert client.post("/reinforce", params={"store": "nope"}, json={"ref": ref}).status_code == 404


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/reinforce", None),
        ("/reinforce", {}),
        ("/reinforce", {"ref": 7}),
        ("/reinforce", {"ref": "habits/tea", "colour": "red"}),
        ("/reinforce", {"ref": "habits/tea", "namespace": ["user"]}),
        ("/move", {"ref": "habits/tea"}),
        ("/move", {"destination": "x/y"}),
        ("/move", {"ref": "habits/tea", "to": "x/y"}),
        ("/move", {"ref": "habits/tea", "destination": "x/y", "include_expired": "yes"}),
        ("/move", ["habits/tea"]),
    ],
)
def test_bad_bodies_are_4xx_json(client: TestClient[Any], route: str, body: Any) -> None:
    made(client, "habits/tea")
    answer = client.post(route, json=body)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["code"] == "INVALID_INPUT" and answer.json()["error"]
    assert client.get("/memories/habits/tea").json()["path"] == "habits/tea"


# --- the GET routes: their query parameters are their commands' fields ---------------------------------------------

QUERY_ROUTES = {
    ("/memories/{ref}", c.GetMemory): {"ref"},
    ("/memories", c.ListMemories): set(),
    ("/recent", c.RecentMemories): set(),
}


@pytest.mark.parametrize(("route", "command"), list(QUERY_ROUTES), ids=lambda value: getattr(value, "__name__", value))
def test_a_get_route_takes_its_commands_fields_as_query_parameters(
    client: TestClient[Any], route: str, command: type[Any]
) -> None:
    operation = client.get("/openapi.json").json()["paths"][route]["get"]
    queries = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
    fields = attrs.fields_dict(command)
    assert set(queries) == set(fields) - QUERY_ROUTES[(route, command)]
    for name, shown in queries.items():
        described = field_doc(fields[name])
        if name != "namespace":  # the guard is written 'user/u-123' in a query, a list of labels elsewhere
            assert shown["description"] == described.text, name
        if described.least is not None:
            assert shown["schema"]["minimum"] == described.least, name
        if described.most is not None:
            assert shown["schema"]["maximum"] == described.most, name


def test_a_field_added_to_a_query_command_reaches_its_route_with_no_edit_to_the_door(service: MemoryService) -> None:
    @attrs.frozen(kw_only=True)
    class ListMemoriesWithReason(c.ListMemories):
        reason: str = attrs.field(default="", metadata=c.doc("Why the agent lists them."))
        depth: int = attrs.field(default=1, metadata=c.doc("How deep to look.", least=1, most=3))

    ran: list[Any] = []

    def run(service: MemoryService, command: Any) -> Any:
        ran.append(command)
        return dispatch(service, command)

    route = QueryRoute(
        name="list_memories",
        path="/memories",
        command=ListMemoriesWithReason,
        defaults={"limit": 100},
        summary="A listing.",
        render=lambda listing, _given: {"total": listing.total},
        responses=(400,),
    )
    door = Door(service)
    app = Litestar([query_handler(route, run)], dependencies={"door": Provide(lambda: door, sync_to_thread=False)})
    with TestClient(app, base_url=BASE) as test_client:
        parameters = test_client.get("/schema/openapi.json").json()["paths"]["/memories"]["get"]["parameters"]
        shown = {p["name"]: p for p in parameters}
        assert shown["reason"]["description"] == "Why the agent lists them."
        assert (shown["depth"]["schema"]["minimum"], shown["depth"]["schema"]["maximum"]) == (1, 3)

        listed = test_client.get("/memories", params={"reason": "tidy up", "depth": 2, "namespace": "user/u-1"})
        assert listed.status_code == 200, listed.text
        assert (ran[-1].reason, ran[-1].depth, ran[-1].namespace, ran[-1].limit) == ("tidy up", 2, ("user", "u-1"), 100)
        assert test_client.get("/memories", params={"depth": 9}).status_code == 400
        assert len(ran) == 1


@pytest.mark.parametrize("kind", commands(), ids=lambda kind: kind.__name__)
def test_every_command_of_the_table_runs_by_its_name(kind: type[c.Asks[Any]], service: MemoryService) -> None:
    """`POST /commands/{name}` runs each command's example (tests/doors/examples.py), the body by its names."""
    if kind in NOT_ROUTED:
        pytest.skip(NOT_ROUTED[kind])
    arguments = door_arguments(door_spec(kind), example(kind))
    assert arguments is not None
    with TestClient(build_app(seeded(service)), base_url=BASE) as client:
        answered = client.post(f"/commands/{route_name(kind)}", json=arguments)
    assert answered.status_code == 200, answered.text
    assert isinstance(answered.json(), dict)
