"""The decay table of spec 000/001 and decision 5, at exact ages."""

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.domain.decay import confidence, confidence_at, oldest_anchor_for
from agent_memory.domain.model import DecayPolicy, Memory

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


@pytest.mark.parametrize("hours", [0, 360, 720, 10_000])
def test_stable_memories_never_decay(hours: float) -> None:
    assert confidence_at(DecayPolicy.STABLE, T0, at(hours)) == 1.0


@pytest.mark.parametrize(("hours", "expected"), [(0, 1.0), (360, 0.5), (720, 0.0), (1000, 0.0), (180, 0.75)])
def test_contextual_memories_fall_linearly_to_zero_over_the_window(hours: float, expected: float) -> None:
    assert confidence_at(DecayPolicy.CONTEXTUAL, T0, at(hours)) == expected


def test_reinforceable_decay_is_measured_from_the_last_reinforcement() -> None:
    memory = Memory(
        id="11111111-1111-4111-8111-111111111111",
        content="x",
        created_at=T0,
        updated_at=T0,
        decay_policy=DecayPolicy.REINFORCEABLE,
        last_reinforced_at=at(500),
    )
    assert confidence(memory, at(500)) == 1.0
    assert confidence(memory, at(860)) == 0.5
    unreinforced = Memory(
        id="11111111-1111-4111-8111-111111111112",
        content="x",
        created_at=T0,
        updated_at=T0,
        decay_policy=DecayPolicy.REINFORCEABLE,
    )
    assert confidence(unreinforced, at(360)) == 0.5


def test_the_window_is_configurable_and_rounding_is_to_four_decimals() -> None:
    assert confidence_at(DecayPolicy.CONTEXTUAL, T0, at(24), window_hours=48) == 0.5
    assert confidence_at(DecayPolicy.CONTEXTUAL, T0, at(1), window_hours=3) == 0.6667


def test_a_future_anchor_counts_as_age_zero() -> None:
    assert confidence_at(DecayPolicy.CONTEXTUAL, at(10), T0) == 1.0


def test_oldest_anchor_admits_exactly_the_memories_that_reach_the_floor() -> None:
    cutoff = oldest_anchor_for(0.5, at(1000), 720)
    assert cutoff is not None
    assert confidence_at(DecayPolicy.CONTEXTUAL, cutoff, at(1000)) == 0.5
    assert oldest_anchor_for(0.0, at(1000), 720) is None
