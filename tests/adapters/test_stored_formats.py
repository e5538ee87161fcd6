"""The stored formats, byte for byte: what the Chroma, Qdrant and files backends write for one memory with every
field set, and the records of earlier versions every later one must still read.

The pinned bytes below (MEMORY → CHROMA_METADATA, QDRANT_PAYLOAD, FILE) change only on purpose: a field added to
Memory adds its key to each (the deliberate stored-format update the recipe in architecture.md names). The
WRITTEN_2026_11 records are never edited: they are what existing data directories hold, and a field added later must
read as its default there (`stored(optional_in_old_records=True)` in domain/model.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from returns.result import Success

from agent_memory.adapters.chroma import records as chroma_records
from agent_memory.adapters.files.frontmatter import ParsedMemory, parse_frontmatter, serialize_frontmatter
from agent_memory.adapters.qdrant import records as qdrant_records
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath

NOW = datetime(2026, 11, 23, 1, 2, 3, 456789, tzinfo=UTC)
FIELDS: dict[str, object] = {
    "id": "5d77d49b-ebd4-4d68-9c09-fb57e293c9c5",
    "content": "y",
    "created_at": NOW,
    "updated_at": NOW + timedelta(seconds=1),
    "store": "work",
    "namespace": ("user", "a"),
    "path": MemoryPath(("a", "b-c")),
    "agent": "ag",
    "personality": "p",
    "project": "pr",
    "type": "t",
    "global_": True,
    "tags": ("x", "y", "x"),
    "source": "s",
    "citations": ("c1",),
    "thread": "th",
    "decay_policy": DecayPolicy.REINFORCEABLE,
    "last_reinforced_at": NOW,
    "expires_at": NOW + timedelta(days=1),
    "deleted": True,
    "deleted_at": NOW,
}
MEMORY = Memory(**FIELDS, revision=3)  # type: ignore[arg-type]
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
    "record": '{"v":1,"store":"work","namespace":["user","a"],"tags":["x","y","x"],"source":"s","citations":["c1"],"thread":"th","revision":3,"created_at":"2026-11-23T01:02:03.456789+00:00","updated_at":"2026-11-23T01:02:04.456789+00:00","last_reinforced_at":"2026-11-23T01:02:03.456789+00:00","expires_at":"2026-11-24T01:02:03.456789+00:00","deleted_at":"2026-11-23T01:02:03.456789+00:00"}',
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
    "deleted": True,
    "revision": 3,
    "created_at": "2026-11-23T01:02:03.456789+00:00",
    "updated_at": "2026-11-23T01:02:04.456789+00:00",
    "last_reinforced_at": "2026-11-23T01:02:03.456789+00:00",
    "expires_at": "2026-11-24T01:02:03.456789+00:00",
    "deleted_at": "2026-11-23T01:02:03.456789+00:00",
    "created_us": 1795395723456789,
    "anchor_us": 1795395723456789,
    "expires_us": 1795482123456789,
}

FILE = """---
id: 5d77d49b-ebd4-4d68-9c09-fb57e293c9c5
path: a/b-c
created_at: 2026-11-23T01:02:03.456789Z
updated_at: 2026-11-23T01:02:04.456789Z
expires_at: 2026-11-24T01:02:03.456789Z
tags:
- x
- y
- x
source: s
citations:
- c1
namespace:
- user
- a
agent: ag
personality: p
project: pr
type: t
global: true
thread: th
decay_policy: reinforceable
last_reinforced_at: 2026-11-23T01:02:03.456789Z
deleted: true
deleted_at: 2026-11-23T01:02:03.456789Z
revision: 3
---
y"""


def test_chroma_writes_the_metadata_and_record_json_it_always_wrote() -> None:
    written = chroma_records.memory_metadata(MEMORY)
    assert list(written.items()) == list(CHROMA_METADATA.items())  # key order too
    assert chroma_records.memory_from_record(MEMORY.id, MEMORY.content, CHROMA_METADATA) == MEMORY


def test_qdrant_writes_the_payload_it_always_wrote() -> None:
    written = qdrant_records.memory_payload(MEMORY)
    assert json.dumps(written) == json.dumps(QDRANT_PAYLOAD)  # key order too
    assert qdrant_records.memory_from_point(MEMORY.id, QDRANT_PAYLOAD) == MEMORY


def test_files_write_the_frontmatter_they_always_wrote() -> None:
    assert serialize_frontmatter(MEMORY) == FILE
    assert parse_frontmatter(FILE, store=MEMORY.store) == Success(ParsedMemory(MEMORY, {}))


# --- what earlier versions wrote: never edited, always read -----------------------------------------------------

# MEMORY as this program wrote it in November 2026 (Chroma record version 1); a field added since reads as its default
MEMORY_2026_11 = Memory(**FIELDS)  # type: ignore[arg-type]
CHROMA_2026_11 = {
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
QDRANT_2026_11 = {
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
FILE_2026_11 = """---
id: 5d77d49b-ebd4-4d68-9c09-fb57e293c9c5
path: a/b-c
created_at: 2026-11-23T01:02:03.456789Z
updated_at: 2026-11-23T01:02:04.456789Z
expires_at: 2026-11-24T01:02:03.456789Z
tags:
- x
- y
- x
source: s
citations:
- c1
namespace:
- user
- a
agent: ag
personality: p
project: pr
type: t
thread: th
global: true
decay_policy: reinforceable
last_reinforced_at: 2026-11-23T01:02:03.456789Z
deleted: true
deleted_at: 2026-11-23T01:02:03.456789Z
---
y"""


def test_what_earlier_versions_wrote_still_loads_on_every_backend() -> None:
    assert chroma_records.memory_from_record(MEMORY.id, "y", CHROMA_2026_11) == MEMORY_2026_11
    assert qdrant_records.memory_from_point(MEMORY.id, QDRANT_2026_11) == MEMORY_2026_11
    assert parse_frontmatter(FILE_2026_11, store="work") == Success(ParsedMemory(MEMORY_2026_11, {}))
