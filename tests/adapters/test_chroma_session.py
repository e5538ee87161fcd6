"""The embedded Chroma session: closing releases a data directory's files, and a closed catalog reconnects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.session import close_embedded_sessions

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")


def _open_files_under(folder: Path) -> int:
    """Descriptors of this process open on files under `folder` (other threads' files do not count)."""
    count = 0
    for descriptor in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{descriptor}")
        except OSError:  # closed while listing
            continue
        count += target.startswith(str(folder))
    return count


def test_closing_the_sessions_releases_every_directory_s_files(tmp_path: Path) -> None:
    for index in range(6):
        catalog = ChromaCatalog(path=tmp_path / f"data-{index}", embedder_name="m", dimension=4)
        assert isinstance(catalog.open("default", create=True), Success)
    held = _open_files_under(tmp_path)
    close_embedded_sessions()
    assert held >= 6  # each open directory holds files (the reason this exists)
    assert _open_files_under(tmp_path) == 0


def test_a_catalog_used_after_closing_reconnects_and_reads_its_data(tmp_path: Path) -> None:
    catalog = ChromaCatalog(path=tmp_path / "data", embedder_name="m", dimension=4)
    assert isinstance(catalog.open("work", create=True), Success)
    close_embedded_sessions()
    assert catalog.names() == Success(["work"])
    assert isinstance(catalog.open("work", create=False), Success)
