"""The CLI generated from the command table: the shipped manifest is current, every field is offered or left out on
purpose, a new field reaches `memory` with no edit, and the client parses without attrs or the domain."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from attrs import field, frozen
from returns.result import Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_fields
from agent_memory.domain.dispatch import commands
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli import handlers as cli_handlers
from agent_memory.entrypoints.cli import manifest as cli_manifest
from agent_memory.entrypoints.cli import parser as cli_parser
from agent_memory.entrypoints.cli import text_format
from agent_memory.entrypoints.cli.in_process import run
from agent_memory.entrypoints.cli.manifest import COMMON_FIELDS, SPECS, WRITE_COMMAND, CliSpec
from agent_memory.entrypoints.cli.parser import MANIFEST, build_parser, load_manifest, with_table
from tests.doors.examples import cli_argv, example, seeded
from tests.doors.long_note import LONG, QUERY, long_service, shows_the_last_part
from tests.isolation import empty_config

_BY_NAME = {spec.name: spec for spec in SPECS}


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for word in name.split():
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def test_the_shipped_manifest_is_generated_from_the_current_commands() -> None:
    with open(MANIFEST, encoding="utf-8") as handle:
        shipped = handle.read()
    assert shipped == cli_manifest.manifest_text(), (
        f"entrypoints/cli/manifest.json is stale: run `{cli_manifest.WRITE_COMMAND}`"
    )


def _presenting(kind: type[c.Asks[Any]]) -> list[dict[str, Any]]:
    """The subcommands that run a command: a CliSpec's, or the table's own for a command no CliSpec presents."""
    return [entry for entry in with_table(load_manifest())["subcommands"] if entry["command"] == kind.__name__]


@pytest.mark.parametrize("kind", commands(), ids=lambda kind: kind.__name__)
def test_every_command_is_a_subcommand(kind: type[c.Asks[Any]]) -> None:
    """A CliSpec where the CLI presents a command its own way, else a subcommand of its own name (table_specs)."""
    also = {extra for spec in SPECS for extra in spec.also}
    assert _presenting(kind) or kind in also, f"no `memory` subcommand runs {kind.__name__}: run `{WRITE_COMMAND}`"


# commands whose fields are records, read from a file or stdin by the subcommand (create --jsonl, import)
READ_FROM_RECORDS = {c.CreateMemories, c.ImportMemories}


@pytest.mark.parametrize("kind", commands(), ids=lambda kind: kind.__name__)
def test_every_command_runs_from_the_cli(
    kind: type[c.Asks[Any]], service: MemoryService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command's example (tests/doors/examples.py) as `memory` arguments, through its subcommand's handler:
    exit 0 and JSON on stdout (one object, or one per line for export)."""
    if kind in READ_FROM_RECORDS:
        pytest.skip("its records come from a file (tests/e2e/test_export_import.py, test_cli_server.py)")
    made = [cli_argv(entry, example(kind)) for entry in _presenting(kind)]
    argv = next((argv for argv in made if argv is not None), None)
    assert argv is not None, f"no subcommand of {kind.__name__} takes every field its example sets"
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    code = run(argv, env=env, services=lambda _settings: Success(seeded(service)))
    printed = capsys.readouterr()
    assert code == 0, (argv, printed.err)
    assert all(json.loads(line) is not None for line in printed.out.splitlines() if line.strip()), printed.out


@pytest.mark.parametrize("name", [spec.name for spec in SPECS if spec.command is not None])
def test_each_field_is_offered_or_left_out_with_a_reason(name: str) -> None:
    spec = _BY_NAME[name]
    assert spec.command is not None
    fields = {attribute.name for attribute in command_fields(spec.command)}
    presented = set(spec.omit) | set(spec.positional) | set(spec.names) | set(spec.wording) | spec.negatable
    assert presented <= fields, f"`memory {name}` presents fields {spec.command.__name__} does not have"
    assert all(spec.omit.values()), f"`memory {name}` leaves a field out without saying why"
    assert not set(spec.omit) & (set(spec.positional) | set(spec.names) | set(spec.wording))
    dests = {action.dest for action in _subparser(build_parser(), name)._actions}
    entry = next(e for e in load_manifest()["subcommands"] if e["name"] == name)
    offered = {argument["field"]: argument["dest"] for argument in entry["arguments"] if argument["field"]}
    assert set(offered) | set(spec.omit) | (COMMON_FIELDS & fields) == fields
    assert {dest for dest in offered.values() if dest not in dests} == set()


@frozen(kw_only=True)
class RecentSince(c.RecentMemories):
    """RecentMemories as it might grow: one more documented field."""

    updated_within_days: int | None = field(
        default=None, metadata=c.doc("Only memories updated within this many days.", least=1)
    )


