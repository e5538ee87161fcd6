"""Chroma records: the slim format round-trips every field, and records of the earlier format stay readable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import attrs
import chromadb
import pytest
from chromadb.config import Settings
from hypothesis import HealthCheck, given, settings

from agent_memory.adapters.chroma.catalog import ChromaCatalog
from agent_memory.adapters.chroma.records import (
    NEVER_EXPIRES_US,
    RECORD_KEY,
    memory_from_record,
    memory_metadata,
    namespace_prefixes,
    new_record_metadata,
    path_prefixes,
)
from agent_memory.adapters.chroma.store import ChromaVectorStore
from agent_memory.adapters.shared.record_time import iso, micros
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DecayPolicy, Memory
from tests.contract.vector_store_contract import (
    DIM,
    MODEL,
    NOW,
    assert_query_matches,
    assert_scan_matches,
    axis,
    failed_with,
    full_memory,
    memories_strategy,
    named_filters,
    ok,
    probes,
    sample,
)

MetadataDict = dict[str, Any]
FILTER_KEYS = {
    "namespace_prefixes",
    "path",
    "path_prefixes",
    "agent",
    "personality",
    "project",
    "type",
    "global",
    "tags",
    "decay_policy",
    "deleted",
    "expires_us",
    "anchor_us",
}
TRICKY = full_memory(
    content='Ünïcödé — 日本語 🧠 "quoted" {"v":1} \\ back\nslash',
    namespace=("user", "ünï", "日本"),
    tags=("python", "日本", "python", "with space", '"q"'),
    citations=("https://example.org/a?x=1&y=2", "doc 2, page 3", "doc 2, page 3"),
    source='chat "ünï" \\ 🧠',
)
MINIMAL = Memory(id="00000000-0000-4000-8000-000000000001", content="x", created_at=NOW, updated_at=NOW)


# --- the earlier format, exactly as the previous memory_metadata wrote it -----------------------

LEGACY_FULL: MetadataDict = {  # full_memory(tags=("python", "日本", "with space", "python"))
    "store": "default",
    "namespace": '["user", "u-123", "é"]',
    "namespace_prefixes": ["", "user", "user\x1fu-123", "user\x1fu-123\x1fé"],
    "path": "projects/agent-memory/design",
    "path_prefixes": ["projects", "projects/agent-memory", "projects/agent-memory/design"],
    "agent": "agent-1",
    "personality": "concise",
    "project": "agent-memory",
    "type": "preference",
    "global": True,
    "tags": ["python", "日本", "with space"],
    "tags_json": '["python", "日本", "with space", "python"]',
    "source": "chat:2024-05-06",
    "citations": '["https://example.org/a", "doc 2, page 3"]',
    "decay_policy": "reinforceable",
    "created_at": "2024-05-06T07:08:09.123456+00:00",
    "updated_at": "2024-05-07T07:08:09.654321+00:00",
    "last_reinforced_at": "2024-06-01T00:00:00.000001+00:00",
    "expires_at": "2030-01-01T23:59:59.999999+00:00",
    "deleted": True,
    "deleted_at": "2024-06-02T03:04:05.600000+00:00",
    "created_us": 1714979289123456,
    "anchor_us": 1717200000000001,
    "expires_us": 1893542399999999,
}
LEGACY_FULL_MEMORY = full_memory(tags=("python", "日本", "with space", "python"), thread="", revision=0)  # no threads,
# and no revisions (issue 46), then


def legacy_metadata(memory: Memory) -> MetadataDict:
    """The previous version's memory_metadata, frozen here to write old-format records."""
    return {
        "store": memory.store,
        "namespace": json.dumps(list(memory.namespace), ensure_ascii=False),
        "namespace_prefixes": namespace_prefixes(memory.namespace),
        "path": "" if memory.path is None else str(memory.path),
        "path_prefixes": None if memory.path is None else path_prefixes(memory.path),
        "agent": memory.agent,
        "personality": memory.personality,
        "project": memory.project,
        "type": memory.type,
        "global": memory.global_,
        "tags": list(dict.fromkeys(memory.tags)) or None,
        "tags_json": json.dumps(list(memory.tags), ensure_ascii=False),
        "source": memory.source,
        "citations": json.dumps(list(memory.citations), ensure_ascii=False),
        "decay_policy": memory.decay_policy.value,
        "created_at": iso(memory.created_at),
        "updated_at": iso(memory.updated_at),
        "last_reinforced_at": iso(memory.last_reinforced_at),
        "expires_at": iso(memory.expires_at),
        "deleted": memory.deleted,
        "deleted_at": iso(memory.deleted_at),
        "created_us": micros(memory.created_at),
        "anchor_us": micros(memory.decay_anchor),
        "expires_us": NEVER_EXPIRES_US if memory.expires_at is None else micros(memory.expires_at),
    }


def without_none(meta: MetadataDict) -> MetadataDict:
    return {key: value for key, value in meta.items() if value is not None}


# --- a real embedded Chroma ---------------------------------------------------------------------


def raw_collection(path: Path) -> chromadb.Collection:
    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    return client.get_or_create_collection("memories", embedding_function=None)


