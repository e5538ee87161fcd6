"""Where settings come from, in the standard library only: default paths and the environment variables they read.

The `memory` command's thin client (cli/client.py) resolves the data directory and backend with these before it
knows whether it will import anything else; settings.py builds the full, validated Settings on top of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

BACKENDS = ("chroma", "qdrant", "files")
FILES_INDEXES = ("chroma", "qdrant")  # the vector index beside the files backend's markdown files
SERVER_MODES = ("auto", "off")

# setting name -> environment variables that set it (first one found wins)
ENVIRONMENT: Mapping[str, tuple[str, ...]] = {
    "data_dir": ("MEMORY_DATA_DIR",),
    "backend": ("MEMORY_BACKEND",),
    "files_index": ("MEMORY_FILES_INDEX",),
    "store": ("MEMORY_STORE",),
    "collection": ("MEMORY_COLLECTION", "COLLECTION_NAME"),
    "chroma_host": ("CHROMADB_HOST",),
    "chroma_port": ("CHROMADB_PORT",),
    "qdrant_url": ("QDRANT_URL",),
    "qdrant_api_key": ("QDRANT_API_KEY",),
    "embedder": ("MEMORY_EMBEDDER",),
    "decay_hours": ("MEMORY_DECAY_HOURS", "DECAY_HALF_LIFE_HOURS"),
    "min_confidence": ("MEMORY_MIN_CONFIDENCE", "MIN_CONFIDENCE"),
    "min_similarity": ("MEMORY_MIN_SIMILARITY",),
    "default_limit": ("MEMORY_DEFAULT_LIMIT", "DEFAULT_LIMIT"),
    "on_duplicate": ("MEMORY_ON_DUPLICATE",),
    "duplicate_similarity": ("MEMORY_DUPLICATE_SIMILARITY",),
    "allowed_hosts": ("MEMORY_ALLOWED_HOSTS",),
    "allowed_origins": ("MEMORY_ALLOWED_ORIGINS",),
    "namespace": ("MEMORY_NAMESPACE",),
    "api_tokens": ("MEMORY_API_TOKENS",),
    "server": ("MEMORY_SERVER",),
    "server_idle_seconds": ("MEMORY_SERVER_IDLE_SECONDS",),
    "server_store_idle_seconds": ("MEMORY_SERVER_STORE_IDLE_SECONDS",),
    "server_timeout_seconds": ("MEMORY_SERVER_TIMEOUT_SECONDS",),
    "lease_ttl_seconds": ("MEMORY_LEASE_TTL_SECONDS",),
    "serve_workers": ("MEMORY_SERVE_WORKERS",),
}

# variables that place the defaults (config file, data directory) rather than set one setting
PLACES = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "MEMORY_CONFIG")


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def default_data_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_DATA_HOME") or str(_home(env) / ".local" / "share")
    return Path(base) / "agent-memory"


def default_config_path(env: Mapping[str, str]) -> Path:
    if env.get("MEMORY_CONFIG"):
        return Path(env["MEMORY_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(_home(env) / ".config")
    return Path(base) / "agent-memory" / "config.toml"


@dataclass(frozen=True)
class Layer:
    """One place settings come from: each setting it sets, with the words an error about the value names it by."""

    values: dict[str, object]
    labels: dict[str, str]


def layers(flags: Mapping[str, object], env: Mapping[str, str], config: Mapping[str, object]) -> tuple[Layer, ...]:
    """The layers of decision 19, lowest first: config file < environment < flag (a later one wins; the default is
    beneath them all). The environment's value of a setting is that of the first of its variables that is set."""
    from_env: dict[str, object] = {}
    env_labels: dict[str, str] = {}
    for name, variables in ENVIRONMENT.items():
        variable = next((variable for variable in variables if variable in env), None)
        if variable is not None:
            from_env[name], env_labels[name] = env[variable], variable
    set_flags = {name: value for name, value in flags.items() if value is not None}
    return (
        Layer(dict(config), {name: f"{name} (config file)" for name in config}),
        Layer(from_env, env_labels),
        Layer(set_flags, {name: f"{name} (flag)" for name in set_flags}),
    )


def chosen(name: str, ordered: tuple[Layer, ...]) -> object:
    """The value the highest layer sets for `name`, or None when none does (the default applies)."""
    return next((layer.values[name] for layer in reversed(ordered) if name in layer.values), None)
