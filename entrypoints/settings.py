"""Frozen settings and their loading: flag > environment > config file > default (decision 19)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from attrs import field, fields, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.duplicates import DUPLICATE_POLICIES
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_store_name
from agent_memory.domain.search.hybrid import MIN_SIMILARITY
from agent_memory.domain.tenancy import check_pin, within
from agent_memory.entrypoints.locations import (
    BACKENDS,
    ENVIRONMENT,
    FILES_INDEXES,
    SERVER_MODES,
    default_config_path,
    default_data_dir,
    layers,
)

__all__ = ["BACKENDS", "ENVIRONMENT", "Settings", "default_config_path", "default_data_dir", "load_settings"]


def _as_path(value: str | Path) -> Path:
    return Path(value).expanduser()


def _embedder(value: str) -> str:
    """A built-in embedder's name as given; a model directory's path (it has a / or starts with ~ or .) made
    absolute, so that one setting names one model whatever the working directory of the process reading it."""
    if "/" in value or "\\" in value or value.startswith(("~", ".")):
        return str(Path(value).expanduser().absolute())
    return value


def _backend(_i: object, _a: object, value: str) -> None:
    if value not in BACKENDS:
        raise InvalidValue(f"Unknown backend {value!r}: use one of {', '.join(BACKENDS)}.")


def _files_index(_i: object, _a: object, value: str) -> None:
    if value not in FILES_INDEXES:
        raise InvalidValue(
            f"Unknown files_index {value!r}: the files backend's search index is chroma (the default) or qdrant."
        )


def _server_mode(_i: object, _a: object, value: str) -> None:
    if value not in SERVER_MODES:
        raise InvalidValue(f"Unknown server mode {value!r}: use auto (the default) or off.")


def _positive(_i: object, attribute: Any, value: float) -> None:
    if not value > 0:
        raise InvalidValue(f"{attribute.name} must be a positive number, got {value}.")


def _finite_positive(_i: object, attribute: Any, value: float) -> None:
    if not 0 < value < float("inf"):
        raise InvalidValue(f"{attribute.name} must be a positive, finite number of seconds, got {value}.")


def _fraction(_i: object, attribute: Any, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise InvalidValue(f"{attribute.name} must be between 0 and 1, got {value}.")


def _duplicate_policy(_i: object, _a: object, value: str) -> None:
    if value not in DUPLICATE_POLICIES:
        raise InvalidValue(
            f"on_duplicate must be one of {', '.join(DUPLICATE_POLICIES)}, got {value!r}: keep stores a near-duplicate "
            "beside the memory it repeats (the default), skip stores nothing, update changes the existing memory."
        )


def _optional_fraction(_i: object, attribute: Any, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise InvalidValue(f"{attribute.name} must be between 0 and 1 (or unset for the model's own), got {value}.")


def _port(_i: object, attribute: Any, value: int) -> None:
    if not 0 < value < 65536:
        raise InvalidValue(f"{attribute.name} must be a TCP port (1-65535), got {value}.")


MAX_SERVE_WORKERS = 64


def _workers(_i: object, attribute: Any, value: int) -> None:
    if not 1 <= value <= MAX_SERVE_WORKERS:
        raise InvalidValue(f"{attribute.name} must be a whole number from 1 to {MAX_SERVE_WORKERS}, got {value}.")


def _store(_i: object, _a: object, value: str) -> None:
    check_store_name(value)


def _names(value: object) -> tuple[str, ...]:
    """A comma-separated string (the environment) or a list (the config file) as a tuple of trimmed entries."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
        raise InvalidValue(f"Expected a comma-separated string or a list of strings, got {value!r}.")
    return tuple(item.strip() for item in items if item.strip())


def _hosts(_i: object, attribute: Any, value: tuple[str, ...]) -> None:
    for host in value:
        if any(mark in host for mark in ("/", " ", "@", "?", "#")):
            raise InvalidValue(
                f"{attribute.name}: {host!r} is not a host name: give names like memory.internal or 10.0.0.5 "
                "(no scheme, port or path), or * for any."
            )


def _is_origin(text: str) -> bool:
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path in ("", "/") and not parts.query


