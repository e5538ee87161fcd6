"""Where a `memory` call is served: this user's server place and its timeouts, from flags, environment and config
file, in the standard library only (the thin client needs them before any import)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_memory.entrypoints.cli.server import protocol as wire
from agent_memory.entrypoints.locations import (
    BACKENDS,
    ENVIRONMENT,
    chosen,
    default_config_path,
    default_data_dir,
    layers,
)

# the defaults, chosen by measurement (BENCHMARKS.md, "One server per user"; bench/server_footprint.py)
SERVER_IDLE_S = 480.0
STORE_IDLE_S = 120.0


class InProcess(Exception):
    """The command runs in this process (the reason is only for reading the code: nothing is printed)."""


def _config(env: Mapping[str, str]) -> dict[str, Any]:
    path = default_config_path(env)
    if not path.is_file():
        return {}
    import tomllib

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        raise InProcess("the config file cannot be read: any other command says why") from None


def _setting(name: str, flag: object, env: Mapping[str, str], config: Mapping[str, Any]) -> object:
    """The value settings.py would take for one setting (locations.layers: flag > environment > config file), or
    None when none sets it."""
    return chosen(name, layers({name: flag}, env, config))


def resolve_place(args: Any, env: Mapping[str, str], *, honour_mode: bool = True) -> wire.Place:
    """The server place for these arguments and environment (this user's one server, whatever data directory and
    backend the command names), or InProcess when the command must not use one (`honour_mode=False`: wherever
    --no-server or MEMORY_SERVER say, for `memory server status|stop`)."""
    config = _config(env)
    mode = _setting("server", None, env, config) or "auto"
    if honour_mode and (getattr(args, "no_server", False) or mode != "auto"):
        raise InProcess("asked to (or a server setting the in-process run reports)")
    raw_dir = _setting("data_dir", getattr(args, "data_dir", None), env, config)
    if raw_dir is not None and not isinstance(raw_dir, str):
        raise InProcess("a data_dir the in-process run reports")
    data_dir = Path(raw_dir).expanduser() if raw_dir is not None else default_data_dir(env)
    backend = _setting("backend", getattr(args, "backend", None), env, config) or "chroma"
    if not data_dir.is_absolute() or backend not in BACKENDS:
        raise InProcess("a relative data directory or an unknown backend")
    place = wire.place_for(env)
    if place is None:
        raise InProcess("no socket path short enough")
    return place


def _seconds(name: str, default: float, env: Mapping[str, str]) -> float:
    """A positive, finite number of seconds from the settings; InProcess otherwise (the in-process run loads the
    settings, so it reports the bad value as a JSON error, exit 1)."""
    raw = _setting(name, None, env, _config(env))
    bad = f"{name} ({ENVIRONMENT[name][0]}) must be a positive, finite number of seconds, got {raw!r}."
    try:
        seconds = float(raw) if raw is not None else default  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InProcess(bad) from None
    if not 0 < seconds < float("inf"):
        raise InProcess(bad)
    return seconds


def idle_seconds(env: Mapping[str, str]) -> float:
    """How long the server lives after its last request (server_idle_seconds)."""
    return _seconds("server_idle_seconds", SERVER_IDLE_S, env)


def store_idle_seconds(env: Mapping[str, str]) -> float:
    """How long the server keeps a store open after its last use (server_store_idle_seconds)."""
    return _seconds("server_store_idle_seconds", STORE_IDLE_S, env)


def silence_seconds(env: Mapping[str, str]) -> float:
    """How long to wait on a server that sends nothing, not even a heartbeat (server_timeout_seconds)."""
    return _seconds("server_timeout_seconds", wire.SILENCE_S, env)
