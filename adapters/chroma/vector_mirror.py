"""An in-process copy of one store's vectors and records that answers filtered searches exactly, in numpy.

Why: an embedded Chroma query pays for its `where` in proportion to the records the filter keeps (about
4 ms per 1,000 at 10k records on the development machine) and for every metadata key it returns; the
filters memory search always sends (not deleted, not expired, confidence floor) keep nearly everything.
A brute-force matrix product over 10k unit vectors takes under a millisecond. The mirror holds what the
store holds and answers `query`, `get` and `similarities` with the semantics of `MemoryFilter.matches`.

It knows nothing about where its contents come from: the owner (the Chroma store, by the rule of
adapters.chroma.mirror_policy) builds it from the collection or restores it from its file (adapters.chroma.mirror_file),
applies its own writes to it, and drops it whenever another process may have written. A restored mirror keeps each
record as the bytes of its file until a search or `get` returns it (`parse`): the filters need only each row's keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from attrs import define, field

from agent_memory.adapters.shared.record_time import NEVER_EXPIRES_US, micros
from agent_memory.adapters.shared.vector_math import row_dots, unit_rows
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import DecayPolicy, Memory
from agent_memory.domain.paths import MemoryPath

MAX_CACHED_MASKS = 256  # condition masks kept between searches (one per scope value, tag, prefix… asked for)

Condition = tuple[str, Any]  # (field, wanted value): one equality / prefix / tag test of a MemoryFilter


class Keys(NamedTuple):
    """The fields of a memory the mirror's condition masks test (named as Memory names them)."""

    namespace: tuple[str, ...]
    tags: tuple[str, ...]
    path: MemoryPath | None
    agent: str
    personality: str
    project: str
    type: str
    global_: bool

    @classmethod
    def of(cls, memory: Memory) -> Keys:
        return cls(
            memory.namespace,
            tuple(memory.tags),
            memory.path,
            memory.agent,
            memory.personality,
            memory.project,
            memory.type,
            memory.global_,
        )


@define(frozen=True)
class Columns:
    """A mirror's live rows as whole columns, in row order: what its file holds (adapters.chroma.mirror_file).

    `records` holds each row's Memory, or the bytes its file kept for it (parsed when it is first returned)."""

    ids: list[str]
    keys: list[Keys]
    records: list[Memory | bytes]
    matrix: np.ndarray  # float32 unit rows
    deleted: np.ndarray
    expires_us: np.ndarray
    anchor_us: np.ndarray
    stable: np.ndarray


def _test(condition: Condition) -> Callable[[Keys], bool]:
    """The predicate of one condition, exactly as MemoryFilter.matches applies it."""
    name, wanted = condition
    if name == "namespace":
        return lambda m: m.namespace[: len(wanted)] == wanted
    if name == "tag":
        return lambda m: wanted in m.tags
    if name == "path":
        return lambda m: m.path == wanted
    if name == "path_prefix":
        return lambda m: m.path is not None and wanted.contains(m.path)
    if name == "global_":
        return lambda m: m.global_ == wanted
    return lambda m: getattr(m, name) == wanted  # agent, personality, project, type


def _conditions(where: MemoryFilter) -> list[Condition]:
    found: list[Condition] = []
    if where.namespace is not None and where.namespace:
        found.append(("namespace", where.namespace))
    for name in ("agent", "personality", "project", "type", "global_"):
        wanted = getattr(where, name)
        if wanted is not None:
            found.append((name, wanted))
    found.extend(("tag", tag) for tag in dict.fromkeys(where.tags))
    if where.path is not None:
        found.append(("path", where.path))
    if where.path_prefix is not None:
        found.append(("path_prefix", where.path_prefix))
    return found


