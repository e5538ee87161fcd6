"""Fixtures for the in-process door tests: the unit tests' service over in-memory fakes and its clock."""

from tests.unit.conftest import T0, catalog, clock, service

__all__ = ["T0", "catalog", "clock", "service"]