def _origins(_i: object, attribute: Any, value: tuple[str, ...]) -> None:
    for origin in value:
        if not _is_origin(origin):
            raise InvalidValue(
                f"{attribute.name}: {origin!r} is not an origin: give scheme, host and port only, "
                "e.g. http://localhost:3000."
            )


def _pin(value: object) -> tuple[str, ...] | None:
    """The namespace a server is pinned to ('user/alice' or a list of labels); never empty."""
    if value is None:
        return None
    try:
        return check_pin(value)
    except InvalidValue as error:
        raise InvalidValue(f"namespace: {error.message}") from None


TokenNamespaces = tuple[tuple[str, tuple[str, ...]], ...]


def _token_namespaces(value: object) -> TokenNamespaces:
    """Per-token namespaces: 'tokenA=user/alice,tokenB=user/bob' (the environment), a table {token = namespace}
    or a list of 'token=namespace' (the config file). Messages never repeat a token."""
    if isinstance(value, Mapping):
        pairs = [(str(token), raw) for token, raw in value.items()]
    else:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
            raise InvalidValue("api_tokens: give 'token=namespace' pairs separated by commas, like tokA=user/alice.")
        pairs = []
        for item in (entry.strip() for entry in items if entry.strip()):
            token, equals, raw = item.partition("=")
            if not equals:
                raise InvalidValue(f"api_tokens: entry {len(pairs) + 1} has no '=': give token=namespace.")
            pairs.append((token, raw))
    checked: list[tuple[str, tuple[str, ...]]] = []
    for number, (token, raw) in enumerate(pairs, start=1):
        if not token.strip() or any(c.isspace() or ord(c) < 32 for c in token):
            raise InvalidValue(f"api_tokens: entry {number} has an empty token or one with spaces.")
        try:
            checked.append((token, check_pin(raw)))
        except InvalidValue as error:
            raise InvalidValue(f"api_tokens: entry {number}'s namespace: {error.message}") from None
    if len({token for token, _ in checked}) != len(checked):
        raise InvalidValue("api_tokens: a token is given twice.")
    return tuple(checked)


@frozen(kw_only=True)
class Settings:
    """Everything the composition root needs to build the product; immutable once loaded."""

    data_dir: Path = field(converter=_as_path)
    backend: str = field(default="chroma", validator=_backend)
    # the files backend's search index: which other backend's store holds it (its host or URL settings apply)
    files_index: str = field(default="chroma", validator=_files_index)
    store: str = field(default="default", validator=_store)
    collection: str = "memories"
    chroma_host: str | None = None
    chroma_port: int = field(default=8000, validator=_port)
    qdrant_url: str | None = None
    qdrant_api_key: str | None = None
    # "minilm" (shipped), or the path of an ONNX model directory (adapters/model_directory.py, docs/configuration.md)
    embedder: str = field(default="minilm", converter=_embedder)
    decay_hours: float = field(default=720.0, validator=_positive)
    min_confidence: float = field(default=0.3, validator=_fraction)
    min_similarity: float = field(default=MIN_SIMILARITY, validator=_fraction)
    default_limit: int = field(default=10, validator=_positive)
    # near-duplicates at the door (domain.duplicates): what a create does when the call does not say, and the
    # similarity that makes a duplicate (None: the model directory's calibrated one; 1 all but switches it off)
    on_duplicate: str = field(default="keep", validator=_duplicate_policy)
    duplicate_similarity: float | None = field(default=None, validator=_optional_fraction)
    # the HTTP doors (REST, MCP over HTTP): extra Host names and browser origins they answer (http_safety.py)
    allowed_hosts: tuple[str, ...] = field(default=(), converter=_names, validator=_hosts)
    allowed_origins: tuple[str, ...] = field(default=(), converter=_names, validator=_origins)
    # tenancy of the servers (REST, MCP): the namespace they are pinned to, and per-token namespaces (tenancy.py)
    namespace: tuple[str, ...] | None = field(default=None, converter=_pin)
    api_tokens: TokenNamespaces = field(default=(), converter=_token_namespaces, repr=False)
    # the `memory` command: "auto" runs it through the user's local server (cli/server/process.py), "off" in-process
    server: str = field(default="auto", validator=_server_mode)
    server_idle_seconds: float = field(default=480.0, validator=_positive)
    # how long the server keeps a store (data directory and backend) open after its last use: then it is closed
    server_store_idle_seconds: float = field(default=120.0, validator=_positive)
    # how long the `memory` command waits on a server that sends nothing (not even a heartbeat) before it says so
    server_timeout_seconds: float = field(default=60.0, validator=_finite_positive)
    # `memory serve`: how many processes answer on its port (more than 1 only over a Chroma or Qdrant server)
    serve_workers: int = field(default=1, validator=_workers)
    # over a Chroma or Qdrant server: how long a writer's lease lives unrenewed before another machine passes it over
    lease_ttl_seconds: float = field(default=30.0, validator=_finite_positive)

    def __attrs_post_init__(self) -> None:
        for number, (_token, namespace) in enumerate(self.api_tokens, start=1):
            if self.namespace is not None and not within(namespace, self.namespace):
                raise InvalidValue(
                    f"api_tokens: entry {number}'s namespace {'/'.join(namespace)} is outside the server's "
                    f"namespace {'/'.join(self.namespace)}: a token can only narrow it."
                )


