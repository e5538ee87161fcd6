"""The hand-written CLI parser against the command table: every field of a command is offered or said to be left out."""

from __future__ import annotations

import argparse

import pytest

from agent_memory.domain import commands as c
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli_parser import build_parser

_COMMON = {"store": "store"}  # --store stands on every subcommand
_SCOPES = {"agent": "agent", "personality": "personality", "project": "project", "type": "type"}
_TENANT = "namespace: the CLI acts for one user; tenants use REST or MCP with a token"

# CLI subcommand: (command, {field: argparse dest}, {field: why the CLI leaves it out})
CLI: dict[str, tuple[type[c.Command], dict[str, str], dict[str, str]]] = {
    "create": (
        c.CreateMemory,
        {
            "content": "content",
            **_SCOPES,
            "global_": "global_",
            "decay_policy": "decay",
            "namespace": "namespace",
            "tags": "tags",
            "citations": "citations",
            "source": "source",
            "expires_at": "expires_at",
            "thread": "thread",
            **_COMMON,
        },
        {"path": "`memory add PATH` creates at a path", "created_at": "set by `memory import` only"},
    ),
    "add": (
        c.AddMemory,
        {
            "path": "path",
            "content": "content",
            **_SCOPES,
            "decay_policy": "decay",
            "tags": "tags",
            "citations": "citations",
            "source": "source",
            "expires_at": "expires_at",
            **_COMMON,
        },
        {
            "global_": "`memory create --global`",
            "namespace": _TENANT,
            "thread": "`memory create --thread`",
            "created_at": "set by `memory import` only",
        },
    ),
    "search": (
        c.SearchMemories,
        {
            "query": "query",
            **_SCOPES,
            "global_": "global_",
            "tags": "tags",
            "namespace": "namespace",
            "path_prefix": "category",
            "limit": "limit",
            "offset": "offset",
            "min_confidence": "min_confidence",
            "include_expired": "include_expired",
            "mode": "mode",
            **_COMMON,
        },
        {},
    ),
    "update": (
        c.UpdateMemory,
        {
            "ref": "id",
            "content": "content",
            **_SCOPES,
            "decay_policy": "decay",
            "tags": "tags",
            "citations": "citations",
            "source": "source",
            "expires_at": "expires_at",
            "clear_expiry": "clear_expiry",
            "global_": "global_",
            "include_expired": "include_expired",
            **_COMMON,
        },
        {"namespace": _TENANT},
    ),
    "get": (c.GetMemory, {"ref": "id", "include_expired": "include_expired", **_COMMON}, {"namespace": _TENANT}),
    "reinforce": (c.ReinforceMemory, {"ref": "id", **_COMMON}, {"namespace": _TENANT}),
    "delete": (c.DeleteMemory, {"ref": "id", "include_expired": "include_expired", **_COMMON}, {"namespace": _TENANT}),
    "remove": (c.RemoveMemory, {"ref": "id", **_COMMON}, {"namespace": _TENANT}),
    "move": (
        c.MoveMemory,
        {"ref": "id", "destination": "destination", "include_expired": "include_expired", **_COMMON},
        {"namespace": _TENANT},
    ),
    "list": (
        c.ListMemories,
        {"category": "category", "limit": "limit", "offset": "offset", "include_expired": "include_expired", **_COMMON},
        {"namespace": _TENANT},
    ),
    "recent": (
        c.RecentMemories,
        {"limit": "limit", "category": "category", "include_expired": "include_expired", **_COMMON},
        {"namespace": _TENANT},
    ),
    "prune": (c.PruneMemories, {"dry_run": "dry_run", **_COMMON}, {"namespace": _TENANT}),
    "reindex": (c.ReindexStore, {**_COMMON}, {}),
    "status": (c.StoreStatus, {**_COMMON}, {"namespace": _TENANT}),
    "store list": (c.ListStores, {}, {"namespace": _TENANT}),
    "store create": (c.CreateStore, {"name": "name"}, {}),
    "category create": (
        c.CreateCategory,
        {"category": "path", "description": "description", **_COMMON},
        {"namespace": _TENANT},
    ),
    "category describe": (
        c.DescribeCategory,
        {"category": "path", "description": "description", **_COMMON},
        {"namespace": _TENANT},
    ),
    "category delete": (c.DeleteCategory, {"category": "path", **_COMMON}, {"namespace": _TENANT}),
}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = build_parser()
    for word in name.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def test_every_command_has_a_cli_row_or_a_reason() -> None:
    assert {command for command, _, _ in CLI.values()} == set(c.COMMANDS)


@pytest.mark.parametrize("name", CLI)
def test_each_field_is_offered_or_left_out_on_purpose(name: str) -> None:
    command, offered, left_out = CLI[name]
    fields = {attribute.name for attribute in c.command_fields(command)}
    assert set(offered) | set(left_out) == fields, f"`memory {name}`: a field of {command.__name__} has no row"
    assert not set(offered) & set(left_out)
    dests = {action.dest for action in _subparser(name)._actions}
    missing = {field: dest for field, dest in offered.items() if dest not in dests}
    assert not missing, f"`memory {name}` does not offer {missing}"


def test_update_sets_and_clears_global(service: MemoryService) -> None:
    """Found by the table: `memory update` could not change whether a memory is global (REST and MCP could)."""
    from agent_memory.entrypoints import cli_handlers

    made = service.create(c.CreateMemory(content="Use UTC everywhere")).unwrap()
    ref = made.memory.id
    made_global = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--global"])).unwrap()
    assert made_global["global"] is True
    kept = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--content", "Use UTC"])).unwrap()
    assert kept["global"] is True
    cleared = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--no-global"])).unwrap()
    assert cleared["global"] is False