def test_a_field_added_to_a_command_reaches_the_cli_with_no_edit() -> None:
    spec = CliSpec(name="recent", help="the most recently updated memories", command=RecentSince)
    manifest = cli_manifest.manifest(tuple(spec if s.name == "recent" else s for s in SPECS))
    parser = build_parser(manifest)

    shown = _subparser(parser, "recent").format_help()
    assert "--updated-within-days" in shown and "only memories updated within this many days" in shown
    args = parser.parse_args(["recent", "--updated-within-days", "3", "--limit", "2", "--store", "work"])
    command = cli_handlers.command_from(RecentSince, "recent", args, manifest=manifest)
    assert command == Success(RecentSince(updated_within_days=3, limit=2, store="work"))
    unset = cli_handlers.command_from(RecentSince, "recent", parser.parse_args(["recent"]), manifest=manifest)
    assert unset == Success(RecentSince())


def test_arguments_reach_the_command_with_the_door_s_conversions() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["search", "q", "--namespace", "user/u-1/", "--category", "projects", "--tag", "a", "--tag", "b"]
    )
    command = cli_handlers.command_from(c.SearchMemories, "search", args)
    assert command == Success(
        c.SearchMemories(query="q", namespace=("user", "u-1"), path_prefix="projects", tags=("a", "b"))
    )
    created = cli_handlers.command_from(
        c.CreateMemory, "create", parser.parse_args(["create", "--namespace", "user/u-1", "--global"]), content="x"
    )
    assert created == Success(c.CreateMemory(content="x", namespace=("user", "u-1"), global_=True))


def test_the_client_parses_without_attrs_or_the_domain() -> None:
    """An agent runs `memory` a hundred times a day: its parse reads the JSON manifest, never the command table."""
    probe = (
        "import sys, json; import agent_memory.entrypoints.cli.client as client;"
        "client._parse(['create', 'x', '--expires-at', '2030-01-01T00:00:00Z', '--tag', 't']);"
        "client._parse(['search', 'x', '--limit', '3']);"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs', 'cattrs', 'returns')"
        " or m.startswith('agent_memory.domain'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_update_sets_and_clears_global(service: MemoryService) -> None:
    """Found by the table: `memory update` could not change whether a memory is global (REST and MCP could)."""
    made = service.create(c.CreateMemory(content="Use UTC everywhere")).unwrap()
    ref = made.memory.id
    made_global = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--global"])).unwrap()
    assert made_global["global"] is True
    kept = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--content", "Use UTC"])).unwrap()
    assert kept["global"] is True
    cleared = cli_handlers.update(service, build_parser().parse_args(["update", ref, "--no-global"])).unwrap()
    assert cleared["global"] is False


def test_update_clears_tags_and_citations(service: MemoryService) -> None:
    made = service.create(c.CreateMemory(content="Tagged", tags=("a",), citations=("x.py:1",))).unwrap()
    args = build_parser().parse_args(["update", made.memory.id, "--clear-tags", "--clear-citations"])
    cleared = cli_handlers.update(service, args).unwrap()
    assert (cleared["tags"], cleared["citations"]) == ([], [])


def test_a_text_listing_marks_a_deleted_memory_and_says_how_to_bring_it_back() -> None:
    memory = {"path": "work/a", "id": "x", "content": "hello\nmore", "deleted": True}
    payload = {"category": None, "description": "", "count": 1, "subcategories": [], "memories": [memory]}
    assert text_format.listing(payload).splitlines()[1] == "  work/a: hello (deleted: `memory restore` brings it back)"


def test_a_subcommand_with_no_handler_row_runs_the_command_its_spec_names(
    service: MemoryService, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found following the recipe: a CliSpec named otherwise than its command, with no row in cli/handlers, crashed
    with StopIteration (the command was looked up by the subcommand's name); it is found by its spec now."""
    renamed = CliSpec(name="stores-now", help="every store", command=c.ListStores, omit={"namespace": "tenants"})
    idle = CliSpec(name="idle", help="runs nothing")
    monkeypatch.setattr(cli_parser, "_SHIPPED", cli_manifest.manifest((*SPECS, renamed, idle)))
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    assert run(["stores-now"], env=env, services=lambda _settings: Success(seeded(service))) == 0
    assert "other" in capsys.readouterr().out
    assert run(["idle"], env=env, services=lambda _settings: Success(service)) == 1
    refused = json.loads(capsys.readouterr().err)
    assert refused["code"] == "INVALID_INPUT" and "cli/handlers.SUBCOMMANDS" in refused["error"]


def test_a_hit_found_by_a_part_of_a_long_memory_shows_that_part(
    clock: FixedClock, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 48: `memory search` names the part of a long memory that answered, in JSON (matched_part) and text."""
    service = long_service(clock)
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    assert run(["search", QUERY], env=env, services=lambda _settings: Success(service)) == 0
    hits = json.loads(capsys.readouterr().out)["results"]
    assert hits[0]["content"] == LONG and shows_the_last_part(hits[0]["matched_part"])
    assert all(hit["matched_part"] is None for hit in hits[1:])
    part = hits[0]["matched_part"]
    assert run(["search", QUERY, "--format", "text"], env=env, services=lambda _settings: Success(service)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == f"   matched (characters {part['start']}–{part['end']}): {part['text']}"
    assert sum(line.startswith("   matched") for line in lines) == 1  # the short memories answered as wholes
