"""The command table: every use case a command whose fields describe themselves, one dispatcher, generated tools."""

from __future__ import annotations

import typing

import pytest
from attrs import field, frozen
from returns.result import Failure, Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields, field_doc, is_required
from agent_memory.domain.dispatch import commands, dispatch
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.service import MemoryService, SearchPolicy
from agent_memory.entrypoints.door_spec import DoorSpec
from agent_memory.entrypoints.door_spec import command_from as door_command_from
from agent_memory.entrypoints.mcp.command_tools import SPECS, ToolSpec
from agent_memory.entrypoints.mcp.tool_calls import argument_model, run_tool
from tests.doors.examples import example, seeded


def test_every_command_field_describes_itself() -> None:
    for command in commands():
        for attribute in command_fields(command):
            assert field_doc(attribute).text, f"{command.__name__}.{attribute.name} has no description"


def test_every_command_of_the_module_has_a_handler() -> None:
    declared = {kind for kind in vars(c).values() if isinstance(kind, type) and issubclass(kind, c.Asks)} - {c.Asks}
    assert declared == set(commands())


# what some examples' use cases answer, beyond success (tests/doors/examples.py holds one example per command)
CHECKS: dict[type[c.Asks[typing.Any]], typing.Callable[[typing.Any], bool]] = {
    c.CreateMemories: lambda views: [view.memory.content for view in views] == ["One", "Two"],
    c.UpdateMemory: lambda view: view.memory.tags == ("tools", "editor"),
    c.SearchMemories: lambda found: [hit.memory.content for hit in found.results][:1] == ["prefers vim"],
    c.MoveMemory: lambda view: str(view.memory.path) == "notes/ide",
    c.RestoreMemory: lambda view: str(view.memory.path) == "notes/old" and not view.memory.deleted,
    c.ListStores: lambda stores: [store.name for store in stores] == ["default", "other"],
    c.DescribeCategory: lambda summary: summary.description == "The web site",
    c.ExportMemories: lambda exported: len(exported.memories) == 5,
    c.ImportMemories: lambda report: report.stores == 1,
}


@pytest.mark.parametrize("kind", commands(), ids=lambda kind: kind.__name__)
def test_every_command_reaches_its_use_case(kind: type[c.Asks[typing.Any]], service: MemoryService) -> None:
    """Each command's example, through the dispatcher alone, does what its use case does."""
    outcome = dispatch(seeded(service), example(kind))
    assert isinstance(outcome, Success), outcome
    assert CHECKS.get(kind, lambda _answer: True)(outcome.unwrap()), outcome


def test_a_removed_memory_is_gone(service: MemoryService) -> None:
    dispatch(seeded(service), example(c.RemoveMemory)).unwrap()
    gone = dispatch(service, c.GetMemory(ref="notes/spare"))
    assert isinstance(gone, Failure) and gone.failure().code is ErrorCode.MEMORY_NOT_FOUND


def test_one_create_command_a_path_given_must_be_free(service: MemoryService) -> None:
    def code(command: c.CreateMemory) -> ErrorCode:
        made = dispatch(service, command)
        assert isinstance(made, Failure), made
        return made.failure().code

    placed = dispatch(service, c.CreateMemory(content="Tabs", path="Prefs/Editor")).unwrap()
    assert str(placed.memory.path) == "prefs/editor"
    assert code(c.CreateMemory(content="Spaces", path="prefs/editor")) is ErrorCode.DESTINATION_EXISTS
    assert code(c.CreateMemory(content="Spaces", path="../etc/passwd")) is ErrorCode.INVALID_PATH
    assert dispatch(service, c.CreateMemory(content="Spaces")).unwrap().memory.path is None


def test_a_failure_comes_back_as_the_use_case_gave_it(service: MemoryService) -> None:
    found = dispatch(service, c.MoveMemory(ref="nowhere/x", destination="else/y"))
    assert isinstance(found, Failure) and found.failure().code is ErrorCode.MEMORY_NOT_FOUND


# --- the MCP tools are generated from the commands ----------------------------------------------------------------


def _schema(spec: ToolSpec) -> dict[str, typing.Any]:
    return argument_model(spec).model_json_schema(by_alias=True)


def test_each_tool_shows_its_commands_fields_with_their_descriptions_and_bounds() -> None:
    for spec in SPECS:
        properties = _schema(spec)["properties"]
        for attribute in command_fields(spec.command):
            if attribute.name in spec.omit:
                assert spec.names.get(attribute.name, attribute.name) not in properties
                continue
            shown = properties[spec.names.get(attribute.name, attribute.name)]
            described = field_doc(attribute)
            sentence = spec.wording.get(attribute.name, described.text)
            assert shown["description"].startswith(sentence), (spec.name, attribute.name)
            text = str(shown)
            if described.most is not None:
                assert f"'maximum': {described.most}" in text, (spec.name, attribute.name)
            for choice in described.choices:
                assert repr(choice) in text, (spec.name, attribute.name)


def test_a_field_added_to_a_command_reaches_its_tool_with_no_edit_to_the_door() -> None:
    @frozen(kw_only=True)
    class GetMemoryWithReason(c.GetMemory):
        reason: str = field(default="", metadata=c.doc("Why the agent reads it.", max_length=80))

    spec = ToolSpec(name="get_memory", command=GetMemoryWithReason, title="t", description="d", render=lambda *_: {})
    shown = _schema(spec)["properties"]["reason"]
    assert shown["description"] == "Why the agent reads it." and shown["maxLength"] == 80


