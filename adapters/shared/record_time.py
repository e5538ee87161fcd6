"""Timestamps as the vector-store adapters keep them: ISO strings for round trips, integer µs for range filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
NEVER_EXPIRES_US = 2**62  # beyond datetime.max (≈2.5e17 µs), inside i64: "no expiry" is later than any moment


def micros(moment: datetime) -> int:
    """Exact integer microseconds since the epoch."""
    return (moment - EPOCH) // MICROSECOND


def iso(moment: datetime | None) -> str:
    """The ISO string of a timestamp, "" for none (store metadata cannot hold null)."""
    return "" if moment is None else moment.isoformat(timespec="microseconds")


def parse_iso(text: object) -> datetime | None:
    if not isinstance(text, str):
        raise ValueError(f"expected an ISO timestamp string, got {text!r}")
    return None if text == "" else datetime.fromisoformat(text).astimezone(UTC)


def required_iso(text: object) -> datetime:
    moment = parse_iso(text)
    if moment is None:
        raise ValueError("a required timestamp is empty")
    return moment
