"""Fixtures for the storage contract tests: the session-wide Chroma server."""

from tests.chroma_server import chroma_server

__all__ = ["chroma_server"]
