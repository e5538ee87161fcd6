"""Where settings come from, in the standard library only: default paths and the environment variables they read.

The `memory` command's thin client (cli_client.py) resolves the data directory and backend with these before it
knows whether it will import anything else; settings.py builds the full, validated Settings on top of them.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    "allowed_hosts": ("MEMORY_ALLOWED_HOSTS",),
    "allowed_origins": ("MEMORY_ALLOWED_ORIGINS",),
    "namespace": ("MEMORY_NAMESPACE",),
    "api_tokens": ("MEMORY_API_TOKENS",),
    "server": ("MEMORY_SERVER",),
    "server_idle_seconds": ("MEMORY_SERVER_IDLE_SECONDS",),
    "server_timeout_seconds": ("MEMORY_SERVER_TIMEOUT_SECONDS",),
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
