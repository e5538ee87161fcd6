"""The decay rules: confidence from policy, age and the decay window (decision 5)."""

from __future__ import annotations

from datetime import datetime, timedelta

from agent_memory.domain.model import DecayPolicy, Memory

DEFAULT_DECAY_WINDOW_HOURS = 720.0


def confidence_at(
    policy: DecayPolicy, anchor: datetime, now: datetime, window_hours: float = DEFAULT_DECAY_WINDOW_HOURS
) -> float:
    """1.0 for stable; otherwise falls linearly from 1.0 at the anchor to 0.0 after the window."""
    if policy is DecayPolicy.STABLE:
        return 1.0
    age_hours = max(0.0, (now - anchor).total_seconds() / 3600.0)
    return round(max(0.0, 1.0 - age_hours / window_hours), 4)


def confidence(memory: Memory, now: datetime, window_hours: float = DEFAULT_DECAY_WINDOW_HOURS) -> float:
    """The memory's confidence now, rounded to 4 decimals; never stored, always computed."""
    return confidence_at(memory.decay_policy, memory.decay_anchor, now, window_hours)


def oldest_anchor_for(min_confidence: float, now: datetime, window_hours: float) -> datetime | None:
    """The oldest decay anchor a decaying memory may have and still reach min_confidence.

    Stores use it to filter before ranking; it is lenient by the rounding margin so that the exact
    check after it decides. None when every age qualifies.
    """
    if min_confidence <= 0.0:
        return None
    allowed_hours = (1.0 - min_confidence + 0.00005) * window_hours
    return now - timedelta(hours=allowed_hours)
