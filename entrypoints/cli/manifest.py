"""Generates the `memory` CLI's argument manifest (manifest.json) from the command table.

The light client must not import attrs or the domain to parse its arguments, so the parser (cli_parser.py) reads a
JSON manifest written from the commands' fields and FieldDocs. A `CliSpec` per subcommand holds presentation only
(the CLI's ToolSpec): the command it runs, its positional fields, flag renames, CLI wording where a field's sentence
is written for JSON callers, the fields it leaves out and why (the doors' `DoorSpec`), and options only the CLI has. Every other field of the
command becomes a flag with no edit here, and a command of the table that no spec presents becomes a subcommand of
its own name (`table_specs`). Regenerate after changing a command:

    python -m agent_memory.entrypoints.cli.manifest --write
"""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from attrs import NOTHING, Attribute, frozen

from agent_memory.domain import commands as c
from agent_memory.domain.command_docs import command_doc, command_fields, command_name, field_doc, is_required
from agent_memory.domain.dispatch import commands
from agent_memory.entrypoints.door_spec import DoorSpec

MANIFEST_PATH = Path(__file__).with_name("manifest.json")
WRITE_COMMAND = "python -m agent_memory.entrypoints.cli.manifest --write"
_TENANT = "namespace: the CLI acts for one user; tenants use REST or MCP with a token"
_IMPORT_ONLY = "set by `memory import` only"
_ACT_ON_EXPIRED = "act on the memory even if it has expired (refused otherwise)"
# fields that the common options (cli_parser._common) carry on every subcommand
COMMON_FIELDS = frozenset({"store"})


@frozen(kw_only=True)
class Option:
    """An argument only the CLI has (no command field): argparse's keywords, kept as JSON."""

    name: str  # "--jsonl" or a positional's name
    kind: str = "str"  # str, int, bool (store_true) or list (append)
    help: str = ""
    default: Any = None
    choices: tuple[str, ...] = ()
    nargs: str | None = None
    dest: str | None = None


@frozen(kw_only=True, eq=False)
class CliSpec(DoorSpec):
    """One `memory` subcommand: a door spec (the command it runs, the CLI's names for fields — flags without --, or
    positionals —, the fields it leaves out and why, CLI wording) and what only the CLI shows (never what it does)."""

    help: str
    also: tuple[type[c.Asks[Any]], ...] = ()  # other commands it runs (create --jsonl: CreateMemories)
    positional: tuple[str, ...] = ()  # command fields taken as positionals, in order
    negatable: frozenset[str] = frozenset()  # bool fields offered as --x / --no-x
    optional: frozenset[str] = frozenset()  # required fields the CLI may go without (the door fills them)
    domain_checks_choices: frozenset[str] = frozenset()  # choices the use case refuses in its own words
    extra: tuple[Option, ...] = ()  # options only the CLI has
    group: str | None = None  # a group's dest for its action (store_command); a group has no arguments


def _help(text: str) -> str:
    """A FieldDoc sentence as CLI help: lowercase start (unless an acronym), no final full stop."""
    text = text.removesuffix(".")
    return text[0].lower() + text[1:] if len(text) > 1 and text[1].islower() else text


_CONTENT_STDIN = "the memory's text ('-' or omitted reads stdin)"
_NAMESPACE = "tenant labels separated by '/', e.g. user/u-123"
_REF = {"ref": "id"}
_WORDING_METADATA = {
    "tags": "a tag (repeat for several)",
    "citations": "a source reference, e.g. a file:line or a URL (repeatable)",
}


def _on_one_memory(name: str, help: str, command: type[c.Asks[Any]], **presentation: Any) -> CliSpec:
    """A subcommand acting on one memory, named by the positional `id` (its id or path); tenants are REST's and
    MCP's. `presentation` adds to that (more positionals, wording)."""
    presentation.setdefault("positional", ("ref",))
    return CliSpec(name=name, help=help, command=command, names=_REF, omit={"namespace": _TENANT}, **presentation)


def _on_category(name: str, help: str, command: type[c.Asks[Any]], *positional: str) -> CliSpec:
    """A `memory category …` subcommand: the category is the positional `path`, then `positional`."""
    return CliSpec(
        name=name,
        help=help,
        command=command,
        positional=("category", *positional),
        names={"category": "path"},
        omit={"namespace": _TENANT},
    )