@define
class VectorMirror:
    """Rows of (id, unit vector, Memory) with per-row columns for the filters that change with time.

    Removed rows stay as dead rows until they outnumber the live ones; condition masks are computed on
    first use and kept up to date row by row as memories are written.
    """

    dimension: int
    parse: Callable[[str, bytes], Memory] | None = None  # a restored row's record from its file's bytes
    _ids: list[str | None] = field(factory=list)
    _rows: dict[str, int] = field(factory=dict)
    _memories: list[Memory | bytes | None] = field(factory=list)
    _keys: list[Keys | None] = field(factory=list)
    _matrix: np.ndarray = field(init=False)
    _live: np.ndarray = field(init=False)
    _deleted: np.ndarray = field(init=False)
    _expires_us: np.ndarray = field(init=False)
    _anchor_us: np.ndarray = field(init=False)
    _stable: np.ndarray = field(init=False)
    _masks: dict[Condition, np.ndarray] = field(factory=dict)

    def __attrs_post_init__(self) -> None:
        self._allocate(0)

    @classmethod
    def of(
        cls, dimension: int, memories: Sequence[Memory], vectors: Sequence[Sequence[float]] | np.ndarray
    ) -> VectorMirror:
        mirror = cls(dimension)
        mirror.upsert(memories, vectors)
        return mirror

    @classmethod
    def restored(cls, dimension: int, columns: Columns, parse: Callable[[str, bytes], Memory]) -> VectorMirror:
        """A mirror of these columns as they are (no row is parsed: `parse` reads a record when it is returned)."""
        mirror = cls(dimension, parse)
        mirror._install(columns)
        return mirror

    def columns(self) -> Columns:
        """The live rows as copies (the mirror may change afterwards: its owner applies writes in place)."""
        live = [row for row, memory_id in enumerate(self._ids) if memory_id is not None]
        records = [self._memories[row] for row in live]
        keys = [self._keys[row] for row in live]
        return Columns(
            ids=[self._ids[row] or "" for row in live],
            keys=[k for k in keys if k is not None],
            records=[r for r in records if r is not None],
            matrix=self._matrix[live].copy(),
            deleted=self._deleted[live].copy(),
            expires_us=self._expires_us[live].copy(),
            anchor_us=self._anchor_us[live].copy(),
            stable=self._stable[live].copy(),
        )

    # --- reads

    def __len__(self) -> int:
        return len(self._rows)

    def ids(self) -> list[str]:
        """The ids of its memories."""
        return list(self._rows)

    def holds(self, ids: Iterable[str]) -> set[str]:
        """Which of these ids it holds."""
        return {i for i in ids if i in self._rows}

    def get(self, ids: Iterable[str]) -> list[Memory]:
        """The memories with these ids, in the order asked, unknown ids left out."""
        found = (self._memory(row) for i in ids if (row := self._rows.get(i)) is not None)
        return [memory for memory in found if memory is not None]

    def passing(self, ids: Iterable[str], where: MemoryFilter) -> set[str]:
        """Which of these ids are rows `where` keeps (as `query` filters them), unknown ids left out."""
        rows = {i: row for i in ids if (row := self._rows.get(i)) is not None}
        if not rows:
            return set()
        keep = self._keep(where, len(self._ids))
        return {memory_id for memory_id, row in rows.items() if keep[row]}

    def similarities(self, embedding: Sequence[float], ids: Iterable[str]) -> dict[str, float]:
        rows = {i: row for i in ids if (row := self._rows.get(i)) is not None}
        if not rows:
            return {}
        scores = row_dots(self._matrix[list(rows.values())], unit_rows(embedding)[0])
        return {memory_id: float(score) for memory_id, score in zip(rows, scores, strict=True)}

    def query(self, embedding: Sequence[float], where: MemoryFilter, limit: int) -> list[tuple[Memory, float]]:
        """The `limit` memories most similar to `embedding` among those `where` keeps, best first (exact)."""
        size = len(self._ids)
        if limit < 1 or not self._rows:
            return []
        keep = self._keep(where, size)
        candidates = int(np.count_nonzero(keep))
        if candidates == 0:
            return []
        scores = row_dots(self._matrix[:size], unit_rows(embedding)[0])
        scores = np.where(keep, scores, -np.inf)
        take = min(limit, candidates)
        best = np.argpartition(-scores, take - 1)[:take] if take < size else np.arange(size)
        best = best[np.argsort(-scores[best], kind="stable")][:take]
        pairs: list[tuple[Memory, float]] = []
        for row in best.tolist():
            memory = self._memory(row)
            if memory is not None:
                pairs.append((memory, float(scores[row])))
        return pairs

    # --- writes

    def upsert(self, memories: Sequence[Memory], vectors: Sequence[Sequence[float]] | np.ndarray) -> None:
        """Add new memories at the end; a known id gets its new record and vector in place."""
        if not memories:
            return
        units = unit_rows(vectors)
        for memory, unit in zip(memories, units, strict=True):
            row = self._rows.get(memory.id)
            if row is None:
                row = self._append(memory.id)
            self._matrix[row] = unit
            self._set(row, memory)

    def update(self, memories: Sequence[Memory]) -> bool:
        """New records for known ids, vectors kept; False (nothing changed) when an id is unknown."""
        rows = [self._rows.get(memory.id) for memory in memories]
        if any(row is None for row in rows):
            return False
        for row, memory in zip(rows, memories, strict=True):
            assert row is not None
            self._set(row, memory)
        return True

    def remove(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            row = self._rows.pop(memory_id, None)
            if row is not None:
                self._ids[row] = None
                self._memories[row] = None
                self._keys[row] = None
                self._live[row] = False
        if len(self._ids) > 64 and len(self._rows) < len(self._ids) // 2:
            self._compact()

    # --- helpers

    def _memory(self, row: int) -> Memory | None:
        """The row's memory, parsed from its file's bytes the first time it is asked for."""
        record = self._memories[row]
        if isinstance(record, bytes):
            memory_id = self._ids[row]
            if self.parse is None or memory_id is None:
                return None
            record = self.parse(memory_id, record)
            self._memories[row] = record
        return record

    def _keep(self, where: MemoryFilter, size: int) -> np.ndarray:
        keep = self._live[:size].copy()
        for condition in _conditions(where):
            keep &= self._mask(condition)[:size]
        if not where.include_deleted:
            keep &= ~self._deleted[:size]
        if where.alive_at is not None:
            keep &= self._expires_us[:size] > micros(where.alive_at)
        if where.oldest_anchor is not None:
            keep &= self._stable[:size] | (self._anchor_us[:size] >= micros(where.oldest_anchor))
        return keep

    def _mask(self, condition: Condition) -> np.ndarray:
        mask = self._masks.get(condition)
        if mask is None:
            if len(self._masks) >= MAX_CACHED_MASKS:
                self._masks.clear()
            test = _test(condition)
            mask = np.zeros(len(self._live), dtype=bool)
            for row, keys in enumerate(self._keys):
                if keys is not None and test(keys):
                    mask[row] = True
            self._masks[condition] = mask
        return mask

    def _set(self, row: int, memory: Memory) -> None:
        keys = Keys.of(memory)
        self._memories[row] = memory
        self._keys[row] = keys
        self._live[row] = True
        self._deleted[row] = memory.deleted
        self._expires_us[row] = NEVER_EXPIRES_US if memory.expires_at is None else micros(memory.expires_at)
        self._anchor_us[row] = micros(memory.decay_anchor)
        self._stable[row] = memory.decay_policy is DecayPolicy.STABLE
        for condition, mask in self._masks.items():
            mask[row] = _test(condition)(keys)

    def _append(self, memory_id: str) -> int:
        row = len(self._ids)
        if row == len(self._live):
            self._grow(max(64, 2 * row))
        self._ids.append(memory_id)
        self._memories.append(None)
        self._keys.append(None)
        self._rows[memory_id] = row
        return row

    def _allocate(self, capacity: int) -> None:
        self._matrix = np.zeros((capacity, self.dimension), dtype=np.float32)
        self._live = np.zeros(capacity, dtype=bool)
        self._deleted = np.zeros(capacity, dtype=bool)
        self._expires_us = np.zeros(capacity, dtype=np.int64)
        self._anchor_us = np.zeros(capacity, dtype=np.int64)
        self._stable = np.zeros(capacity, dtype=bool)

    def _grow(self, capacity: int) -> None:
        old = (self._matrix, self._live, self._deleted, self._expires_us, self._anchor_us, self._stable)
        masks = self._masks
        self._allocate(capacity)
        for new, previous in zip(
            (self._matrix, self._live, self._deleted, self._expires_us, self._anchor_us, self._stable), old, strict=True
        ):
            new[: len(previous)] = previous
        for condition, mask in masks.items():
            grown = np.zeros(capacity, dtype=bool)
            grown[: len(mask)] = mask
            masks[condition] = grown

    def _compact(self) -> None:
        """Drop dead rows: the live ones again, in their order (a restored record stays unparsed)."""
        self._install(self.columns())

    def _install(self, columns: Columns) -> None:
        """Become exactly these rows (with room for as many again), condition masks dropped."""
        size = len(columns.ids)
        self._ids = list[str | None](columns.ids)
        self._rows = {memory_id: row for row, memory_id in enumerate(columns.ids)}
        self._memories = list[Memory | bytes | None](columns.records)
        self._keys = list[Keys | None](columns.keys)
        self._masks = {}
        self._allocate(max(64, size))
        self._matrix[:size] = columns.matrix
        self._live[:size] = True
        self._deleted[:size] = columns.deleted
        self._expires_us[:size] = columns.expires_us
        self._anchor_us[:size] = columns.anchor_us
        self._stable[:size] = columns.stable
