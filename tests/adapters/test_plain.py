"""The plain converter the storage backends share: every field round trips, a value of the wrong type is refused."""

from __future__ import annotations

import pytest

from agent_memory.adapters.shared.plain import memory_from_plain, plain_memory
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
