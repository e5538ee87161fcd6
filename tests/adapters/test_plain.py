"""The plain converter the storage backends share: every field round trips, a value of the wrong type is refused."""

from __future__ import annotations

import pytest
from attrs import frozen

from agent_memory.adapters.shared.plain import make_converter, memory_from_plain, plain_memory
from tests.contract.vector_store_contract import full_memory


def test_a_full_memory_is_plain_values_and_reads_back() -> None:
    memory = full_memory()
    plain = plain_memory(memory)
    assert plain["global"] is True and "global_" not in plain
    assert plain["namespace"] == ["user", "u-123", "é"] and plain["path"] == "projects/agent-memory/design"
    assert plain["decay_policy"] == "reinforceable"
    assert plain["created_at"] == "2024-05-06T07:08:09.123456+00:00"
    assert memory_from_plain(plain) == memory


def test_what_a_memory_lacks_is_empty_text_not_null() -> None:
    memory = full_memory(path=None, expires_at=None, last_reinforced_at=None, deleted_at=None)
    plain = plain_memory(memory)
    assert [plain[key] for key in ("path", "expires_at", "last_reinforced_at", "deleted_at")] == ["", "", "", ""]
    assert memory_from_plain(plain) == memory


WRONG = {
    "text_as_number": {"agent": 1},
    "text_as_null": {"path": None},
    "flag_as_number": {"global": 1},
    "list_as_text": {"tags": "python"},
    "list_of_numbers": {"citations": [1]},
    "required_timestamp_empty": {"created_at": ""},
    "timestamp_as_null": {"deleted_at": None},
    "unknown_policy": {"decay_policy": "sometimes"},
    "unnormalised_path": {"path": "a//b"},
    "invalid_store": {"store": "Not A Store"},
}


@pytest.mark.parametrize("change", WRONG.values(), ids=WRONG.keys())
def test_a_value_of_the_wrong_type_is_a_value_or_type_error(change: dict[str, object]) -> None:
    with pytest.raises((ValueError, TypeError)):
        memory_from_plain({**plain_memory(full_memory()), **change})


def test_a_missing_required_key_is_a_key_error() -> None:
    plain = plain_memory(full_memory())
    del plain["created_at"]
    with pytest.raises(KeyError):
        memory_from_plain(plain)


@frozen(kw_only=True)
class Numbers:
    """Stand-ins for number fields a Memory may gain: the shared rule covers them before any field exists."""

    count: int = 0
    priority: int | None = None
    weight: float | None = None


NUMBERS = make_converter()


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        (Numbers(), {"count": 0, "priority": "", "weight": ""}),
        (Numbers(count=-3, priority=7, weight=0.25), {"count": -3, "priority": 7, "weight": 0.25}),
        (Numbers(priority=0, weight=0.0), {"count": 0, "priority": 0, "weight": 0.0}),
    ],
)
def test_an_optional_number_is_itself_or_empty_text(value: Numbers, plain: dict[str, object]) -> None:
    assert NUMBERS.unstructure(value) == plain
    assert NUMBERS.structure(plain, Numbers) == value


@pytest.mark.parametrize(
    "raw", [{"priority": "7"}, {"priority": True}, {"priority": 1.5}, {"count": None}, {"weight": "x"}]
)
def test_a_number_is_never_coerced(raw: dict[str, object]) -> None:
    with pytest.raises(TypeError):
        NUMBERS.structure(raw, Numbers)
