"""The `memory` command: parse, build the service from settings, run one handler, print JSON or text, exit 0/1."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from returns.methods import unwrap_or_failure
from returns.result import Failure, Result

from agent_memory.domain.errors import DomainError, ErrorCode, invalid_input
from agent_memory.entrypoints.cli.parser import UsageError, build_parser
from agent_memory.entrypoints.error_table import FAILED, row
from agent_memory.entrypoints.json_codec import error_json

if TYPE_CHECKING:
    from agent_memory.domain.service import MemoryService
    from agent_memory.entrypoints.mcp.server import StdioSession
    from agent_memory.entrypoints.settings import Settings

    Services = Callable[[Settings], Result[MemoryService, DomainError]]


def _print(stream: Any, payload: dict[str, Any] | str) -> None:
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    stream.write(text + "\n")


def _fail(body: dict[str, Any], exit_code: int = FAILED) -> int:
    _print(sys.stderr, body)
    return exit_code


def _refuse(error: DomainError, body: dict[str, Any] | None = None) -> int:
    """A domain failure on stderr (its JSON, or `body`), exiting with its code's exit status."""
    return _fail(error_json(error) if body is None else body, row(error).exit_code)


def _settings_flags(args: Any) -> dict[str, object]:
    return {name: getattr(args, name, None) for name in ("backend", "data_dir", "store")}


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, services: Services | None = None) -> int:
    """Run one command and return its exit code; every failure is a JSON object on stderr. The memory server
    (cli/server/process.py) passes the client's environment and its own, long-lived services; alone, it builds one."""
    from agent_memory.entrypoints.json_codec import has_lone_surrogate

    broken = next((number for number, arg in enumerate(argv, start=1) if has_lone_surrogate(arg)), None)
    if broken is not None:  # bytes that were not UTF-8, decoded by Python with surrogateescape
        return _refuse(invalid_input(f"Argument {broken} is not valid UTF-8: pass text encoded as UTF-8."))
    if not argv:  # a bare `memory`: someone finding their way, not a script's mistake
        sys.stdout.write(build_parser().format_help())
        return 0
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        return _refuse(invalid_input(str(error)))
    if args.command in SERVERS:
        return SERVERS[args.command](args)

    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.cli.handlers import handler_for
    from agent_memory.entrypoints.settings import load_settings

    fmt: str = getattr(args, "format", "json")
    handler, render = handler_for(args.command)
    build: Services = services or build_service
    loaded = load_settings(_settings_flags(args), env)
    outcome: Result[int, int] = loaded.alt(lambda error: _refuse(error)).bind(
        lambda settings: (
            build(settings)
            .alt(lambda error: _refuse(error))
            .bind(
                lambda service: (
                    handler(service, args)
                    .map(lambda payload: _exposure(payload, settings) if args.command == "status" else payload)
                    .map(lambda payload: _emit(payload, fmt, render))
                    .alt(
                        lambda error: _refuse(
                            error, _status_body(error, settings) if args.command == "status" else None
                        )
                    )
                )
            )
        )
    )
    return unwrap_or_failure(outcome)


def _serve_mcp(args: Any, env: Mapping[str, str] | None = None, session: StdioSession | None = None) -> int:
    """`memory mcp`: runs a server until its client goes away instead of printing one payload."""
    import os

    from agent_memory.entrypoints.mcp.server import run_mcp
    from agent_memory.entrypoints.settings import load_settings

    environment = os.environ if env is None else env
    token = args.api_token or environment.get("MEMORY_API_TOKEN") or None
    outcome: Result[int, int] = (
        load_settings(_settings_flags(args), env)
        .alt(lambda error: _refuse(error))
        .map(
            lambda settings: run_mcp(
                settings, transport=args.transport, host=args.host, port=args.port, api_token=token, session=session
            )
        )
    )
    return unwrap_or_failure(outcome)


def settings_of(argv: Sequence[str], env: Mapping[str, str]) -> Result[Settings, DomainError]:
    """The settings a command line runs with (the memory server checks them before it runs the command)."""
    from agent_memory.entrypoints.settings import load_settings

    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        return Failure(invalid_input(str(error)))
    return load_settings(_settings_flags(args), env)


def serve_mcp_session(argv: Sequence[str], env: Mapping[str, str], session: StdioSession) -> int:
    """`memory mcp` (stdio) inside the memory server: the client's arguments and environment, the server's service."""
    try:
        args = build_parser().parse_args(list(argv))
    except UsageError as error:
        return _refuse(invalid_input(str(error)))
    return _serve_mcp(args, env, session)


