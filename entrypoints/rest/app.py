"""The REST door (`memory serve`): the Litestar app over every route, its guards and checks, and the server."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

import anyio
from litestar import Litestar, Request, Response, Router
from litestar.config.cors import CORSConfig
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import (
    ClientException,
    HTTPException,
    NotAuthorizedException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.handlers.base import BaseRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme, Tag
from litestar.types import Guard
from returns.result import Failure, Success

from agent_memory._version import __version__
from agent_memory.domain.errors import DomainError
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.error_table import row
from agent_memory.entrypoints.http.safety import HttpPolicy, json_body_problem, media_type_problem, refuse_open_bind
from agent_memory.entrypoints.rest.admin import ADMIN_ROUTES
from agent_memory.entrypoints.rest.contract import (
    AllowedMethods,
    allowed_methods,
    exact_bodies,
    exact_parameters,
    options_answer,
)
from agent_memory.entrypoints.rest.docs import OfflineDocsPlugin
from agent_memory.entrypoints.rest.memories import MEMORY_ROUTES
from agent_memory.entrypoints.rest.replies import Door, Payload, error_body
from agent_memory.entrypoints.rest.table import TABLE_ROUTES
from agent_memory.entrypoints.rest.web_ui import UI_ROUTES
from agent_memory.entrypoints.rest.workers import Asgi
from agent_memory.entrypoints.settings import Settings
from agent_memory.entrypoints.token_tenancy import UNAUTHORIZED, Tenancy

MAX_BODY_BYTES = 1_048_576
DOCS_PATH = "/docs"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
LOG = logging.getLogger("agent_memory.rest")

# codes of the failures Litestar raises before a use case runs (routing, auth, parsing)
HTTP_CODES: Mapping[int, str] = {
    400: "INVALID_INPUT",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN_ORIGIN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "REQUEST_TOO_LARGE",
    415: "INVALID_INPUT",  # a body that is not JSON: the caller's request to fix, like a malformed one
    421: "MISDIRECTED_REQUEST",
}


# the page (/ui) only calls the routes before it
ROUTE_HANDLERS = [*MEMORY_ROUTES, *ADMIN_ROUTES, *TABLE_ROUTES, *UI_ROUTES]


# --- errors Litestar raises, and the ones nobody expected ----------------------------------------


def _http_error(_request: Request[Any, Any, Any], error: HTTPException) -> Response[Payload]:
    """Routing, auth, size and parsing failures in the same {"error", "code"} shape as the domain's."""
    status_code = error.status_code
    code = HTTP_CODES.get(status_code) or HTTPStatus(status_code).name
    message = str(error.detail) or HTTPStatus(status_code).phrase
    body: Payload = {"error": message, "code": code}
    if isinstance(error, ValidationException) and isinstance(error.extra, list) and error.extra:
        body["details"] = error.extra
        problems = "; ".join(_problem(item) for item in error.extra if isinstance(item, dict))
        body["error"] = f"Invalid request: {problems}." if problems else message
    return Response(body, status_code=status_code, headers=error.headers)


def _problem(item: Mapping[str, Any]) -> str:
    if item.get("key") == "data" and item.get("message") == "'data'":
        return "the request needs a JSON body"  # Litestar's words for a missing body
    return f"{item.get('key')}: {item.get('message')}"


def _unexpected(request: Request[Any, Any, Any], error: Exception) -> Response[Payload]:
    """A bug: logged with its traceback, answered with a JSON 500 that shows none of it."""
    LOG.exception("Unexpected error on %s %s", request.method, request.url.path, exc_info=error)
    return Response(
        {"error": "Unexpected server error; it has been logged. Please report it.", "code": "INTERNAL_ERROR"},
        status_code=500,
    )


# --- the app ---------------------------------------------------------------------------------------


def _token_guard(tenancy: Tenancy) -> Guard:
    def guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        if handler.opt.get("public"):
            return
        allowed, _ = tenancy.namespace_of(connection.headers.get("authorization"))
        if not allowed:
            raise NotAuthorizedException(UNAUTHORIZED, headers={"WWW-Authenticate": 'Bearer realm="agent-memory"'})

    return guard


def _doors(
    service: MemoryService, tenancy: Tenancy, calls_at_once: int = 1
) -> Callable[[Request[Any, Any, Any]], Door]:
    """The door of a request's caller: the service pinned to the namespace of its token (or of the server); one call
    at a time, or up to `calls_at_once` on threads of their own (a service over a shared engine server)."""
    lock = threading.Lock() if calls_at_once == 1 else contextlib.nullcontext()
    slot = anyio.CapacityLimiter(calls_at_once)
    doors = {pin: Door(pinned, lock, slot) for pin, pinned in tenancy.services(service).unwrap().items()}

    def door(request: Request[Any, Any, Any]) -> Door:
        allowed, pin = tenancy.namespace_of(request.headers.get("authorization"))
        if not allowed:  # the token guard has refused it already; never fall back to a wider door
            raise NotAuthorizedException(UNAUTHORIZED)
        return doors[pin]

    return door


