"""The `memory` command's arguments: argparse, with every mistake reported as a JSON error."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import NoReturn

FORMATS = ("json", "text")
MODES = ("hybrid", "semantic", "keyword")
MCP_TRANSPORTS = ("stdio", "http")
_ACT_ON_EXPIRED = "act on the memory even if it has expired (refused otherwise)"


class UsageError(Exception):
    """An argument the user got wrong; reported as a JSON error on stderr, exit 1."""


class JsonArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. Run `{self.prog} --help` for usage.")


def timestamp(raw: str) -> datetime:
    """An ISO 8601 timestamp for --expires-at (naive means UTC)."""
    from agent_memory.entrypoints.timestamps import parse_iso

    try:
        return parse_iso(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{raw!r} is not an ISO 8601 timestamp in the years 0001–9999 (UTC) like 2026-12-31T23:59:00Z"
        ) from None


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


def _scope(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    blank = "" if defaults else None
    for name in ("agent", "personality", "project", "type"):
        parser.add_argument(f"--{name}", default=blank)


def _metadata(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tag", dest="tags", action="append", help="a tag (repeat for several)")
    parser.add_argument("--citation", dest="citations", action="append", help="a source reference (repeatable)")
    parser.add_argument("--source", help="where the memory came from")
    parser.add_argument("--expires-at", type=timestamp, help="ISO 8601 time after which it is hidden")


def _add_memory_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    create = commands.add_parser("create", help="store a new memory (content '-' reads stdin)")
    create.add_argument("content", nargs="?", help="the memory's text; omit with --jsonl")
    _scope(create, defaults=True)
    create.add_argument("--global", dest="global_", action="store_true", help="applies across projects")
    create.add_argument("--decay", default="stable", help="stable (default), contextual or reinforceable")
    create.add_argument("--namespace", help="tenant labels separated by '/', e.g. user/u-123")
    create.add_argument("--jsonl", help="create many: a JSON Lines file ('-' for stdin), one object per memory")
    create.add_argument(
        "--thread",
        default="",
        help="the conversation or session it belongs to: memories of one thread lend each other context in search",
    )
    _metadata(create)
    _common(create)

    add = commands.add_parser("add", help="create a memory at a path (category/…/slug)")
    add.add_argument("path")
    add.add_argument("--content", help="the memory's text ('-' or omitted reads stdin)")
    _scope(add, defaults=True)
    add.add_argument("--decay", default="stable")
    _metadata(add)
    _common(add)

    search = commands.add_parser("search", help="find memories by meaning and keywords")
    search.add_argument("query")
    _scope(search, defaults=False)
    search.add_argument("--global", dest="global_", action="store_true", default=None, help="only global memories")
    search.add_argument("--tag", dest="tags", action="append", help="required tag (repeatable)")
    search.add_argument("--namespace", help="search this namespace and those below it")
    search.add_argument("--category", help="only memories under this category path")
    search.add_argument("--limit", type=int, help="most results to return (default 10)")
    search.add_argument("--offset", type=int, default=0, help="best hits to skip, for paging (see has_more)")
    search.add_argument("--min-confidence", type=float, help="confidence floor, 0 to 1 (default 0.3)")
    search.add_argument("--include-expired", action="store_true")
    search.add_argument("--mode", choices=MODES, default="hybrid", help="hybrid (default), semantic or keyword")
    _common(search)

    get = commands.add_parser("get", help="show one memory by id or path")
    get.add_argument("id", help="the memory's id or path")
    get.add_argument("--include-expired", action="store_true")
    _common(get)

    for name, text in (
        ("reinforce", "reset a reinforceable memory's decay"),
        ("delete", "soft-delete a memory (it stays stored, hidden)"),
        ("remove", "delete a memory for good"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("id", help="the memory's id or path")
        if name == "delete":
            sub.add_argument("--include-expired", action="store_true", help=_ACT_ON_EXPIRED)
        _common(sub)

    update = commands.add_parser("update", help="change a memory's content or metadata")
    update.add_argument("id", help="the memory's id or path")
    update.add_argument("--content")
    _scope(update, defaults=False)
    update.add_argument("--decay")
    update.add_argument(
        "--global",
        dest="global_",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="make it global (--no-global: not global); omit to keep",
    )
    _metadata(update)
    update.add_argument("--clear-tags", action="store_true")
    update.add_argument("--clear-citations", action="store_true")
    update.add_argument("--clear-expiry", action="store_true")
    update.add_argument("--include-expired", action="store_true", help=_ACT_ON_EXPIRED)
    _common(update)

    move = commands.add_parser("move", help="give a memory a new path")
    move.add_argument("id", help="the memory's id or path")
    move.add_argument("destination", help="the new path")
    move.add_argument("--include-expired", action="store_true", help=_ACT_ON_EXPIRED)
    _common(move)


def _add_collection_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    listing = commands.add_parser("list", help="a category's memories and subcategories (recursive)")
    listing.add_argument("category", nargs="?")
    listing.add_argument("--limit", type=int, help="most memories to show, 1 to 1000 (default: all)")
    listing.add_argument("--offset", type=int, default=0, help="memories to skip, for paging (see total)")
    listing.add_argument("--include-expired", action="store_true")
    _common(listing)

    recent = commands.add_parser("recent", help="the most recently updated memories")
    recent.add_argument("--limit", type=int, default=5, help="1 to 100 (default 5)")
    recent.add_argument("--category")
    recent.add_argument("--include-expired", action="store_true")
    _common(recent)

    prune = commands.add_parser("prune", help="delete expired memories for good")
    prune.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    _common(prune)

    reindex = commands.add_parser(
        "reindex", help="re-embed every memory of the store (after a model change or hand edits)"
    )
    _common(reindex)

    status = commands.add_parser("status", help="check the backend and count memories")
    _common(status)

    export = commands.add_parser("export", help="write memories as JSON Lines (all stores unless --store)")
    export.add_argument("--output", default="-", help="file to write ('-' for stdout, the default)")
    _common(export)

    importing = commands.add_parser("import", help="read JSON Lines from export; idempotent by id")
    importing.add_argument("input", nargs="?", default="-", help="file to read ('-' for stdin, the default)")
    _common(importing)

    store = commands.add_parser("store", help="list or create stores")
    store_commands = store.add_subparsers(dest="store_command", metavar="ACTION", parser_class=JsonArgumentParser)
    store_commands.required = True
    _common(store_commands.add_parser("list", help="every store and its memory count"))
    store_create = store_commands.add_parser("create", help="create an empty store")
    store_create.add_argument("name")
    _common(store_create)

    category = commands.add_parser("category", help="create, describe or delete categories")
    cat_commands = category.add_subparsers(dest="category_command", metavar="ACTION", parser_class=JsonArgumentParser)
    cat_commands.required = True
    cat_create = cat_commands.add_parser("create", help="create a category (no-op if it exists)")
    cat_create.add_argument("path")
    cat_create.add_argument("--description", default="")
    _common(cat_create)
    cat_describe = cat_commands.add_parser("describe", help="set a category's description (≤ 500 characters)")
    cat_describe.add_argument("path")
    cat_describe.add_argument("description")
    _common(cat_describe)
    cat_delete = cat_commands.add_parser("delete", help="delete a non-root category and everything under it")
    cat_delete.add_argument("path")
    _common(cat_delete)


def _add_server_commands(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    mcp = commands.add_parser("mcp", help="serve every memory tool to MCP clients (stdio by default)")
    mcp.add_argument("--transport", choices=MCP_TRANSPORTS, default="stdio", help="stdio (default) or http")
    mcp.add_argument("--host", default="127.0.0.1", help="the address to listen on with http (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="the port to listen on with http (default 8765)")
    mcp.add_argument(
        "--api-token",
        help="with http, require 'Authorization: Bearer <token>' (default: $MEMORY_API_TOKEN); needed off loopback",
    )
    _common(mcp)

    serve = commands.add_parser("serve", help="serve every use case as a REST API with OpenAPI docs at /docs")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="the port to listen on (default 8080)")
    serve.add_argument(
        "--api-token",
        help="require 'Authorization: Bearer <token>' (default: $MEMORY_API_TOKEN; the variable keeps it out of ps)",
    )
    _common(serve)

    server = commands.add_parser("server", help="show or stop the local memory server the command runs through")
    server_commands = server.add_subparsers(dest="server_command", metavar="ACTION", parser_class=JsonArgumentParser)
    server_commands.required = True
    _common(server_commands.add_parser("status", help="whether a server runs for this data directory and backend"))
    stop = server_commands.add_parser("stop", help="stop it (the next command starts a new one)")
    stop.add_argument("--all", action="store_true", help="every backend's server of this data directory")
    _common(stop)


def build_parser() -> JsonArgumentParser:
    from agent_memory._version import __version__

    parser = JsonArgumentParser(prog="memory", description="Long-term memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _common(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=JsonArgumentParser)
    commands.required = True
    _add_memory_commands(commands)
    _add_collection_commands(commands)
    _add_server_commands(commands)
    return parser
