"""The embedded Chroma session: closing releases a data directory's files, and a closed catalog reconnects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.session import close_embedded_sessions

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_closing_the_sessions_releases_every_directory_s_files(tmp_path: Path) -> None:
    warm = ChromaCatalog(path=tmp_path / "warm", embedder_name="m", dimension=4)
    assert isinstance(warm.open("default", create=True), Success)  # chromadb's own once-per-process files
    close_embedded_sessions()
    before = _open_descriptors()
    for index in range(6):
        catalog = ChromaCatalog(path=tmp_path / f"data-{index}", embedder_name="m", dimension=4)
        assert isinstance(catalog.open("default", create=True), Success)
    held = _open_descriptors()
    close_embedded_sessions()
    assert held > before + 6  # each open directory holds files (the reason this exists)
    assert _open_descriptors() <= before


def test_a_catalog_used_after_closing_reconnects_and_reads_its_data(tmp_path: Path) -> None:
    catalog = ChromaCatalog(path=tmp_path / "data", embedder_name="m", dimension=4)
    assert isinstance(catalog.open("work", create=True), Success)
    close_embedded_sessions()
    assert catalog.names() == Success(["work"])
    assert isinstance(catalog.open("work", create=False), Success)
