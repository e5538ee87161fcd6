"""Fixtures for every test: embedded Chroma files are released when a test ends."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _release_embedded_chroma() -> Iterator[None]:
    """Each test's embedded Chroma directories are closed after it (else one worker holds ~7 files per test)."""
    yield
    session = sys.modules.get("agent_memory.adapters.chroma.session")  # imported only by tests that use Chroma
    if session is not None:
        session.close_embedded_sessions()
