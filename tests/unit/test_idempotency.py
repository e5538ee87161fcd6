"""Creates with an idempotency key: a retry answers the memory the first stored, once; another body is refused."""

from __future__ import annotations

from returns.result import Success

from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.idempotency import keyed_memory_id
from agent_memory.domain.service import MemoryService


def test_a_keyed_create_repeated_answers_the_first_memory_and_stores_it_once(service: MemoryService) -> None:
    command = CreateMemory(content="Standup is at nine.", tags=("team",), idempotency_key="abc")
    first = service.create(command).unwrap()
    again = service.create(command).unwrap()
    assert again.memory == first.memory and first.memory.id == keyed_memory_id("default", (), "abc")
    assert [m.memory.id for m in service.list().unwrap().memories] == [first.memory.id]


def test_the_same_key_with_another_body_is_refused_and_stores_nothing(service: MemoryService) -> None:
    service.create(CreateMemory(content="Standup is at nine.", idempotency_key="abc")).unwrap()
    refused = service.create(CreateMemory(content="Standup is at ten.", idempotency_key="abc")).failure()
    assert refused.code is ErrorCode.INVALID_OPERATION and "'abc'" in refused.message
    assert len(service.list().unwrap().memories) == 1


def test_keys_are_per_store_and_namespace_and_a_keyless_create_is_new_each_time(service: MemoryService) -> None:
    mine = service.create(CreateMemory(content="x", namespace=("user", "a"), idempotency_key="k")).unwrap()
    theirs = service.create(CreateMemory(content="x", namespace=("user", "b"), idempotency_key="k")).unwrap()
    assert mine.memory.id != theirs.memory.id
    plain = [service.create(CreateMemory(content="y")).unwrap().memory.id for _ in range(2)]
    assert plain[0] != plain[1]


def test_a_keyed_create_at_a_path_retried_answers_it_rather_than_destination_exists(service: MemoryService) -> None:
    command = CreateMemory(content="Deploys on Fridays.", path="ops/deploys", idempotency_key="p-1")
    assert isinstance(service.add(command), Success) and isinstance(service.add(command), Success)
    plain_retry = service.add(CreateMemory(content="Deploys on Fridays.", path="ops/deploys")).failure()
    assert plain_retry.code is ErrorCode.DESTINATION_EXISTS


def test_a_blank_or_overlong_key_is_invalid_input(service: MemoryService) -> None:
    for key in ("  ", "k" * 256, "tab\tinside"):
        assert service.create(CreateMemory(content="z", idempotency_key=key)).failure().code is ErrorCode.INVALID_INPUT


def test_a_batch_with_a_key_is_refused_whole(service: MemoryService) -> None:
    batch = [CreateMemory(content="a"), CreateMemory(content="b", idempotency_key="k")]
    assert service.create_many(batch).failure().code is ErrorCode.INVALID_INPUT
    assert service.list().unwrap().memories == ()