SPECS: tuple[CliSpec, ...] = (
    CliSpec(
        name="create",
        help="store a new memory (content '-' reads stdin)",
        command=c.CreateMemory,
        also=(c.CreateMemories,),
        positional=("content",),
        names={"decay_policy": "decay", "global_": "global"},
        wording={
            "content": "the memory's text; omit with --jsonl",
            "global_": "applies across projects",
            "namespace": _NAMESPACE,
            **_WORDING_METADATA,
        },
        omit={"path": "`memory add PATH` creates at a path", "created_at": _IMPORT_ONLY},
        optional=frozenset({"content"}),
        domain_checks_choices=frozenset({"decay_policy"}),
        extra=(Option(name="--jsonl", help="create many: a JSON Lines file ('-' for stdin), one object per memory"),),
    ),
    CliSpec(
        name="add",
        help="create a memory at a path (category/…/slug)",
        command=c.CreateMemory,
        positional=("path",),
        names={"decay_policy": "decay"},
        wording={"content": _CONTENT_STDIN, "path": _help(c.ADD_PATH), **_WORDING_METADATA},
        omit={
            "global_": "`memory create --global`",
            "namespace": _TENANT,
            "thread": "`memory create --thread`",
            "created_at": _IMPORT_ONLY,
        },
        optional=frozenset({"content"}),
        required=frozenset({"path"}),
        domain_checks_choices=frozenset({"decay_policy"}),
    ),
    CliSpec(
        name="search",
        help="find memories by meaning and keywords",
        command=c.SearchMemories,
        positional=("query",),
        names={"path_prefix": "category", "global_": "global"},
        wording={
            "global_": "only global memories",
            "tags": "required tag (repeatable)",
            "namespace": "search this namespace and those below it ('/'-separated)",
            "offset": "best hits to skip, for paging (see has_more)",
        },
    ),
    _on_one_memory("get", "show one memory by id or path", c.GetMemory),
    _on_one_memory("reinforce", "reset a reinforceable memory's decay", c.ReinforceMemory),
    _on_one_memory(
        "delete",
        "soft-delete a memory (it stays stored, hidden)",
        c.DeleteMemory,
        wording={"include_expired": _ACT_ON_EXPIRED},
    ),
    _on_one_memory("restore", "undo a soft delete: the memory comes back with its id and every field", c.RestoreMemory),
    _on_one_memory("remove", "delete a memory for good", c.RemoveMemory),
    _on_one_memory("find-duplicates", "list the memories of its namespace that say what it says", c.FindDuplicates),
    CliSpec(
        name="update",
        help="change a memory's content or metadata",
        command=c.UpdateMemory,
        positional=("ref",),
        names={**_REF, "decay_policy": "decay", "global_": "global"},
        wording={
            "global_": "make it global (--no-global: not global); omit to keep",
            "tags": "a new tag, replacing the tags (repeat for several; --clear-tags clears them)",
            "citations": "a new source reference, replacing the citations (repeatable; --clear-citations clears them)",
            "include_expired": _ACT_ON_EXPIRED,
        },
        omit={"namespace": _TENANT},
        negatable=frozenset({"global_"}),
        domain_checks_choices=frozenset({"decay_policy"}),
        extra=(
            Option(name="--clear-tags", kind="bool", default=False, help="remove every tag"),
            Option(name="--clear-citations", kind="bool", default=False, help="remove every citation"),
        ),
    ),
    _on_one_memory(
        "move",
        "give a memory a new path",
        c.MoveMemory,
        positional=("ref", "destination"),
        wording={"include_expired": _ACT_ON_EXPIRED},
    ),
    CliSpec(
        name="list",
        help="a category's memories and subcategories (recursive)",
        command=c.ListMemories,
        positional=("category",),
        wording={"limit": "most memories to show, 1 to 1000 (default: all)"},
        omit={"namespace": _TENANT},
    ),
    CliSpec(
        name="recent",
        help="the most recently updated memories",
        command=c.RecentMemories,
        wording={"limit": "1 to 100 (default 5)"},
        omit={"namespace": _TENANT},
    ),
    CliSpec(
        name="prune", help="delete expired memories for good", command=c.PruneMemories, omit={"namespace": _TENANT}
    ),
    CliSpec(
        name="reindex",
        help="re-embed every memory of the store (after a model change or hand edits)",
        command=c.ReindexStore,
        omit={"progress": "a bar on stderr when it is a terminal"},
    ),
    CliSpec(
        name="status", help="check the backend and count memories", command=c.StoreStatus, omit={"namespace": _TENANT}
    ),
    CliSpec(
        name="export",
        help="write memories as JSON Lines (all stores unless --store)",
        command=c.ExportMemories,
        omit={"stores": "--store exports one store; all stores without it"},
        extra=(Option(name="--output", default="-", help="file to write ('-' for stdout, the default)"),),
    ),
    CliSpec(
        name="import",
        help="read JSON Lines from export; idempotent by id",
        command=c.ImportMemories,
        omit={
            "outlines": "read from the input's store lines",
            "memories": "read from the input's memory lines",
            "progress": "a bar on stderr when it is a terminal",
        },
        extra=(Option(name="input", nargs="?", default="-", help="file to read ('-' for stdin, the default)"),),
    ),
    CliSpec(name="store", help="list or create stores", group="store_command"),
    CliSpec(
        name="store list", help="every store and its memory count", command=c.ListStores, omit={"namespace": _TENANT}
    ),
    CliSpec(name="store create", help="create an empty store", command=c.CreateStore, positional=("name",)),
    CliSpec(name="category", help="create, describe or delete categories", group="category_command"),
    _on_category("category create", "create a category (no-op if it exists)", c.CreateCategory),
    _on_category(
        "category describe", "set a category's description (≤ 500 characters)", c.DescribeCategory, "description"
    ),
    _on_category(
        "category delete",
        "delete a category and everything under it: its memories are soft-deleted (restorable); --purge: for good",
        c.DeleteCategory,
    ),
    CliSpec(
        name="mcp",
        help="serve every memory tool to MCP clients (stdio by default)",
        extra=(
            Option(name="--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or http"),
            Option(name="--host", default="127.0.0.1", help="the address to listen on with http (default 127.0.0.1)"),
            Option(name="--port", kind="int", default=8765, help="the port to listen on with http (default 8765)"),
            Option(
                name="--api-token",
                help="with http, require 'Authorization: Bearer <token>' (default: $MEMORY_API_TOKEN); "
                "needed off loopback",
            ),
        ),
    ),
    CliSpec(
        name="serve",
        help="serve every use case as a REST API with OpenAPI docs at /docs",
        extra=(
            Option(name="--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)"),
            Option(name="--port", kind="int", default=8080, help="the port to listen on (default 8080)"),
            Option(
                name="--api-token",
                help="require 'Authorization: Bearer <token>' (default: $MEMORY_API_TOKEN; the variable keeps it "
                "out of ps)",
            ),
            Option(
                name="--workers",
                kind="int",
                help="how many processes answer on the port (default: $MEMORY_SERVE_WORKERS, else 1); more than 1 "
                "needs a Chroma or Qdrant server",
            ),
        ),
    ),
    CliSpec(
        name="ui",
        help="open the web page to browse, search and correct memories (serves the REST API on 127.0.0.1)",
        extra=(
            Option(name="--port", kind="int", default=8080, help="the port to listen on (default 8080)"),
            Option(
                name="--api-token",
                help="require 'Authorization: Bearer <token>' (default: $MEMORY_API_TOKEN); the page asks for it",
            ),
        ),
    ),
    CliSpec(
        name="server", help="show or stop the local memory server the command runs through", group="server_command"
    ),
    CliSpec(name="server status", help="whether this user's server runs, and the stores it holds open"),
    CliSpec(
        name="server list",
        help="every memory server of this user: pid, state, RSS, clients, idle time, the stores it holds open",
    ),
    CliSpec(
        name="server stop",
        help="stop it (the next command starts a new one)",
        extra=(
            Option(name="--all", kind="bool", default=False, help="and the servers draining for a successor"),
            Option(name="--everywhere", kind="bool", default=False, help="every memory server of this user"),
        ),
    ),
)