def open_store(path: Path) -> ChromaVectorStore:
    store = ok(ChromaCatalog(path=path, embedder_name=MODEL, dimension=DIM).open("default", create=True))
    assert isinstance(store, ChromaVectorStore)
    return store


def stored(path: Path, memory_id: str) -> tuple[str | None, MetadataDict]:
    found = raw_collection(path).get(ids=[memory_id], include=["documents", "metadatas"])
    assert found["ids"] == [memory_id]
    return (found["documents"] or [None])[0], dict((found["metadatas"] or [{}])[0])


def write_raw(path: Path, memories: list[Memory], metadatas: list[MetadataDict], vectors: list[list[float]]) -> None:
    raw_collection(path).add(
        ids=[m.id for m in memories],
        embeddings=cast(Any, vectors),
        documents=[m.content for m in memories],
        metadatas=cast(Any, metadatas),
    )


VARIANTS = {
    "full": full_memory(),
    "tricky": TRICKY,
    "minimal": MINIMAL,
    "stable": full_memory(decay_policy=DecayPolicy.STABLE, last_reinforced_at=None),
    "contextual": full_memory(decay_policy=DecayPolicy.CONTEXTUAL, expires_at=None),
    "reinforceable_never_reinforced": full_memory(last_reinforced_at=None, deleted=False, deleted_at=None),
    "no_path_no_tags": full_memory(path=None, tags=(), citations=(), namespace=()),
}


@pytest.mark.parametrize("memory", VARIANTS.values(), ids=VARIANTS.keys())
def test_a_memory_round_trips_through_a_real_collection(tmp_path: Path, memory: Memory) -> None:
    write_raw(tmp_path, [memory], [new_record_metadata(memory)], [axis(0)])
    document, meta = stored(tmp_path, memory.id)
    assert RECORD_KEY in meta and "tags_json" not in meta and "created_at" not in meta
    assert memory_from_record(memory.id, document, meta) == memory


@pytest.mark.parametrize("memory", VARIANTS.values(), ids=VARIANTS.keys())
def test_the_store_reads_back_what_it_wrote_in_the_new_format(tmp_path: Path, memory: Memory) -> None:
    store = open_store(tmp_path)
    ok(store.add([memory], [axis(1)]))
    ok(store.update_metadata([attrs.evolve(memory, tags=("later", "later"), updated_at=NOW)]))
    (got,) = ok(open_store(tmp_path).get([memory.id]))
    assert got == attrs.evolve(memory, tags=("later", "later"), updated_at=NOW)


def test_upsert_clears_the_list_keys_a_memory_no_longer_has(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    memory = full_memory()
    ok(store.add([memory], [axis(2)]))
    ok(store.update_metadata([attrs.evolve(memory, tags=(), path=None)]))
    _, meta = stored(tmp_path, memory.id)
    assert "tags" not in meta and "path_prefixes" not in meta and meta["path"] == ""


def test_a_full_memory_has_at_most_15_top_level_keys(tmp_path: Path) -> None:
    meta = memory_metadata(TRICKY)
    assert set(meta) == FILTER_KEYS | {RECORD_KEY}
    assert len(meta) <= 15
    write_raw(tmp_path, [TRICKY], [new_record_metadata(TRICKY)], [axis(0)])
    assert len(stored(tmp_path, TRICKY.id)[1]) <= 15


def test_the_record_is_compact_unicode_json_with_tags_in_order() -> None:
    record = memory_metadata(TRICKY)[RECORD_KEY]
    assert record == json.dumps(json.loads(record), ensure_ascii=False, separators=(",", ":"))
    assert "日本" in record and "\\u" not in record
    fields = json.loads(record)
    assert fields["tags"] == ["python", "日本", "python", "with space", '"q"']
    assert fields["namespace"] == ["user", "ünï", "日本"]
    assert fields["created_at"] == "2024-05-06T07:08:09.123456+00:00"
    assert json.loads(memory_metadata(MINIMAL)[RECORD_KEY])["expires_at"] == ""


def test_filter_keys_keep_their_values() -> None:
    """The keys `where` reads are written exactly as before (the where translation is unchanged)."""
    for memory, _ in sample():
        legacy = legacy_metadata(memory)
        assert {key: memory_metadata(memory)[key] for key in FILTER_KEYS} == {key: legacy[key] for key in FILTER_KEYS}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memory=memories_strategy)
def test_any_memory_round_trips_through_the_metadata(memory: Memory) -> None:
    assert memory_from_record(memory.id, memory.content, memory_metadata(memory)) == memory
    assert memory_from_record(memory.id, memory.content, new_record_metadata(memory)) == memory


# --- records of the earlier format ---------------------------------------------------------------


def test_the_frozen_legacy_writer_is_the_previous_format() -> None:
    assert legacy_metadata(LEGACY_FULL_MEMORY) == LEGACY_FULL