def _caller_guard(policy: HttpPolicy) -> Guard:
    """Host and Origin first, on every route (public ones too): a web page never gets in, token or not."""

    def guard(connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler) -> None:
        host = connection.headers.get("host")
        if not policy.host_allowed(host):
            # 421 Misdirected Request, not 403: the request names another server (RFC 9110 §15.5.20), which is
            # what a DNS-rebound page does; it is also what the MCP SDK answers, so both HTTP doors agree
            raise HTTPException(policy.host_refusal(host), status_code=421)
        origin = connection.headers.get("origin")
        if origin is not None and not policy.origin_allowed(origin, host):
            raise PermissionDeniedException(policy.origin_refusal(origin))

    return guard


# the query parameters each route declares, filled in once the app has built its routes
QueryNames = dict[BaseRouteHandler, frozenset[str]]


def _declared_queries(app: Litestar) -> QueryNames:
    return {
        handler: frozenset(parameter.field_alias for parameter in model.expected_query_params)
        for route in app.routes
        for handler, model in getattr(route, "route_handler_map", {}).values()
    }


def _query_problem(request: Request[Any, Any, Any], declared: QueryNames) -> str | None:
    """An unknown or repeated query parameter: refused, never ignored, so `?namespace=` on a route that reads
    the namespace from its body (or a misspelt `?namepsace=` on one that reads it here) cannot widen the guard."""
    pairs = parse_qsl(request.scope.get("query_string", b"").decode("latin-1"), True)
    names = [name for name, _ in pairs]
    takes = declared.get(request.route_handler, frozenset())
    unknown = sorted({name for name in names if name not in takes})
    if unknown:
        allowed = ", ".join(sorted(takes)) or "none"
        return f"Unknown query parameter(s) {', '.join(unknown)} for {request.method} {request.url.path}; allowed: {allowed}."
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        return f"Query parameter(s) {', '.join(repeated)} given more than once: give each once."
    empty = sorted({name for name, value in pairs if not value})
    if empty:  # `?store=` is not the default store: leaving the parameter out is
        return f"Query parameter(s) {', '.join(empty)} given without a value: give one, or leave the parameter out."
    return None


def _has_body(request: Request[Any, Any, Any]) -> bool:
    return request.headers.get("content-length", "0").strip() != "0" or "transfer-encoding" in request.headers


def _request_checks(
    declared: QueryNames, allowed: AllowedMethods
) -> Callable[[Request[Any, Any, Any]], Awaitable[Response[None] | None]]:
    """Before any parsing: OPTIONS answered with every method of the path, the query names, then JSON-only bodies
    that are UTF-8 and at most 64 levels deep."""

    async def check(request: Request[Any, Any, Any]) -> Response[None] | None:
        if request.method == "OPTIONS":
            return options_answer(request, allowed)
        problem = _query_problem(request, declared)
        if problem:
            raise ClientException(problem)
        if request.method not in BODY_METHODS:
            return None
        has_body = _has_body(request)
        unsupported = media_type_problem(request.headers.get("content-type"), has_body)
        if unsupported:
            raise ClientException(unsupported, status_code=415)
        if has_body:
            malformed = json_body_problem(await request.body())
            if malformed:
                raise ClientException(malformed)
        return None

    return check


def _cors(policy: HttpPolicy) -> CORSConfig | None:
    """Browsers may call the API only from the configured origins (none by default)."""
    if not policy.allowed_origins:
        return None
    return CORSConfig(
        allow_origins=list(policy.allowed_origins),
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=["Authorization", "Content-Type"],
        max_age=600,
    )


def _openapi(secured: bool) -> OpenAPIConfig:
    return OpenAPIConfig(
        title="agent-memory",
        version=__version__,
        description='Long-term memory for AI agents. Every failure is {"error": message, "code": CODE}.',
        path=DOCS_PATH,
        render_plugins=[OfflineDocsPlugin(path="/")],  # no CDN: the page works offline
        openapi_router=Router(DOCS_PATH, route_handlers=[], opt={"public": True}, include_in_schema=False),
        use_handler_docstrings=True,
        tags=[Tag(name=name) for name in ("memories", "maintenance", "stores", "categories", "commands", "health")],
        components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
        security=[{"bearer": []}] if secured else None,
    )