def table_specs(specs: tuple[CliSpec, ...] = SPECS) -> tuple[CliSpec, ...]:
    """A subcommand for each command of the table (read now: a command registered after import is in it) that no
    spec presents: named as the command (CountMemories → count-memories), its docstring as help, every field a flag."""
    presented = {kind for spec in specs for kind in (spec.command, *spec.also) if kind is not None}
    return tuple(
        CliSpec(name=command_name(kind).replace("_", "-"), help=_help(command_doc(kind)), command=kind)
        for kind in commands()
        if kind not in presented
    )


def _kind(attribute: Attribute[Any], hints: Mapping[str, Any]) -> str:
    """The CLI's type for a field: str, int, float, bool, list, timestamp, or namespace ('/'-separated labels;
    `namespace_filter` drops empty labels, for a field that filters rather than places)."""
    raw = hints[attribute.name]
    args = [arg for arg in typing.get_args(raw) if arg is not type(None)] if typing.get_origin(raw) else [raw]
    found = args[0] if len(args) == 1 else raw
    if typing.get_origin(found) is tuple:
        if attribute.name == "namespace":
            return "namespace" if attribute.default == () else "namespace_filter"
        return "list"
    kinds: dict[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", datetime: "timestamp"}
    if found not in kinds:
        raise TypeError(f"{attribute.name}: the CLI has no type for {raw!r}; add one to cli_manifest._kind")
    return kinds[found]


def _argument(spec: CliSpec, attribute: Attribute[Any], hints: Mapping[str, Any]) -> dict[str, Any]:
    name, kind, doc = attribute.name, _kind(attribute, hints), field_doc(attribute)
    cli_name = spec.names.get(name, name).replace("_", "-")
    positional = name in spec.positional
    default = attribute.default if attribute.default is not NOTHING else None
    if isinstance(default, tuple):
        default = None  # argparse appends to its default: an empty list stands for the command's default
    dest = name if kind == "list" or name == "global_" else cli_name.replace("-", "_")
    if kind == "list" and name not in spec.names:
        cli_name = cli_name.removesuffix("s")  # --tag, --citation: one per flag, repeated
    required = (is_required(attribute) or name in spec.required) and name not in spec.optional
    return {
        "field": name,
        "name": cli_name if positional else f"--{cli_name}",
        "dest": dest,
        "kind": kind,
        "help": spec.wording.get(name, _help(doc.text)),
        "default": default,
        "required": required,
        "nargs": None if not positional or required else "?",
        "negatable": name in spec.negatable,
        "choices": list(doc.choices),
        "check_choices": bool(doc.choices) and name not in spec.domain_checks_choices,
        "least": doc.least,
        "most": doc.most,
        "max_length": doc.max_length,
    }


def _option(option: Option) -> dict[str, Any]:
    positional = not option.name.startswith("-")
    return {
        "field": None,
        "name": option.name,
        "dest": option.dest or option.name.lstrip("-").replace("-", "_"),
        "kind": option.kind,
        "help": option.help,
        "default": option.default,
        "required": False,
        "nargs": option.nargs if positional else None,
        "negatable": False,
        "choices": list(option.choices),
        "check_choices": bool(option.choices),
        "least": None,
        "most": None,
        "max_length": None,
    }


def subcommand(spec: CliSpec) -> dict[str, Any]:
    """One subcommand's manifest entry: its help, its command and its arguments (positionals first)."""
    arguments: list[dict[str, Any]] = []
    if spec.command is not None:
        hints = typing.get_type_hints(spec.command)
        offered = [a for a in command_fields(spec.command) if a.name not in spec.omit and a.name not in COMMON_FIELDS]
        by_name = {a.name: a for a in offered}
        ordered = [by_name[name] for name in spec.positional] + [a for a in offered if a.name not in spec.positional]
        arguments = [_argument(spec, attribute, hints) for attribute in ordered]
    return {
        "name": spec.name,
        "help": spec.help,
        "command": None if spec.command is None else spec.command.__name__,
        "group": spec.group,
        "common_fields": sorted(COMMON_FIELDS & {a.name for a in command_fields(spec.command)})
        if spec.command is not None
        else [],
        "arguments": arguments + [_option(option) for option in spec.extra],
    }


def manifest(specs: tuple[CliSpec, ...] = SPECS) -> dict[str, Any]:
    """The whole manifest, as cli_parser reads it: the specs' subcommands and one for each table command no spec
    presents, and the names of the table's commands (a command registered later is added at run time:
    cli_parser.build_parser)."""
    every = (*specs, *table_specs(specs))
    return {
        "generated_by": WRITE_COMMAND,
        "commands": [kind.__name__ for kind in commands()],
        "subcommands": [subcommand(spec) for spec in every],
    }


def live_entries(known: list[str]) -> list[dict[str, Any]]:
    """The subcommands of table commands registered since the manifest was written (not among `known`)."""
    return [
        subcommand(spec) for spec in table_specs() if spec.command is not None and spec.command.__name__ not in known
    ]


def manifest_text(specs: tuple[CliSpec, ...] = SPECS) -> str:
    return json.dumps(manifest(specs), ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    """`--write` writes the manifest beside this module; `--check` exits 1 if the shipped one is stale."""
    text = manifest_text()
    if argv == ["--write"]:
        MANIFEST_PATH.write_text(text, encoding="utf-8")
        return 0
    if argv == ["--check"]:
        current = MANIFEST_PATH.read_text(encoding="utf-8") if MANIFEST_PATH.exists() else ""
        return 0 if current == text else 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
