"""A mirror's file of its own: one collection's mirror as of one generation of the data directory, loaded in seconds.

Why: reading a store record by record out of Chroma into a mirror took 12.4 s at 100k memories (issue 47), in every
process. The warmer (adapters.chroma.warming) writes the mirror it built to `<data>/.agent-memory-mirrors/<id>.mirror`
and a later process whose data directory is at the same generation (adapters.chroma.session: bumped by every write
of any process) restores it from there instead of reading Chroma; a file of another generation, another collection,
another dimension, or one that is truncated or damaged is ignored (and replaced by the next build).

Layout: MAGIC, the header's length (8 bytes, little-endian), a JSON header (generation, collection, dimension, rows,
each section's offset and length, and a BLAKE2b digest of everything after the header), then the sections: the unit
vectors (float32, rows × dimension), the per-row columns the filters read, each row's keys (JSON), its id and its
record's bytes (the Chroma record's document and metadata as JSON, parsed only when a search returns the row).
Written whole (temporary file, fsync, rename): a reader sees the old file or the new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agent_memory.adapters.chroma.records import memory_from_record, memory_metadata
from agent_memory.adapters.chroma.vector_mirror import Columns, Keys, VectorMirror
from agent_memory.adapters.shared.durable import write_atomically
from agent_memory.adapters.shared.private import private_directory
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath

FOLDER = ".agent-memory-mirrors"
MAGIC = b"AMMIRROR"
VERSION = 1
_COLUMNS = (("deleted", np.bool_), ("expires_us", np.int64), ("anchor_us", np.int64), ("stable", np.bool_))


class Unusable(Exception):
    """The file is not a mirror of this collection at this generation (missing, stale, truncated or damaged)."""


def path_of(directory: pathlib.Path, collection: str) -> pathlib.Path:
    return directory / FOLDER / f"{collection}.mirror"


def record_bytes(memory: Memory) -> bytes:
    """A memory as its file keeps it: the Chroma record's document and metadata (what memory_from_record reads)."""
    return json.dumps([memory.content, memory_metadata(memory)], ensure_ascii=False, separators=(",", ":")).encode()


def parse_record(memory_id: str, data: bytes) -> Memory:
    document, metadata = json.loads(data)
    return memory_from_record(memory_id, document, metadata)


def save(directory: pathlib.Path, collection: str, generation: int, dimension: int, columns: Columns) -> pathlib.Path:
    """Write the mirror's file whole; raises OSError (the caller logs it: a mirror file is only a head start)."""
    records = [r if isinstance(r, bytes) else record_bytes(r) for r in columns.records]
    offsets = np.zeros(len(records) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in records], out=offsets[1:])
    parts: list[tuple[str, bytes]] = [
        ("matrix", np.ascontiguousarray(columns.matrix, dtype=np.float32).tobytes()),
        *((name, np.ascontiguousarray(getattr(columns, name), dtype=kind).tobytes()) for name, kind in _COLUMNS),
        ("keys", json.dumps([_plain_keys(k) for k in columns.keys], ensure_ascii=False).encode()),
        ("ids", json.dumps(columns.ids).encode()),
        ("offsets", offsets.tobytes()),
        ("records", b"".join(records)),
    ]
    sections: dict[str, list[int]] = {}
    at = 0
    digest = hashlib.blake2b(digest_size=32)
    for name, data in parts:
        sections[name] = [at, len(data)]
        digest.update(data)
        at += len(data)
    header = json.dumps(
        {
            "version": VERSION,
            "generation": generation,
            "collection": collection,
            "dimension": dimension,
            "rows": len(columns.ids),
            "sections": sections,
            "digest": digest.hexdigest(),
        }
    ).encode()
    target = path_of(directory, collection)
    private_directory(target.parent)
    write_atomically(target, b"".join([MAGIC, len(header).to_bytes(8, "little"), header, *(d for _, d in parts)]))
    return target


def load(directory: pathlib.Path, collection: str, generation: int, dimension: int | None) -> VectorMirror:
    """The mirror the file holds, when it is this collection's at this generation; else Unusable."""
    mirror, _ = _load(directory, collection, dimension, lambda held: held == generation, generation)
    return mirror


