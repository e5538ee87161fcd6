"""A store's read cache: the memories of its files as last parsed, each trusted only for the exact bytes it came from.

A cold start parses every file's YAML block, most of the cost of reading a store. The cache (``<store>/.read-cache``,
written atomically after a full walk) keeps, for each file, a BLAKE2b digest of its bytes and the memory it held.
An entry is used only when the file read now has the same digest, so any edit (same size, same modification
time, in place or by rename) makes it a miss and the file is parsed as if there were no cache. What the cache
gives back is still built into a validated Memory; files with unknown keys, and files that cannot be parsed,
are never cached (they are parsed, and reported, every time). A cache that is missing, damaged (its own digest
line guards its body), of another format or another store is ignored and rewritten by the next full walk.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from attrs import define, field

from agent_memory.adapters.shared.durable import write_atomically
from agent_memory.adapters.shared.memory_fields import is_timestamp, memory_fields
from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath, memory_path

CACHE_FILE = ".read-cache"
FORMAT = 1  # bump when reading a file could give a different memory (the parser's rules changed)
_NOT_KEPT = frozenset({"content", "store"})  # the content is the file's tail; the store is where it lies
_FIELDS = tuple(a.name for _, a in memory_fields() if a.name not in _NOT_KEPT)
_TIMESTAMPS = frozenset(a.name for _, a in memory_fields() if is_timestamp(a))
_LISTS = frozenset(a.name for _, a in memory_fields() if a.type == tuple[str, ...])
_FLAGS = frozenset(a.name for _, a in memory_fields() if a.type is bool)

Entry = tuple[str, dict[str, Any]]  # the file's digest, and its memory's fields


class _Unusable(ValueError):
    """A cache entry that does not describe a valid memory: the file is parsed instead."""


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _encoded(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, MemoryPath):
        return str(value)
    if isinstance(value, DecayPolicy):
        return value.value
    return value


def encode(memory: Memory, text: str) -> dict[str, Any]:
    """The fields of a memory read from `text` (its content as the length of the text's tail)."""
    fields = {name: _encoded(getattr(memory, name)) for name in _FIELDS}
    fields["content_chars"] = len(memory.content)
    if not text.endswith(memory.content):  # the content is always the file's tail; anything else is not cached
        raise _Unusable("the content is not the end of the file")
    return fields


def _timestamp(value: object) -> object:
    return datetime.fromisoformat(value) if isinstance(value, str) else _unusable(value)


def _strings(value: object) -> object:
    return tuple(value) if isinstance(value, list) and all(isinstance(i, str) for i in value) else _unusable(value)


def _flag(value: object) -> object:
    return value if isinstance(value, bool) else _unusable(value)


def _path(value: object) -> object:
    return memory_path(value) if isinstance(value, str) else _unusable(value)


def _decay(value: object) -> object:
    return DecayPolicy(value) if isinstance(value, str) else _unusable(value)


def _unusable(value: object) -> object:
    raise _Unusable(repr(value))


_DECODERS: dict[str, Callable[[object], object]] = {
    **dict.fromkeys(_TIMESTAMPS, _timestamp),
    **dict.fromkeys(_LISTS, _strings),
    **dict.fromkeys(_FLAGS, _flag),
    "path": _path,
    "decay_policy": _decay,
}


def _decoded(name: str, value: object) -> object:
    """A field as JSON held it, as Memory takes it (text fields are checked by Memory's validators)."""
    decoder = _DECODERS.get(name)
    return value if value is None or decoder is None else decoder(value)


def decode(fields: Mapping[str, Any], text: str, store: str) -> Memory | None:
    """The validated memory an entry describes for `text`, or None when the entry cannot give one."""
    chars = fields.get("content_chars")
    if set(fields) != {*_FIELDS, "content_chars"} or not isinstance(chars, int) or not 0 < chars <= len(text):
        return None
    try:
        values: dict[str, Any] = {name: _decoded(name, fields[name]) for name in _FIELDS}
        return Memory(content=text[len(text) - chars :], store=store, **values)
    except (_Unusable, InvalidValue, ValueError, TypeError):
        return None


@define
class ReadCache:
    """The entries of one store's cache file, and the ones a walk found (written back when they differ)."""

    place: Path
    store: str
    entries: dict[str, Entry] = field(factory=dict)
    found: dict[str, Entry] = field(factory=dict)

    @classmethod
    def load(cls, directory: Path, store: str) -> ReadCache:
        cache = cls(directory / CACHE_FILE, store)
        try:
            raw = cache.place.read_bytes()
        except OSError:  # no cache yet, or not readable: every file is parsed
            return cache
        check, _, body = raw.partition(b"\n")
        if check.decode("ascii", "replace") != digest_of(body):
            return cache
        try:
            document = json.loads(body)
        except ValueError:
            return cache
        if isinstance(document, dict) and document.get("format") == FORMAT and document.get("store") == store:
            entries = document.get("entries")
            if isinstance(entries, dict):
                cache.entries = {
                    key: (entry[0], entry[1])
                    for key, entry in entries.items()
                    if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)
                }
        return cache

    def memory(self, key: str, digest: str, text: str) -> Memory | None:
        """The cached memory of the file `key` if its bytes are the ones cached, else None."""
        entry = self.entries.get(key)
        if entry is None or entry[0] != digest:
            return None
        memory = decode(entry[1], text, self.store)
        if memory is not None:
            self.found[key] = entry
        return memory

    def note(self, key: str, digest: str, memory: Memory, text: str) -> None:
        """Remember a file just parsed, for the next process."""
        try:
            self.found[key] = (digest, encode(memory, text))
        except _Unusable:
            return

    def save(self, keys: set[str]) -> None:
        """Write the entries of the files a full walk found (`keys`), if they changed. Best effort: a cache
        that cannot be written (a read-only store) only means the next start parses again."""
        kept = {key: entry for key, entry in self.found.items() if key in keys}
        self.found = {}
        if kept == self.entries:
            return
        body = json.dumps(
            {"format": FORMAT, "store": self.store, "entries": {k: list(v) for k, v in kept.items()}},
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")
        try:
            write_atomically(self.place, digest_of(body).encode("ascii") + b"\n" + body)
        except OSError:
            return
        self.entries = kept