def build_app(
    service: MemoryService,
    *,
    api_token: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
    allowed_origins: tuple[str, ...] = (),
    tenancy: Tenancy | None = None,
    calls_at_once: int = 1,
) -> Litestar:
    """The ASGI app over a ready service, bound to `host`; with a token, every route but /health and the docs
    needs it. Host and Origin are checked on every route (http_safety.HttpPolicy): loopback names, the bound
    address and `allowed_hosts`; no Origin, the same origin, loopback ones and `allowed_origins`. `tenancy`
    (its pins must be valid: Tenancy.services) pins each caller to a namespace; `api_token` alone is a
    Tenancy without pins. `calls_at_once` > 1 runs that many calls of the service at once (a service over a Chroma
    or Qdrant server, whose write locks order the writes); 1 runs them one at a time behind one lock."""
    tenancy = tenancy or Tenancy(api_token=api_token)
    policy = HttpPolicy(bind_host=host, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    declared: QueryNames = {}
    allowed: AllowedMethods = {}
    app = Litestar(
        route_handlers=ROUTE_HANDLERS,
        dependencies={"door": Provide(_doors(service, tenancy, calls_at_once), sync_to_thread=False)},
        guards=[_caller_guard(policy), *([_token_guard(tenancy)] if tenancy.secured else [])],
        before_request=_request_checks(declared, allowed),
        cors_config=_cors(policy),
        exception_handlers={HTTPException: _http_error, Exception: _unexpected},
        openapi_config=_openapi(tenancy.secured),
        state=State({"backend": service.catalog.backend}),  # a name, read once: /health never reaches the backend
        request_max_body_size=MAX_BODY_BYTES,
        logging_config=None,  # the host process owns logging; failures go to the "agent_memory.rest" logger
        debug=False,
    )
    declared.update(_declared_queries(app))
    allowed.update(allowed_methods(app))
    exact_bodies(app)
    exact_parameters(app)
    return app


def _startup_failure(error: DomainError) -> int:
    """The server does not start: its error body on stderr, exit code 1."""
    import json

    sys.stderr.write(json.dumps(error_body(error), ensure_ascii=False) + "\n")
    return row(error).exit_code


def serving_app(settings: Settings, host: str, api_token: str | None) -> Asgi | DomainError:
    """The app one serving process runs (its service built from the settings, its stores kept warm, every answer
    naming the process), or the DomainError that keeps it from starting."""
    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.rest.workers import CALLS_AT_ONCE, shared_engine, with_worker_header

    tenancy = Tenancy.of(settings, api_token)
    match build_service(settings).bind(lambda built: tenancy.services(built).map(lambda _: built)):
        case Success(service):
            service.catalog.keep_warm()  # a long-lived process: its stores' mirrors are read in the background
            app = build_app(
                service,
                host=host,
                allowed_hosts=settings.allowed_hosts,
                allowed_origins=settings.allowed_origins,
                tenancy=tenancy,
                calls_at_once=CALLS_AT_ONCE if shared_engine(settings) else 1,
            )
            return with_worker_header(app)
        case Failure(error):
            failed: DomainError = error
            return failed
    raise AssertionError("a Result is a Success or a Failure")  # unreachable: for the type checker


def run_rest(settings: Settings, host: str = "127.0.0.1", port: int = 8080, api_token: str | None = None) -> int:
    """Build the service from the settings and serve until interrupted (in `serve_workers` processes); the exit
    code."""
    import uvicorn

    from agent_memory.entrypoints.rest.workers import workers_refusal
    from agent_memory.entrypoints.seams import keep_owner_only

    keep_owner_only()  # what the server writes (the data, its libraries' files) is the user's alone
    from agent_memory.entrypoints.http.protocol import JSON_400_PROTOCOL

    tenancy = Tenancy.of(settings, api_token)
    # no token is a promise that only this machine's users reach the server: refused, not logged, elsewhere
    refusal = refuse_open_bind(host, "token" if tenancy.secured else None, "the REST API") or workers_refusal(settings)
    if refusal is not None:
        return _startup_failure(refusal)
    if settings.serve_workers > 1:
        return _run_workers(settings, host, port, api_token)
    app = serving_app(settings, host, api_token)
    if isinstance(app, DomainError):
        return _startup_failure(app)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s: %(message)s")
    # on Ctrl-C uvicorn shuts down cleanly, then re-raises the signal (so SIGTERM ends the process as -15)
    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=host, port=port, log_level="info", http=JSON_400_PROTOCOL)
    return 0


def _run_workers(settings: Settings, host: str, port: int, api_token: str | None) -> int:
    """`serve_workers` processes on one socket under uvicorn's supervisor, which replaces a worker that dies and
    stops them all on SIGTERM or Ctrl-C. The settings are checked here first (the service is built once and let
    go: the workers build their own), so a mistake is one error on stderr, not one per worker."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from agent_memory.entrypoints.bootstrap import build_service
    from agent_memory.entrypoints.http.protocol import JSON_400_PROTOCOL
    from agent_memory.entrypoints.rest.workers import WorkerApp

    tenancy = Tenancy.of(settings, api_token)
    checked = build_service(settings).bind(tenancy.services)
    if isinstance(checked, Failure):
        return _startup_failure(checked.failure())
    del checked
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s: %(message)s")
    config = uvicorn.Config(
        WorkerApp(serving_app, settings, host, api_token),
        host=host,
        port=port,
        log_level="info",
        http=JSON_400_PROTOCOL,  # an import string: the config is pickled to each spawned worker
        lifespan="on",  # each worker builds its service at start-up; a failure there stops the supervisor
        workers=settings.serve_workers,
    )
    with contextlib.suppress(KeyboardInterrupt):
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    return 0
