"""The `memory` command: parses arguments, calls one use case, prints JSON (or text), exits 0 or 1."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from returns.result import Failure, Result

from domain.commands import CreateMemory, SearchMemories
from domain.errors import DomainError, ErrorCode
from entrypoints import text_format
from entrypoints.json_codec import error_json, search_json, status_json, view_json

if TYPE_CHECKING:
    from domain.service import MemoryService

FORMATS = ("json", "text")


class UsageError(Exception):
    """An argument the user got wrong; reported as a JSON error, exit 1."""


class JsonArgumentParser(argparse.ArgumentParser):
    """argparse that reports mistakes as a JSON error on stderr with exit 1, never a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. Run `{self.prog} --help` for usage.")


def _common(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS lets the options stand before or after the subcommand without one default hiding the other
    parser.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS, help="output format (default json)")
    parser.add_argument("--backend", default=argparse.SUPPRESS, help="chroma (default), qdrant or files")
    parser.add_argument("--data-dir", default=argparse.SUPPRESS, help="where the embedded backends keep data")
    parser.add_argument("--store", default=argparse.SUPPRESS, help="the store to use (default: default)")


def build_parser() -> JsonArgumentParser:
    parser = JsonArgumentParser(prog="memory", description="Long-term memory for AI agents.")
    _common(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=JsonArgumentParser)
    commands.required = True

    create = commands.add_parser("create", help="store a new memory")
    create.add_argument("content", help="the memory's text")
    create.add_argument("--agent", default="")
    create.add_argument("--personality", default="")
    create.add_argument("--project", default="")
    create.add_argument("--type", default="")
    create.add_argument("--global", dest="global_", action="store_true", help="applies across projects")
    create.add_argument("--decay", default="stable", help="stable (default), contextual or reinforceable")
    _common(create)

    search = commands.add_parser("search", help="find memories by meaning")
    search.add_argument("query")
    search.add_argument("--agent")
    search.add_argument("--personality")
    search.add_argument("--project")
    search.add_argument("--type")
    search.add_argument("--global", dest="global_", action="store_true", default=None, help="only global memories")
    search.add_argument("--limit", type=int, help="most results to return (default 10)")
    search.add_argument("--min-confidence", type=float, help="confidence floor, 0 to 1 (default 0.3)")
    _common(search)

    for name, text in (
        ("get", "show one memory"),
        ("reinforce", "reset a reinforceable memory's decay"),
        ("delete", "soft-delete a memory"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("id", help="the memory's id")
        _common(sub)

    status = commands.add_parser("status", help="check the backend and count memories")
    _common(status)
    return parser


def _emit(payload: dict[str, Any], fmt: str, render: Callable[[dict[str, Any]], str]) -> int:
    sys.stdout.write((render(payload) if fmt == "text" else json.dumps(payload, ensure_ascii=False)) + "\n")
    return 0


def _fail(error: DomainError | dict[str, Any]) -> int:
    body = error_json(error) if isinstance(error, DomainError) else error
    sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    return 1


def _settings_flags(args: argparse.Namespace) -> dict[str, object]:
    return {
        "backend": getattr(args, "backend", None),
        "data_dir": getattr(args, "data_dir", None),
        "store": getattr(args, "store", None),
    }


def run(argv: Sequence[str]) -> int:
    """Run one command; returns the exit code. Every failure is JSON on stderr."""
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        return _fail({"error": str(error)})
    fmt: str = getattr(args, "format", "json")

    from entrypoints.bootstrap import build_service
    from entrypoints.settings import load_settings

    loaded = load_settings(_settings_flags(args))
    if isinstance(loaded, Failure):
        return _fail(loaded.failure())
    settings = loaded.unwrap()
    built = build_service(settings)
    if isinstance(built, Failure):
        return _fail(built.failure())
    service = built.unwrap()

    handler, render = HANDLERS[args.command]
    outcome = handler(service, args)
    if isinstance(outcome, Failure):
        failure = outcome.failure()
        return _fail(_unhealthy(failure, settings) if args.command == "status" else failure)
    return _emit(outcome.unwrap(), fmt, render)


Outcome = Result[dict[str, Any], DomainError]


def _create(service: MemoryService, args: argparse.Namespace) -> Outcome:
    command = CreateMemory(
        content=args.content,
        agent=args.agent,
        personality=args.personality,
        project=args.project,
        type=args.type,
        global_=args.global_,
        decay_policy=args.decay,
    )
    return service.create(command).map(view_json)


def _search(service: MemoryService, args: argparse.Namespace) -> Outcome:
    command = SearchMemories(
        query=args.query,
        agent=args.agent,
        personality=args.personality,
        project=args.project,
        type=args.type,
        global_=args.global_,
        limit=args.limit,
        min_confidence=args.min_confidence,
    )
    return service.search(command).map(search_json)


def _get(service: MemoryService, args: argparse.Namespace) -> Outcome:
    return service.get(args.id).map(view_json)


def _reinforce(service: MemoryService, args: argparse.Namespace) -> Outcome:
    return service.reinforce(args.id).map(view_json)


def _delete(service: MemoryService, args: argparse.Namespace) -> Outcome:
    return service.delete(args.id).map(lambda memory: {"id": memory.id, "deleted": True})


def _status(service: MemoryService, args: argparse.Namespace) -> Outcome:
    return service.status().map(status_json)


HANDLERS: dict[str, tuple[Callable[[MemoryService, argparse.Namespace], Outcome], Callable[[dict[str, Any]], str]]] = {
    "create": (_create, text_format.created),
    "search": (_search, text_format.search),
    "get": (_get, text_format.memory),
    "reinforce": (_reinforce, text_format.reinforced),
    "delete": (_delete, text_format.deleted),
    "status": (_status, text_format.status),
}


def _unhealthy(error: DomainError, settings: Any) -> dict[str, Any]:
    where = (
        f"{settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host else str(settings.data_dir / "chroma")
    )
    body: dict[str, Any] = {"status": "unhealthy", "error": error.message, "backend": settings.backend}
    if settings.backend == "chroma":
        body |= {"chromadb_host": where, "collection": settings.collection}
    if error.code is not ErrorCode.BACKEND_UNAVAILABLE and error.cause:
        body["cause"] = error.cause
    return body


def main() -> None:
    """Console entry point. The last-resort handler keeps the promise 'JSON error, never a traceback'."""
    try:
        code = run(sys.argv[1:])
    except KeyboardInterrupt:
        code = _fail({"error": "Interrupted."})
    except Exception as error:
        code = _fail({"error": f"Unexpected error ({type(error).__name__}): {error}. Please report this."})
    sys.exit(code)
