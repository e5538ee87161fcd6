"""The stored formats, byte for byte: what the Chroma and Qdrant backends write for one memory with every field set.

These values were written by the hand codecs before the shared converter (adapters/shared/plain.py) replaced
them; a change here changes what existing data directories hold, so it needs a reader for the old form.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from agent_memory.adapters.chroma import records as chroma_records
from agent_memory.adapters.qdrant import records as qdrant_records
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath

NOW = datetime(2026, 11, 23, 1, 2, 3, 456789, tzinfo=UTC)
MEMORY = Memory(
    id="5d77d49b-ebd4-4d68-9c09-fb57e293c9c5",
    content="y",
    created_at=NOW,
    updated_at=NOW + timedelta(seconds=1),
    store="work",
    namespace=("user", "a"),
    path=MemoryPath(("a", "b-c")),
    agent="ag",
    personality="p",
    project="pr",
    type="t",
    global_=True,
    tags=("x", "y", "x"),
    source="s",
    citations=("c1",),
    thread="th",
    decay_policy=DecayPolicy.REINFORCEABLE,
    last_reinforced_at=NOW,
    expires_at=NOW + timedelta(days=1),
    deleted=True,
    deleted_at=NOW,
)
CHROMA_METADATA = {
    "namespace_prefixes": ["", "user", "user\x1fa"],
    "path": "a/b-c",
    "path_prefixes": ["a", "a/b-c"],
    "agent": "ag",
    "personality": "p",
    "project": "pr",
    "type": "t",
    "global": True,
    "tags": ["x", "y"],
    "decay_policy": "reinforceable",
    "deleted": True,
    "expires_us": 1795482123456789,
    "anchor_us": 1795395723456789,
    "record": '{"v":1,"store":"work","namespace":["user","a"],"tags":["x","y","x"],"source":"s","citations":["c1"],"thread":"th","created_at":"2026-11-23T01:02:03.456789+00:00","updated_at":"2026-11-23T01:02:04.456789+00:00","last_reinforced_at":"2026-11-23T01:02:03.456789+00:00","expires_at":"2026-11-24T01:02:03.456789+00:00","deleted_at":"2026-11-23T01:02:03.456789+00:00"}',
}
QDRANT_PAYLOAD = {
    "content": "y",
    "store": "work",
    "namespace": ["user", "a"],
    "namespace_prefixes": ["user", "user\x1fa"],
    "path": "a/b-c",
    "path_prefixes": ["a", "a/b-c"],
    "agent": "ag",
    "personality": "p",
    "project": "pr",
    "type": "t",
    "global": True,
    "tags": ["x", "y", "x"],
    "source": "s",
    "citations": ["c1"],
    "thread": "th",
    "decay_policy": "reinforceable",
    "created_at": "2026-11-23T01:02:03.456789+00:00",
    "updated_at": "2026-11-23T01:02:04.456789+00:00",
    "last_reinforced_at": "2026-11-23T01:02:03.456789+00:00",
    "expires_at": "2026-11-24T01:02:03.456789+00:00",
    "deleted": True,
    "deleted_at": "2026-11-23T01:02:03.456789+00:00",
    "created_us": 1795395723456789,
    "anchor_us": 1795395723456789,
    "expires_us": 1795482123456789,
}


def test_chroma_writes_the_metadata_and_record_json_it_always_wrote() -> None:
    written = chroma_records.memory_metadata(MEMORY)
    assert list(written.items()) == list(CHROMA_METADATA.items())  # key order too
    assert chroma_records.memory_from_record(MEMORY.id, MEMORY.content, CHROMA_METADATA) == MEMORY


def test_qdrant_writes_the_payload_it_always_wrote() -> None:
    written = qdrant_records.memory_payload(MEMORY)
    assert json.dumps(written) == json.dumps(QDRANT_PAYLOAD)  # key order too
    assert qdrant_records.memory_from_point(MEMORY.id, QDRANT_PAYLOAD) == MEMORY