def test_a_legacy_record_is_read_as_before(tmp_path: Path) -> None:
    write_raw(tmp_path, [LEGACY_FULL_MEMORY], [LEGACY_FULL], [axis(0)])
    document, meta = stored(tmp_path, LEGACY_FULL_MEMORY.id)
    assert meta == LEGACY_FULL
    assert memory_from_record(LEGACY_FULL_MEMORY.id, document, meta) == LEGACY_FULL_MEMORY
    (got,) = ok(open_store(tmp_path).get([LEGACY_FULL_MEMORY.id]))
    assert got == LEGACY_FULL_MEMORY


def test_a_legacy_record_without_optional_keys_is_read_as_before(tmp_path: Path) -> None:
    write_raw(tmp_path, [MINIMAL], [without_none(legacy_metadata(MINIMAL))], [axis(0)])
    (got,) = ok(open_store(tmp_path).get([MINIMAL.id]))
    assert got == MINIMAL


def test_old_and_new_records_in_one_collection_answer_every_filter(tmp_path: Path) -> None:
    pairs = sample()
    old, new = pairs[::2], pairs[1::2]
    store = open_store(tmp_path)
    write_raw(tmp_path, [m for m, _ in old], [without_none(legacy_metadata(m)) for m, _ in old], [v for _, v in old])
    ok(store.add([m for m, _ in new], [v for _, v in new]))
    for where in named_filters(pairs).values():
        assert_scan_matches(store, pairs, where)
        assert_query_matches(store, pairs, probes()[0], where, 7)


def test_rewriting_a_legacy_record_moves_it_to_the_new_format(tmp_path: Path) -> None:
    """Chroma merges metadata on update: the stale legacy keys stay, but the `record` key wins."""
    write_raw(tmp_path, [LEGACY_FULL_MEMORY], [LEGACY_FULL], [axis(0)])
    store = open_store(tmp_path)
    changed = attrs.evolve(LEGACY_FULL_MEMORY, tags=("new",), citations=(), source="", deleted=False, deleted_at=None)
    ok(store.update_metadata([changed]))
    _, meta = stored(tmp_path, changed.id)
    assert RECORD_KEY in meta and meta["tags_json"] == LEGACY_FULL["tags_json"]
    assert ok(open_store(tmp_path).get([changed.id])) == [changed]
    assert_scan_matches(store, [(changed, axis(0))], MemoryFilter(tags=("new",)))
    assert ok(store.scan(MemoryFilter(tags=("python",)))) == []


# --- malformed records -----------------------------------------------------------------------------


def _record(**changes: object) -> str:
    fields = json.loads(memory_metadata(full_memory())[RECORD_KEY])
    fields.update(changes)
    return json.dumps({key: value for key, value in fields.items() if value is not ...})


MALFORMED: dict[str, object] = {
    "not_json": '{"v":1,',
    "empty": "",
    "a_list": "[]",
    "a_string": '"text"',
    "null": "null",
    "not_a_string": 42,
    "a_bool": True,
    "deeply_nested": "[" * 100_000,
    "nested_in_object": '{"v":' + "[" * 100_000,
    "no_version": _record(v=...),
    "future_version": _record(v=2),
    "missing_store": _record(store=...),
    "missing_created_at": _record(created_at=...),
    "empty_created_at": _record(created_at=""),
    "bad_timestamp": _record(updated_at="yesterday"),
    "numeric_timestamp": _record(expires_at=12),
    "null_timestamp": _record(deleted_at=None),
    "tags_not_a_list": _record(tags="python"),
    "tags_with_a_number": _record(tags=["a", 1]),
    "namespace_as_object": _record(namespace={"a": 1}),
    "citations_null": _record(citations=None),
    "source_not_text": _record(source=["x"]),
    "invalid_store_name": _record(store="Not A Store"),
    "invalid_tag": _record(tags=[" "]),
    "huge_integer": '{"v":' + "9" * 10_000 + "}",
}


@pytest.mark.parametrize("record", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_record_raises_a_value_key_or_type_error(record: object) -> None:
    meta = {**memory_metadata(full_memory()), RECORD_KEY: record}
    with pytest.raises((ValueError, KeyError, TypeError)):
        memory_from_record(full_memory().id, "content", meta)


@pytest.mark.parametrize("record", ["{", "[" * 100_000, _record(tags=[1])], ids=["truncated", "nested", "bad_tags"])
def test_a_malformed_record_in_chroma_is_a_storage_error(tmp_path: Path, record: str) -> None:
    store = open_store(tmp_path)
    memory = full_memory()
    write_raw(tmp_path, [memory], [{**new_record_metadata(memory), RECORD_KEY: record}], [axis(0)])
    failed_with(store.get([memory.id]), ErrorCode.STORAGE_ERROR)
    failed_with(store.scan(MemoryFilter(include_deleted=True)), ErrorCode.STORAGE_ERROR)


def test_a_bad_filter_key_beside_a_good_record_is_still_an_error() -> None:
    meta = {**memory_metadata(full_memory()), "decay_policy": "sometimes"}
    with pytest.raises(ValueError):
        memory_from_record(full_memory().id, "content", meta)
    meta = {**memory_metadata(full_memory()), "path": "a//b"}
    with pytest.raises(ValueError):
        memory_from_record(full_memory().id, "content", meta)
