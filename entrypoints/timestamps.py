"""ISO 8601 timestamps in UTC, in the standard library only (the argument parser needs them before any import)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso_z(moment: datetime) -> str:
    """ISO 8601 in UTC with a Z suffix, microseconds kept when present."""
    text = moment.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


EXAMPLE = "2026-12-31T23:59:00Z"


def not_a_timestamp(raw: object, name: str = "") -> str:
    """The one sentence every door refuses a timestamp `parse_iso` cannot read with, e.g. "expires_at 'soon' is not
    an ISO 8601 timestamp in the years 0001–9999 (UTC) like 2026-12-31T23:59:00Z" (no full stop: callers add
    theirs); `name` says which value it was."""
    text = raw.isoformat() if isinstance(raw, datetime) else str(raw)
    shown = f"{name} {text!r}" if name else repr(text)
    return f"{shown} is not an ISO 8601 timestamp in the years 0001–9999 (UTC) like {EXAMPLE}"


def parse_iso(raw: str | datetime) -> datetime:
    """An ISO 8601 timestamp (Z or offset; naive means UTC) as an aware UTC datetime; ValueError if not, or if
    it falls outside the years 1–9999 once in UTC (9999-12-31T23:59:59-14:00)."""
    moment = raw if isinstance(raw, datetime) else datetime.fromisoformat(str(raw).strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{raw} cannot be expressed in UTC: give a timestamp between 0001 and 9999.") from None
