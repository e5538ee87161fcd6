"""Keeping tests away from the user's own config: an empty config file for MEMORY_CONFIG to name."""

from __future__ import annotations

from pathlib import Path


def empty_config(folder: Path) -> str:
    """An empty config file in `folder` (made if missing), as MEMORY_CONFIG wants it: a file that must exist."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "empty-config.toml"
    config.touch()
    return str(config)