def _serve_rest(args: Any) -> int:
    """`memory serve`: the REST API until interrupted; the token comes from --api-token or $MEMORY_API_TOKEN."""
    import os

    from agent_memory.entrypoints.extras import missing_extra

    absent = missing_extra("rest", "`memory serve` (the REST API)")
    if absent is not None:
        return _refuse(absent)

    from agent_memory.entrypoints.rest.app import run_rest
    from agent_memory.entrypoints.settings import load_settings

    token = args.api_token or os.environ.get("MEMORY_API_TOKEN") or None
    outcome: Result[int, int] = (
        load_settings({**_settings_flags(args), "serve_workers": args.workers})
        .alt(lambda error: _refuse(error))
        .map(lambda settings: run_rest(settings, host=args.host, port=args.port, api_token=token))
    )
    return unwrap_or_failure(outcome)


def _serve_ui(args: Any) -> int:
    """`memory ui`: `memory serve` on loopback, with its page's address printed and opened in a browser."""
    import os

    from agent_memory.entrypoints.extras import missing_extra

    absent = missing_extra("rest", "`memory ui` (the web page)")
    if absent is not None:
        return _refuse(absent)

    from agent_memory.entrypoints.rest.app import run_rest
    from agent_memory.entrypoints.rest.web_ui.launch import LOOPBACK, announce_and_open
    from agent_memory.entrypoints.settings import load_settings

    token = args.api_token or os.environ.get("MEMORY_API_TOKEN") or None

    def serve(settings: Any) -> int:
        announce_and_open(args.port, os.environ)
        return run_rest(settings, host=LOOPBACK, port=args.port, api_token=token)

    outcome: Result[int, int] = load_settings(_settings_flags(args)).alt(lambda error: _refuse(error)).map(serve)
    return unwrap_or_failure(outcome)


def _manage_server(args: Any) -> int:
    """`memory server status|stop` run in-process (with --no-server): the same answer the thin client gives."""
    import os

    from agent_memory.entrypoints.cli.server.manage import manage_server

    return manage_server(args, os.environ)


# commands that run a server: dispatched before the one-payload handler path
SERVERS: dict[str, Callable[[Any], int]] = {
    "mcp": _serve_mcp,
    "serve": _serve_rest,
    "ui": _serve_ui,
    "server": _manage_server,
}


def _emit(payload: dict[str, Any], fmt: str, render: Any) -> int:
    """Print a done command's result; the command already happened, so a renderer's fault never turns it into exit 1."""
    from agent_memory.entrypoints.cli.handlers import RAW_RENDERERS

    if fmt != "text" and render not in RAW_RENDERERS:
        _print(sys.stdout, payload)
        return 0
    try:
        rendered = render(payload)
    except (KeyError, TypeError, ValueError, IndexError):
        rendered = json.dumps(payload, ensure_ascii=False)  # the facts, if not the prose
    _print(sys.stdout, rendered)
    return 0


def _status_body(error: DomainError, settings: Any) -> dict[str, Any]:
    """spec 000: an unhealthy status is still a status object, on stderr."""
    body: dict[str, Any] = {
        "status": "unhealthy",
        "error": error.message,
        "code": error.code.value,
        "backend": settings.backend,
    }
    if settings.backend == "chroma":
        where = (
            f"{settings.chroma_host}:{settings.chroma_port}"
            if settings.chroma_host
            else str(settings.data_dir / "chroma")
        )
        body |= {"chromadb_host": where, "collection": settings.collection}
    if error.code is not ErrorCode.BACKEND_UNAVAILABLE and error.cause:
        body["cause"] = error.cause
    return body


def _exposure(payload: Any, settings: Settings) -> Any:
    """`status` on a data directory where other users can read memory data: a warning saying what to run (every
    command still works: the store stays healthy)."""
    from agent_memory.entrypoints.seams import exposed_paths

    exposed = exposed_paths(settings.data_dir) if isinstance(payload, dict) else []
    if not exposed:
        return payload
    shown = ", ".join(str(path) for path in exposed)
    problem = (
        f"Other users of this machine can read the data directory {settings.data_dir} (e.g. {shown}): "
        f"run `chmod -R go-rwx {settings.data_dir}` to keep the memories yours alone."
    )
    return payload | {"warnings": [*payload.get("warnings", []), problem]}


def run_guarded(argv: Sequence[str], *, env: Mapping[str, str] | None = None, services: Services | None = None) -> int:
    """`run` behind the last-resort handler that keeps the promise 'a JSON error, never a traceback'; whatever
    it creates (data, `export --output`) is the user's alone (0700/0600), whatever the umask."""
    from agent_memory.entrypoints.seams import owner_only_files

    try:
        with owner_only_files():
            return run(argv, env=env, services=services)
    except Exception as error:
        return _fail(
            {
                "error": f"Unexpected error ({type(error).__name__}): {error}. Please report this.",
                "code": "INTERNAL_ERROR",
            }
        )


def main() -> None:
    """In-process entry point (the thin client, cli/client.py, calls it when the command runs here)."""
    try:
        code = run_guarded(sys.argv[1:])
    except KeyboardInterrupt:
        code = _fail({"error": "Interrupted.", "code": "INTERRUPTED"})
    sys.exit(code)