def test_a_generated_tool_runs_its_command_through_the_dispatcher(service: MemoryService) -> None:
    add = next(spec for spec in SPECS if spec.name == "add_memory")
    arguments = argument_model(add).model_validate(
        {"path": "prefs/editor", "content": "Tabs", "global": True, "expires_at": "2030-01-01T00:00:00Z"}
    )
    made = run_tool(service, add, arguments.model_dump_one_level(), "default")
    assert isinstance(made, Success)
    assert made.unwrap()["global"] is True and made.unwrap()["expires_at"].startswith("2030-01-01")


def test_a_bad_timestamp_names_the_tools_argument(service: MemoryService) -> None:
    add = next(spec for spec in SPECS if spec.name == "add_memory")
    arguments = argument_model(add).model_validate({"path": "prefs/editor", "content": "Tabs", "expires_at": "soon"})
    made = run_tool(service, add, arguments.model_dump_one_level(), "default")
    assert isinstance(made, Failure) and made.failure().code is ErrorCode.INVALID_INPUT
    assert "expires_at 'soon'" in made.failure().message


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_required_fields_are_required_by_the_tool(spec: ToolSpec) -> None:
    required = set(_schema(spec).get("required", []))
    expected = {
        spec.names.get(a.name, a.name)
        for a in command_fields(spec.command)
        if is_required(a) or a.name in spec.required
    }
    if spec.alternates:  # the memory is one of path_or_id, path and id: none of them alone is required
        expected -= {spec.names.get("ref", "ref")}
    assert required == expected - {spec.names.get(name, name) for name in spec.omit}


def test_the_rest_bodies_describe_their_fields_from_the_same_commands(service: MemoryService) -> None:
    from litestar.testing import TestClient

    from agent_memory.entrypoints.rest.app import build_app

    with TestClient(build_app(service), base_url="http://127.0.0.1") as client:
        document = client.get("/openapi.json").json()

    def body_of(route: str) -> dict[str, typing.Any]:
        reference = document["paths"][route]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema: dict[str, typing.Any] = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
        return schema

    bodies = {
        c.CreateMemory: body_of("/memories"),
        c.SearchMemories: body_of("/search"),
        c.CreateStore: body_of("/stores"),
        c.CreateCategory: body_of("/categories"),
    }
    assert set(bodies[c.CreateStore]["properties"]) == {"name"}
    assert set(bodies[c.CreateCategory]["properties"]) == {"path", "description"}  # the body's wire name: path
    for command, body in bodies.items():
        for attribute in command_fields(command):
            renamed = {"global_": "global", "path_prefix": "category"}
            if command is c.CreateCategory:
                renamed = {"category": "path"}
            wire = renamed.get(attribute.name, attribute.name)
            shown = body["properties"].get(wire)
            if shown is not None:
                assert shown["description"] == field_doc(attribute).text, (command.__name__, attribute.name)


def test_a_search_tool_reports_the_limit_the_service_used(catalog: InMemoryCatalog, clock: FixedClock) -> None:
    """Without a limit, search_memories pages by the configured default (MEMORY_DEFAULT_LIMIT), and says so."""
    service = MemoryService(
        catalog=catalog, embedder=HashingEmbedder(), clock=clock, policy=SearchPolicy(default_limit=3)
    )
    for number in range(5):
        service.create(c.CreateMemory(content=f"tabs note {number}"))
    search = next(spec for spec in SPECS if spec.name == "search_memories")
    arguments = argument_model(search).model_validate({"query": "tabs", "min_confidence": 0})
    page = run_tool(service, search, arguments.model_dump_one_level(), "default").unwrap()
    assert (page["limit"], page["count"], page["has_more"]) == (3, 3, True)


def test_the_prune_body_offers_every_field_of_its_command_but_the_query_parameters() -> None:
    """POST /prune's body may be left out (a bare POST prunes), which a DTO body cannot be: it stays written by
    hand, so this guard fails when PruneMemories gains a field the route does not take yet."""
    import attrs

    from agent_memory.entrypoints.rest.bodies import PruneRequest

    in_query = {"store", "namespace"}
    wanted = {attribute.name for attribute in command_fields(c.PruneMemories)} - in_query
    assert {attribute.name for attribute in attrs.fields(PruneRequest)} == wanted


def test_one_door_spec_makes_the_command_from_a_door_s_names() -> None:
    """CLI, MCP and REST's generic route make their commands through `door_spec.command_from`."""
    spec = DoorSpec(name="search", command=c.SearchMemories, names={"path_prefix": "category", "global_": "global"})
    given = {"query": "q", "category": "notes", "tags": ["a"], "global": True, "store": None}
    made = door_command_from(spec, given, defaults={"store": "work"})
    assert made == Success(c.SearchMemories(query="q", path_prefix="notes", tags=("a",), global_=True, store="work"))

    by_field = door_command_from(spec, {"query": "q", "path_prefix": "notes"}).failure()
    assert by_field.code == ErrorCode.INVALID_INPUT
    assert by_field.message.startswith("'path_prefix' is not a field of search; its fields: agent, category, global,")

    create = DoorSpec(name="add_memory", command=c.CreateMemory, omit={"created_at": "set by imports"})
    when = door_command_from(create, {"content": "x", "expires_at": "2026-12-31T23:59:00Z"}).unwrap()
    assert when.expires_at is not None and when.expires_at.year == 2026
    soon = door_command_from(create, {"content": "x", "expires_at": "soon"}).failure()
    assert soon.code == ErrorCode.INVALID_INPUT and soon.message.startswith("expires_at 'soon' is not an ISO 8601")
    assert "created_at" in door_command_from(create, {"content": "x", "created_at": None}).failure().message