def load_behind(
    directory: pathlib.Path, collection: str, newest: int, dimension: int | None
) -> tuple[VectorMirror, int]:
    """The mirror the file holds and its generation, when it is this collection's at a generation no later than
    `newest` (a node's mirror over a server: its feed watermark, caught up from there); else Unusable."""
    return _load(directory, collection, dimension, lambda held: held <= newest, newest)


def _load(
    directory: pathlib.Path, collection: str, dimension: int | None, fits: Callable[[int], bool], wanted: int
) -> tuple[VectorMirror, int]:
    target = path_of(directory, collection)
    try:
        with open(target, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = bytearray(size)  # writable: the mirror's matrix is a view of it, written in place afterwards
            if handle.readinto(data) != size:
                raise Unusable("the file changed while it was read")
    except FileNotFoundError as error:
        raise Unusable("no mirror file") from error
    except OSError as error:
        raise Unusable(f"cannot read the mirror file: {error}") from error
    header = _header(data, collection, dimension)
    if not isinstance(header.get("generation"), int) or not fits(header["generation"]):
        raise Unusable(f"a mirror file of generation {header.get('generation')}, the data is at {wanted}")
    body = memoryview(data)[len(MAGIC) + 8 + int.from_bytes(data[len(MAGIC) : len(MAGIC) + 8], "little") :]
    sections: dict[str, list[int]] = header["sections"]
    if sum(length for _, length in sections.values()) != len(body):
        raise Unusable("the mirror file is truncated")
    if hashlib.blake2b(body, digest_size=32).hexdigest() != header["digest"]:
        raise Unusable("the mirror file is damaged")
    mirror = VectorMirror.restored(int(header["dimension"]), _columns(body, sections, header), parse_record)
    return mirror, int(header["generation"])


def _header(data: bytearray, collection: str, dimension: int | None) -> dict[str, Any]:
    if data[: len(MAGIC)] != MAGIC or len(data) < len(MAGIC) + 8:
        raise Unusable("not a mirror file")
    length = int.from_bytes(data[len(MAGIC) : len(MAGIC) + 8], "little")
    try:
        header = json.loads(bytes(data[len(MAGIC) + 8 : len(MAGIC) + 8 + length]))
    except ValueError as error:
        raise Unusable("the mirror file's header is damaged") from error
    if not isinstance(header, dict) or header.get("version") != VERSION or header.get("collection") != collection:
        raise Unusable("a mirror file of another version or collection")
    if dimension is not None and header.get("dimension") != dimension:
        raise Unusable("a mirror file of another dimension")
    return header


def _columns(body: memoryview, sections: dict[str, list[int]], header: dict[str, Any]) -> Columns:
    rows, dimension = int(header["rows"]), int(header["dimension"])

    def section(name: str) -> memoryview:
        at, length = sections[name]
        return body[at : at + length]

    try:
        ids: list[str] = json.loads(bytes(section("ids")))
        keys = [_keys(k) for k in json.loads(bytes(section("keys")))]
        offsets = np.frombuffer(section("offsets"), dtype=np.int64)
        blob = bytes(section("records"))
        records: list[Memory | bytes] = [blob[offsets[i] : offsets[i + 1]] for i in range(rows)]
        matrix = np.frombuffer(section("matrix"), dtype=np.float32).reshape(rows, dimension)
        columns = {name: np.frombuffer(section(name), dtype=kind) for name, kind in _COLUMNS}
    except (KeyError, ValueError, TypeError) as error:
        raise Unusable(f"the mirror file cannot be read: {error}") from error
    if len(ids) != rows or len(keys) != rows or len(offsets) != rows + 1:
        raise Unusable("the mirror file's sections disagree")
    return Columns(ids=ids, keys=keys, records=records, matrix=matrix, **columns)


def _plain_keys(keys: Keys) -> list[Any]:
    path = None if keys.path is None else list(keys.path.segments)
    return [list(keys.namespace), list(keys.tags), path, *keys[3:7], keys.global_]


def _keys(fields: Sequence[Any]) -> Keys:
    namespace, tags, path, agent, personality, project, kind, global_ = fields
    where = None if path is None else MemoryPath(tuple(path))
    return Keys(tuple(namespace), tuple(tags), where, agent, personality, project, kind, bool(global_))
