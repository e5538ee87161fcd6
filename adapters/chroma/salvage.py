"""Reading an embedded Chroma store's records straight from chroma.sqlite3 when its vector index is damaged.

Chroma keeps every record (id, document, metadata) in its SQLite metadata segment and the vectors in HNSW
files beside it. Once those files are damaged, every Chroma call fails — `get` and `count` included, since
Chroma first brings the vector index up to date — although the records are intact. This module reads them
without Chroma: the metadata segment's rows, then the write log's operations that segment has not applied
yet (in order: add and upsert set, update merges, delete drops), so a record written just before the damage
is not missed. It only reads (the database is opened read-only) and knows Chroma's SQLite layout of the
0.5–1.x series; anything else it meets is a SalvageError.
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
from collections.abc import Mapping
from typing import Any

from agent_memory.adapters.chroma.records import memory_from_record
from agent_memory.domain.model import Memory

DATABASE = "chroma.sqlite3"
DOCUMENT_KEY = "chroma:document"
ADD, UPDATE, UPSERT, DELETE = 0, 1, 2, 3  # chromadb's Operation codes in the write log

Record = tuple[str | None, dict[str, Any]]  # (document, metadata)


class SalvageError(Exception):
    """The database could not be read as Chroma's: the message says why."""


def is_vector_index_damage(cause: str | None) -> bool:
    """Whether a Chroma failure's cause is its HNSW vector index failing to load (the records are then intact)."""
    text = (cause or "").lower()
    return "hnsw" in text and ("segment reader" in text or "loading" in text or "index" in text)


def damaged_index_problem(directory: pathlib.Path, collection: str) -> str:
    """What `memory status` says about a damaged vector index, and what to run."""
    return (
        f"The vector index of collection '{collection}' in {directory} is damaged (its HNSW files cannot be "
        "loaded): search and writes fail, export and list read the records from chroma.sqlite3. Run "
        "`memory export --output backup.jsonl` to keep them, then `memory reindex` to rebuild the index."
    )


def salvage_memories(directory: pathlib.Path, collection: str) -> list[Memory]:
    """Every record of the collection, as memories; SalvageError when the database cannot be read so."""
    try:
        with sqlite3.connect(f"file:{directory / DATABASE}?mode=ro", uri=True) as connection:
            records = _records(connection, collection)
    except sqlite3.Error as error:
        raise SalvageError(f"cannot read {directory / DATABASE}: {error}") from error
    memories: list[Memory] = []
    for memory_id, (document, metadata) in sorted(records.items()):
        try:
            memories.append(memory_from_record(memory_id, document, metadata))
        except (KeyError, ValueError, TypeError) as error:
            raise SalvageError(f"record {memory_id} is not a memory this program wrote: {error}") from error
    return memories


def _records(connection: sqlite3.Connection, collection: str) -> dict[str, Record]:
    found = connection.execute("SELECT id FROM collections WHERE name = ?", (collection,)).fetchone()
    if found is None:
        raise SalvageError(f"there is no collection '{collection}'")
    collection_id = found[0]
    segment = connection.execute(
        "SELECT id FROM segments WHERE collection = ? AND scope = 'METADATA'", (collection_id,)
    ).fetchone()
    if segment is None:
        raise SalvageError(f"collection '{collection}' has no metadata segment")
    applied = connection.execute("SELECT seq_id FROM max_seq_id WHERE segment_id = ?", (segment[0],)).fetchone()
    records = _segment_records(connection, segment[0])
    _replay_log(connection, collection_id, 0 if applied is None else int(applied[0]), records)
    return records


def _segment_records(connection: sqlite3.Connection, segment_id: str) -> dict[str, Record]:
    rows = connection.execute(
        "SELECT e.embedding_id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value "
        "FROM embeddings AS e LEFT JOIN embedding_metadata AS m ON m.id = e.id WHERE e.segment_id = ?",
        (segment_id,),
    )
    records: dict[str, Record] = {}
    for memory_id, key, text, whole, real, flag in rows:
        metadata = records.setdefault(memory_id, (None, {}))[1]
        if key is None:
            continue
        value: Any = (
            bool(flag) if flag is not None else text if text is not None else whole if whole is not None else real
        )
        if key == DOCUMENT_KEY:
            records[memory_id] = (value, metadata)
        else:
            metadata[key] = value
    return records


def _replay_log(connection: sqlite3.Connection, collection_id: str, applied: int, records: dict[str, Record]) -> None:
    rows = connection.execute(
        "SELECT operation, id, metadata FROM embeddings_queue WHERE seq_id > ? AND topic LIKE ? ORDER BY seq_id",
        (applied, f"%/{collection_id}"),
    )
    for operation, memory_id, raw in rows:
        if operation == DELETE:
            records.pop(memory_id, None)
            continue
        changes: Mapping[str, Any] = json.loads(raw) if raw else {}
        if operation == UPDATE and memory_id not in records:
            continue
        if operation == ADD and memory_id in records:
            continue  # Chroma ignores an add of an existing id
        document, metadata = records.get(memory_id, (None, {}))
        merged = dict(metadata)
        for key, value in changes.items():
            if key == DOCUMENT_KEY:
                document = value
            elif value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        records[memory_id] = (document, merged)
