"""Clocks: the system clock for production; a skewed and a settable one for tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from attrs import define


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


@define
class SkewedClock:
    """The wall clock off by a fixed amount: one machine's clock set wrong (fault tests and benchmarks)."""

    offset: timedelta

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


@define
class FixedClock:
    """A clock that only moves when told to, so decay can be checked at exact ages."""

    current: datetime

    def now(self) -> datetime:
        return self.current

    def advance(self, *, hours: float = 0.0) -> None:
        self.current = self.current + timedelta(hours=hours)
