"""The `memory` command's arguments: argparse built from manifest.json, every mistake reported as a JSON error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

FORMATS = ("json", "text")
MANIFEST = os.path.join(os.path.dirname(__file__), "manifest.json")


class UsageError(Exception):
    """An argument the user got wrong; reported as a JSON error on stderr, exit 1."""


class JsonArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. Run `{self.prog} --help` for usage.")


def timestamp(raw: str) -> datetime:
    """An ISO 8601 timestamp for --expires-at (naive means UTC)."""
    from agent_memory.entrypoints.timestamps import not_a_timestamp, parse_iso

    try:
        return parse_iso(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(not_a_timestamp(raw)) from None


def _common(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS lets these stand before or after the subcommand without one default hiding the other
    parser.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS, help="output format (default json)")
    parser.add_argument("--backend", default=argparse.SUPPRESS, help="chroma (default), qdrant or files")
    parser.add_argument("--data-dir", default=argparse.SUPPRESS, help="where the embedded backends keep data")
    parser.add_argument("--store", default=argparse.SUPPRESS, help="the store to use (default: default)")
    parser.add_argument(
        "--no-server",
        action="store_true",
        default=argparse.SUPPRESS,
        help="run in this process, not through the local memory server (also: MEMORY_SERVER=off)",
    )


class DamagedInstall(UsageError):
    """The package's own argument manifest is missing or unreadable: nothing the user typed, a broken install."""


def load_manifest(path: str | None = None) -> dict[str, Any]:
    """The arguments of every subcommand, generated from the command table by cli/manifest.py (stdlib only here:
    the client parses without importing attrs or the domain)."""
    where = path or MANIFEST

    def damaged(why: str) -> DamagedInstall:
        return DamagedInstall(
            f"agent-memory's install is damaged: its argument table {os.path.basename(where)} {why}. "
            "Reinstall it: pip install --force-reinstall agent-memory."
        )

    try:
        with open(where, encoding="utf-8") as handle:
            loaded: dict[str, Any] = json.load(handle)
    except (OSError, ValueError) as error:  # missing, unreadable, or not JSON (ValueError covers decode errors)
        raise damaged(f"cannot be read ({type(error).__name__})") from None
    if not isinstance(loaded, dict) or not isinstance(loaded.get("subcommands"), list):
        raise damaged("has no subcommand table")
    return loaded


def manifest_entry(name: str, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """One subcommand's manifest entry ("create", "store create"): its command, arguments and common fields."""
    found = manifest or with_table(_shipped())
    entry: dict[str, Any] = next(entry for entry in found["subcommands"] if entry["name"] == name)
    return entry


def with_table(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest and, when the domain is loaded in this process (the memory server, or `--no-server`), a
    subcommand for each command registered in the table since the manifest was written. The thin client, which
    never loads the domain, parses with the shipped manifest alone."""
    if "agent_memory.domain.dispatch" not in sys.modules:
        return manifest
    from agent_memory.entrypoints.cli.manifest import live_entries

    added = live_entries(manifest.get("commands", []))
    return {**manifest, "subcommands": [*manifest["subcommands"], *added]} if added else manifest


_SHIPPED: dict[str, Any] = {}


def _shipped() -> dict[str, Any]:
    if not _SHIPPED:
        _SHIPPED.update(load_manifest())
    return _SHIPPED


_TYPES: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "timestamp": timestamp}


def _add_argument(parser: argparse.ArgumentParser, argument: dict[str, Any]) -> None:
    name, kind = argument["name"], argument["kind"]
    options: dict[str, Any] = {"help": argument["help"].replace("%", "%%") or None}
    positional = not name.startswith("-")
    if positional:
        if argument["nargs"] is not None:
            options.update(nargs=argument["nargs"], default=argument["default"])
    else:
        options.update(dest=argument["dest"], default=argument["default"])
    if kind == "bool":
        options["action"] = argparse.BooleanOptionalAction if argument["negatable"] else "store_true"
    elif kind == "list":
        options["action"] = "append"
    elif kind in _TYPES:
        options["type"] = _TYPES[kind]
    if argument["check_choices"]:
        options["choices"] = argument["choices"]
    parser.add_argument(name, **options)


def _add_subcommands(parser: JsonArgumentParser, manifest: dict[str, Any]) -> None:
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=JsonArgumentParser)
    commands.required = True
    groups: dict[str, argparse._SubParsersAction] = {}  # type: ignore[type-arg]
    for entry in manifest["subcommands"]:
        *group, name = entry["name"].split()
        sub = (groups[group[0]] if group else commands).add_parser(name, help=entry["help"])
        if entry["group"]:
            groups[name] = sub.add_subparsers(dest=entry["group"], metavar="ACTION", parser_class=JsonArgumentParser)
            groups[name].required = True
            continue
        for argument in entry["arguments"]:
            _add_argument(sub, argument)
        _common(sub)


def build_parser(manifest: dict[str, Any] | None = None) -> JsonArgumentParser:
    """The `memory` parser: the shipped manifest's subcommands (or the given manifest's, in tests)."""
    from agent_memory._version import __version__

    parser = JsonArgumentParser(prog="memory", description="Long-term memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _common(parser)
    _add_subcommands(parser, manifest or with_table(_shipped()))
    return parser
