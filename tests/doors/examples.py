"""One example of every command of the table, from which the door tests draw: a new command needs one line here.

Each example runs on a freshly seeded service (`seeded`): the memories, category, store and soft-deleted memory
it names are there. `example` fails with "add an example for X" for a command of the table without one, so a
command added to `domain/dispatch.HANDLERS` reaches every door test without any edit to them. `door_arguments`
and `cli_argv` turn an example into what one door's caller sends, by the door's spec (names and positionals).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from attrs import NOTHING

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields
from agent_memory.domain.model import Memory
from agent_memory.domain.service import MemoryService
from agent_memory.domain.views import StoreOutline
from agent_memory.entrypoints.door_spec import DoorSpec
from agent_memory.entrypoints.json_codec import JSON

EXAMPLES: dict[type[c.Asks[Any]], c.Asks[Any]] = {
    c.CreateMemory: c.CreateMemory(content="likes green tea", path="notes/tea", tags=("drinks",)),
    c.CreateMemories: c.CreateMemories(memories=(c.CreateMemory(content="One"), c.CreateMemory(content="Two"))),
    c.SearchMemories: c.SearchMemories(query="vim", limit=3),
    c.UpdateMemory: c.UpdateMemory(ref="notes/editor", content="prefers neovim", tags=("tools", "editor")),
    c.GetMemory: c.GetMemory(ref="notes/editor"),
    c.ListMemories: c.ListMemories(category="notes", include_deleted=True),
    c.RecentMemories: c.RecentMemories(limit=2),
    c.MoveMemory: c.MoveMemory(ref="notes/editor", destination="notes/ide"),
    c.ReinforceMemory: c.ReinforceMemory(ref="notes/editor"),
    c.DeleteMemory: c.DeleteMemory(ref="notes/spare"),
    c.RestoreMemory: c.RestoreMemory(ref="notes/old"),
    c.FindDuplicates: c.FindDuplicates(ref="notes/editor"),
    c.RemoveMemory: c.RemoveMemory(ref="notes/spare"),
    c.PruneMemories: c.PruneMemories(dry_run=True),
    c.ReindexStore: c.ReindexStore(),
    c.StoreStatus: c.StoreStatus(),
    c.ListStores: c.ListStores(),
    c.CreateStore: c.CreateStore(name="work"),
    c.CreateCategory: c.CreateCategory(category="projects/api", description="The API"),
    c.DescribeCategory: c.DescribeCategory(category="projects/web", description="The web site"),
    c.DeleteCategory: c.DeleteCategory(category="projects/web"),
    c.ExportMemories: c.ExportMemories(),
    c.ImportMemories: c.ImportMemories(outlines=(StoreOutline("moved", {"notes": "Notes"}),)),
}

LONG_AGO = datetime(2001, 1, 1, tzinfo=UTC)


def example(kind: type[c.Asks[Any]]) -> c.Asks[Any]:
    """The example of a command of the table; a test fails saying what to add when it has none."""
    if kind not in EXAMPLES:
        pytest.fail(f"add an example for {kind.__name__} to tests/doors/examples.py (EXAMPLES)")
    return EXAMPLES[kind]


def seeded(service: MemoryService) -> MemoryService:
    """The service with what the examples name: notes/editor (reinforceable), notes/spare, notes/old (soft-deleted),
    projects/web (described, one memory), the store `other`, and an expired memory for prune to find."""
    for path, content, policy in (
        ("notes/editor", "prefers vim", "reinforceable"),
        ("notes/spare", "a spare note", "stable"),
        ("notes/old", "an old note", "stable"),
        ("projects/web/stack", "the site runs on litestar", "stable"),
    ):
        service.dispatch(c.CreateMemory(content=content, path=path, decay_policy=policy, tags=("tools",))).unwrap()
    service.dispatch(c.DeleteMemory(ref="notes/old")).unwrap()
    service.dispatch(c.DescribeCategory(category="projects/web", description="Web work")).unwrap()
    service.dispatch(c.CreateStore(name="other")).unwrap()
    stale = Memory(id=str(uuid.uuid4()), content="stale", created_at=LONG_AGO, updated_at=LONG_AGO, expires_at=LONG_AGO)
    service.import_memories([stale]).unwrap()  # expired already: prune finds it (no door creates one so)
    return service


def given_fields(command: c.Asks[Any]) -> dict[str, Any]:
    """The example's fields that differ from the command's defaults, as JSON values (lists, ISO 8601 strings)."""
    given: dict[str, Any] = {}
    for attribute in command_fields(type(command)):
        value = getattr(command, attribute.name)
        if attribute.default is not NOTHING and value == attribute.default:
            continue
        given[attribute.name] = JSON.unstructure(value)
    return given


def door_arguments(spec: DoorSpec, command: c.Asks[Any]) -> dict[str, Any] | None:
    """The arguments a JSON door (an MCP tool, REST's generic route) takes for the example, by the door's names;
    None when the example sets a field the door leaves out."""
    given = given_fields(command)
    if set(given) & set(spec.omit):
        return None
    return {spec.door_name(name): value for name, value in given.items()}


def cli_argv(entry: dict[str, Any], command: c.Asks[Any]) -> list[str] | None:
    """`memory …`'s arguments for the example, from the subcommand's manifest entry (positionals in order, then
    flags); None when the example sets a field the subcommand does not offer."""
    given = given_fields(command)
    offered = {argument["field"]: argument for argument in entry["arguments"] if argument["field"] is not None}
    if set(given) - set(offered) - set(entry["common_fields"]):
        return None
    argv = entry["name"].split()
    for argument in entry["arguments"]:  # in the entry's order: positionals first
        name = argument["field"]
        if name not in given:
            continue
        value = given[name]
        if not argument["name"].startswith("-"):
            argv.append(_cli_value(argument, value))
        elif argument["kind"] == "list":
            argv += [part for item in value for part in (argument["name"], str(item))]
        elif argument["kind"] == "bool":
            argv.append(argument["name"] if value else f"--no-{argument['name'].removeprefix('--')}")
        else:
            argv += [argument["name"], _cli_value(argument, value)]
    for name in entry["common_fields"]:  # --store
        if name in given:
            argv += [f"--{name}", str(given[name])]
    return argv


def _cli_value(argument: dict[str, Any], value: Any) -> str:
    return "/".join(value) if argument["kind"].startswith("namespace") else str(value)