_PARSERS: Mapping[str, Callable[[Any], Any]] = {
    "chroma_port": int,
    "decay_hours": float,
    "min_confidence": float,
    "min_similarity": float,
    "duplicate_similarity": float,
    "default_limit": int,
    "server_idle_seconds": float,
    "server_store_idle_seconds": float,
    "server_timeout_seconds": float,
    "serve_workers": int,
    "lease_ttl_seconds": float,
}


def _typed(name: str, raw: object, origin: str) -> Result[object, DomainError]:
    parse = _PARSERS.get(name)
    if parse is None or raw is None:
        return (
            Success(raw if raw != "" else None)
            if name in ("chroma_host", "qdrant_url", "qdrant_api_key")
            else Success(raw)
        )
    try:
        return Success(parse(raw))
    except (TypeError, ValueError):
        kind = "a whole number" if parse is int else "a number"
        return Failure(DomainError(ErrorCode.INVALID_INPUT, f"{origin} must be {kind}, got {raw!r}."))


def _read_config(path: Path, *, chosen: bool) -> Result[dict[str, object], DomainError]:
    """The config file's settings. Only the default location may be absent; a file MEMORY_CONFIG names must exist."""
    if not path.exists() and not chosen:
        return Success({})
    if not path.exists():
        return Failure(
            DomainError(
                ErrorCode.INVALID_INPUT,
                f"MEMORY_CONFIG names the config file {path}, which does not exist: create it (an empty file will "
                "do), or unset MEMORY_CONFIG to use the default location.",
                path=str(path),
            )
        )
    if not path.is_file():
        return Failure(
            DomainError(
                ErrorCode.INVALID_INPUT,
                f"The config file {path} is not a file: make it a TOML file, or "
                + ("unset MEMORY_CONFIG." if chosen else "remove it."),
                path=str(path),
            )
        )
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        return Failure(
            DomainError(ErrorCode.INVALID_INPUT, f"Cannot read the config file {path}: {error}. Fix or remove it.")
        )
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(data) - known)
    if unknown:
        return Failure(
            DomainError(
                ErrorCode.INVALID_INPUT,
                f"Unknown setting(s) {', '.join(unknown)} in {path}; known: {', '.join(sorted(known))}.",
            )
        )
    return Success(dict(data))


def load_settings(
    flags: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None
) -> Result[Settings, DomainError]:
    """Merge the four layers; every bad value is an INVALID_INPUT failure that names where it came from."""
    environment = dict(os.environ) if env is None else dict(env)
    config = _read_config(default_config_path(environment), chosen=bool(environment.get("MEMORY_CONFIG")))
    if isinstance(config, Failure):
        return config
    merged: dict[str, object] = {"data_dir": default_data_dir(environment)}
    for layer in layers(flags or {}, environment, config.unwrap()):
        for name, raw in layer.values.items():
            typed = _typed(name, raw, layer.labels[name])
            if isinstance(typed, Failure):
                return typed
            merged[name] = typed.unwrap()
    try:
        return Success(Settings(**merged))  # type: ignore[arg-type]
    except InvalidValue as error:
        return Failure(error.to_error())
    except TypeError as error:
        return Failure(DomainError(ErrorCode.INVALID_INPUT, f"Invalid settings: {error}."))
