"""The files backend's VectorStore: one markdown file per memory is the record, an injected VectorStore the index.

Reading. The files are the truth: ``scan`` and ``count`` walk them, ``get`` and ``query`` read each memory's file
fresh (the index only says which memories and where to look). A file's store and path come from where it lies; a
file without ``id`` gets ``default_memory_id(store, relative path)``, which ``rebuild`` (``memory reindex``) writes
into it. Files at the store's top are memories without a path; folder and file names that are not slugs are read
as their slugs ("My Notes/Big Idea.md" is my-notes/big-idea).

Reindex. ``rebuild`` makes the files hold exactly the memories given, then rebuilds the index. A file that already
holds its memory is changed only to add a missing ``id:`` line (byte for byte otherwise) or, when it is not where
the layout puts it or records a stale ``path:``, rewritten at its place. After a ``scan`` by the same store
object, files changed since that scan are left alone.

Writing. Every write holds the store's lock (``<store>/.lock``), writes the file(s) first, then the index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path

from attrs import define, evolve, field, fields
from returns.result import Failure, Result, Success

from agent_memory.adapters.files.directory import Batch, StoreFiles
from agent_memory.adapters.files.file_records import Record, Stamp
from agent_memory.adapters.files.format import load_block, split_frontmatter, with_id
from agent_memory.adapters.files.frontmatter import serialize_frontmatter
from agent_memory.adapters.files.layout import (
    Parts,
    candidate_parts,
    canonical_parts,
    collision_parts,
    is_temp_name,
    location_path,
)
from agent_memory.adapters.shared.boundary import Abort, value_of
from agent_memory.adapters.shared.embeddings import count_mismatch
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from agent_memory.domain.ports import Vector, VectorStore


def _same_but_store(one: Memory, other: Memory) -> bool:
    """Equal in every field but `store`, which for a file is where it lies (compared without re-validating)."""
    return all(getattr(one, f.name) == getattr(other, f.name) for f in fields(Memory) if f.name != "store")


@define
class _Finder:
    """Where memories' files are: the index's path first, else (once per operation) a walk of every file."""

    files: StoreFiles
    hints: dict[str, MemoryPath | None]
    walk_for_unindexed: bool
    known: dict[str, Record | None] = field(factory=dict)
    everything: dict[str, Record] | None = None

    def find(self, memory_id: str) -> Record | None:
        if memory_id not in self.known:
            self.known[memory_id] = self._look(memory_id)
        return self.known[memory_id]

    def remember(self, record: Record) -> None:
        self.known[record.memory.id] = record

    def _look(self, memory_id: str) -> Record | None:
        indexed = memory_id in self.hints
        if indexed:
            for parts in candidate_parts(memory_id, self.hints[memory_id]):
                record = self.files.read_record(parts)
                if record is not None and record.memory.id == memory_id:
                    return record
        if not indexed and not self.walk_for_unindexed:
            return None
        if self.everything is None:
            self.everything = self.files.records()
        return self.everything.get(memory_id)


def _quietly(step: Callable[[], object]) -> None:
    """One step of an undo: done if it can be (an undo that fails leaves the rest to `memory reindex`)."""
    with suppress(OSError):
        step()


# --- the store --------------------------------------------------------------------------------


@define
class FilesVectorStore:
    """A VectorStore whose record is one markdown file per memory; `index` does the vector search."""

    files: StoreFiles
    index: VectorStore
    last_scan: dict[Parts, Stamp | None] | None = field(default=None, init=False, repr=False)
    last_scan_ids: frozenset[str] = field(default=frozenset(), init=False, repr=False)

    @property
    def name(self) -> str:
        return self.files.name

    @property
    def directory(self) -> Path:
        return self.files.directory

    # --- writes

    def add(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[None, DomainError]:
        mismatch = count_mismatch(memories, embeddings)
        if mismatch is not None:
            return Failure(mismatch)

        def add(batch: Batch) -> None:
            self._check_storable(batch, memories)
            finder = self._finder([m.id for m in memories], walk_for_unindexed=False)
            with self._undone_on_failure(batch, finder, memories):
                for memory in memories:
                    self._save(batch, finder, memory)
                batch.finish()
                value_of(self.index.add(memories, embeddings))

        return self.files.locked("add memories", add)

    def update_metadata(self, memories: Sequence[Memory]) -> Result[list[Memory], DomainError]:
        def update(batch: Batch) -> None:
            finder = self._finder([m.id for m in memories], walk_for_unindexed=True)
            missing = [m.id for m in memories if finder.find(m.id) is None]
            if missing:
                raise Abort(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
            self._check_storable(batch, memories)
            with self._undone_on_failure(batch, finder, memories):
                for memory in memories:
                    self._save(batch, finder, memory)
                batch.finish()
                indexed = [m for m in memories if m.id in finder.hints]  # hand-added files join the index on reindex
                if indexed:
                    value_of(self.index.update_metadata(indexed))

        return self.files.locked("update memories", update).map(lambda _: list(memories))

    def replace(self, memories: Sequence[Memory], embeddings: Sequence[Vector]) -> Result[list[Memory], DomainError]:
        mismatch = count_mismatch(memories, embeddings)
        if mismatch is not None:
            return Failure(mismatch)

        def replace(batch: Batch) -> None:
            self._check_storable(batch, memories)
            finder = self._finder([memory.id for memory in memories], walk_for_unindexed=True)
            with self._undone_on_failure(batch, finder, memories):
                for memory in memories:
                    self._save(batch, finder, memory)
                batch.finish()
                value_of(self.index.replace(memories, embeddings))

        return self.files.locked("replace a memory", replace).map(lambda _: list(memories))

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        def remove(batch: Batch) -> None:
            finder = self._finder(ids, walk_for_unindexed=True)
            for memory_id in ids:
                record = finder.find(memory_id)
                if record is not None:
                    batch.delete(record.parts)
            batch.finish()
            value_of(self.index.remove(ids))

        return self.files.locked("remove memories", remove)

    def rebuild(
        self, memories: Sequence[Memory], embeddings: Sequence[Vector], embedding_model: str
    ) -> Result[None, DomainError]:
        """Make the files hold exactly `memories`, then rebuild the index from them (reindex).

        Files that already hold their memory are only given an id (when they lack one) and their place in
        the layout, byte for byte otherwise. After a `scan` by this object, files that changed, appeared
        or vanished since that scan were touched by someone else meanwhile and are left as they are
        (a memory added during a reindex is kept, and indexed by the next one), never overwritten or
        deleted from a stale list.
        """
        mismatch = count_mismatch(memories, embeddings)
        if mismatch is not None:
            return Failure(mismatch)

        def rebuild(batch: Batch) -> None:
            self._clean_all_temporaries()
            self._replace_files(batch, memories)
            batch.finish()
            value_of(self.index.rebuild(memories, embeddings, embedding_model))

        return self.files.locked("reindex the store", rebuild)

    def _replace_files(self, batch: Batch, memories: Sequence[Memory]) -> None:
        """Plan every change first (so a memory that cannot be stored stops the rebuild before any write), then do it."""
        records = self.files.records()
        given = {m.id: m for m in memories}
        untouched = [r for r in records.values() if not self._changed_since_scan(r)]
        dropped = [r for r in untouched if r.memory.id not in given]
        same = {
            r.memory.id for r in untouched if r.memory.id in given and _same_but_store(given[r.memory.id], r.memory)
        }
        kept = [r for r in untouched if r.memory.id in same]
        rewritten = [(r, given[r.memory.id]) for r in untouched if r.memory.id in given and r.memory.id not in same]
        created = [m for memory_id, m in given.items() if memory_id not in records and not self._vanished(memory_id)]
        self._check_storable(batch, [m for _, m in rewritten] + created)
        for record in dropped:
            batch.delete(record.parts)
        known: dict[str, Record | None] = {r.memory.id: r for r in untouched if r.memory.id in given}
        finder = _Finder(self.files, {}, walk_for_unindexed=False, known=known)
        # soft-deleted memories first: they leave `<slug>.md` before any live memory is placed
        for record in [r for r in kept if r.memory.deleted]:
            self._settle(batch, finder, record)
        for memory in sorted([m for _, m in rewritten] + created, key=lambda m: not m.deleted):
            self._save(batch, finder, memory)
        for record in [r for r in kept if not r.memory.deleted]:
            self._settle(batch, finder, record)

    @contextmanager
    def _undone_on_failure(self, batch: Batch, finder: _Finder, memories: Sequence[Memory]) -> Iterator[None]:
        """A write that fails (a full disk: a file, or the index after the files) is undone before its error is
        answered: each memory's new file is removed and its old file, if any, put back byte for byte. So a write
        that answered an error did not take effect. Undoing frees space; a step of it that fails is skipped."""
        before = {m.id: finder.find(m.id) for m in memories}
        try:
            yield
        except (Abort, OSError):
            for memory_id, old in before.items():
                new = finder.known.get(memory_id)
                if new is old:
                    continue  # not written yet when the failure came
                if new is not None:
                    _quietly(partial(batch.delete, new.parts))
                if old is not None:
                    _quietly(partial(batch.write, old.parts, old.text))
                    self.files.forget(old.parts)
                finder.known[memory_id] = old
            _quietly(batch.finish)
            raise

    def _stored(self, memory: Memory) -> Memory:
        return memory if memory.store == self.files.name else evolve(memory, store=self.files.name)

    def _changed_since_scan(self, record: Record) -> bool:
        return self.last_scan is not None and self.last_scan.get(record.parts) != record.stamp

    def _vanished(self, memory_id: str) -> bool:
        return self.last_scan is not None and memory_id in self.last_scan_ids

    def _save(self, batch: Batch, finder: _Finder, memory: Memory) -> None:
        """Write a memory's file (keeping the unknown keys of its current file), then drop its old place."""
        current = finder.find(memory.id)
        parts = self._place(batch, finder, memory, None if current is None else current.parts)
        extra = {} if current is None else current.extra
        text = batch.texts.get(memory) if not extra else None
        text = serialize_frontmatter(memory, extra) if text is None else text
        record = Record(self._stored(memory), extra, parts, text, batch.write(parts, text))
        self.files.remember(record)
        if current is not None and current.parts != parts:
            batch.delete(current.parts)
        finder.remember(record)

    def _check_storable(self, batch: Batch, memories: Sequence[Memory]) -> None:
        """Refuse, before writing anything, a memory whose file could not be read back as the same memory."""
        for memory in memories:
            text = serialize_frontmatter(memory)
            self._check_readable(canonical_parts(memory.id, memory.path), text, memory)
            batch.texts[memory] = text

    def _check_readable(self, parts: Parts, text: str, memory: Memory) -> None:
        try:
            back = self.files.parse(parts, text).memory
        except Abort as abort:
            back, problem = None, abort.error.message.split(": ", 1)[-1]
        else:
            problem = "a field would read back differently"
        if back is None or not _same_but_store(back, memory):
            raise Abort(
                DomainError(
                    ErrorCode.INVALID_INPUT,
                    f"Memory {memory.id} cannot be stored as a file: {problem}",
                    path=memory.id,
                )
            )

    def _place(self, batch: Batch, finder: _Finder, memory: Memory, current: Parts | None) -> Parts:
        """Where a memory's file goes. A soft-deleted memory: `<slug>.<id>.md`, always. A live one: `<slug>.md`,
        moving a soft-deleted holder aside first; `<slug>.<id>.md` only when another live memory (or a file
        that cannot be read) holds `<slug>.md`. So the live memory at a path has the path's own file name."""
        candidates = candidate_parts(memory.id, memory.path)
        usual, aside = candidates[0], candidates[-1]
        if memory.deleted:
            return aside
        if current == usual:
            return usual
        try:
            holder = self.files.read_record(usual)
        except Abort:  # a file that cannot be read holds the place: it is never overwritten
            return aside
        if holder is None or holder.memory.id == memory.id:
            return usual
        if holder.memory.deleted:
            self._move_aside(batch, finder, holder)
            return usual
        return aside

    def _move_aside(self, batch: Batch, finder: _Finder, record: Record) -> None:
        """Rename a soft-deleted memory's file to `<slug>.<id>.md`, byte for byte, freeing `<slug>.md`."""
        path = record.memory.path
        assert path is not None  # for the type checker: only a file at a path's `<slug>.md` is moved aside
        aside = collision_parts(record.memory.id, path)
        moved = evolve(record, parts=aside, stamp=batch.write(aside, record.text))
        batch.delete(record.parts)
        self.files.remember(moved)
        finder.remember(moved)

    def _settle(self, batch: Batch, finder: _Finder, found: Record) -> None:
        """Give a file its id and its place in the layout (reindex), rewriting as little as possible."""
        record = finder.find(found.memory.id) or found  # where it is now: it may have been moved aside
        memory, parts = record.memory, record.parts
        place = self._place(batch, finder, memory, parts)
        block = split_frontmatter(record.text).bind(lambda split: load_block(split[0])).value_or({})
        recorded_path = block.get("path")
        stale_path = recorded_path is not None and recorded_path != (None if memory.path is None else str(memory.path))
        if place == parts and not stale_path:
            if block.get("id") is None:
                batch.write(parts, with_id(record.text, memory.id) or serialize_frontmatter(memory, record.extra))
            elif block.get("id") != memory.id:  # a copy of another file, read under an id of its own: write that id
                batch.write(parts, serialize_frontmatter(memory, record.extra))
            return
        batch.write(place, serialize_frontmatter(memory, record.extra))
        if place != parts:
            batch.delete(parts)

    def _clean_all_temporaries(self) -> None:
        for folder in self.files.walk():
            for name in folder.files:
                if is_temp_name(name):
                    self.files.directory.joinpath(*folder.parts, name).unlink(missing_ok=True)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        def get() -> list[Memory]:
            finder = self._finder(ids, walk_for_unindexed=True)
            return [record.memory for memory_id in ids if (record := finder.find(memory_id)) is not None]

        return self.files.guard("read memories", get)

    def passing(self, ids: Sequence[str], where: MemoryFilter) -> Result[set[str], DomainError]:
        """The ids the index says `where` keeps, each confirmed by its file (as `query` narrows by the index
        and reads the hits fresh): the files of the ids the index rejects are never read."""

        def passing() -> set[str]:
            indexed = value_of(self.index.passing(ids, where))
            narrowed = [i for i in dict.fromkeys(ids) if i in indexed]
            finder = self._finder(narrowed, walk_for_unindexed=False)
            return {i for i in narrowed if (record := finder.find(i)) is not None and where.matches(record.memory)}

        return self.files.guard("filter memories", passing) if ids else Success(set())

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """The index's best matches, each read fresh from its file; vanished or no longer matching ones are dropped."""

        def query() -> list[tuple[Memory, float]]:
            want = limit
            while True:
                hits = value_of(self.index.query(embedding, where, want))
                fresh = self._fresh(hits, where)
                if len(fresh) >= limit or len(hits) < want:
                    return fresh[:limit]
                want *= 2

        return self.files.guard("search memories", query)

    def _fresh(self, hits: list[tuple[Memory, float]], where: MemoryFilter) -> list[tuple[Memory, float]]:
        finder = _Finder(self.files, {m.id: m.path for m, _ in hits}, walk_for_unindexed=False)
        fresh = []
        for memory, similarity in hits:
            record = finder.find(memory.id)
            if record is not None and where.matches(record.memory):
                fresh.append((record.memory, similarity))
        return fresh

    def scan(self, where: MemoryFilter) -> Result[list[Memory], DomainError]:
        def scan() -> list[Memory]:
            narrowed = where.path is not None or where.path_prefix is not None
            records = self.files.records((lambda parts: self._may_match(parts, where)) if narrowed else None)
            if not narrowed:
                self.last_scan = {r.parts: r.stamp for r in records.values()}
                self.last_scan_ids = frozenset(records)
            return [r.memory for r in records.values() if where.matches(r.memory)]

        return self.files.guard("read the memory files", scan)

    def _may_match(self, parts: Parts, where: MemoryFilter) -> bool:
        """Whether a file's place allows the filter's path conditions (a memory's path is where its file lies)."""
        try:
            path = location_path(parts, self.files.name)
        except Abort:
            return True  # unreadable place: let parsing report it
        if where.path is not None and path != where.path:
            return False
        return where.path_prefix is None or (path is not None and where.path_prefix.contains(path))

    def count(self) -> Result[int, DomainError]:
        return self.files.guard("count the memory files", lambda: len(self.files.memory_files()))

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self.index.embedding_model()

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        """The files a full walk had to skip, each with what is wrong and how to fix it."""

        def walk() -> tuple[str, ...]:
            self.files.records()
            return tuple(
                f"{why} (skipped until fixed; then run `memory reindex`)"
                for _, why in sorted(self.files.damaged.items())
            )

        return self.files.guard("read the memory files", walk)

    def advisories(self) -> Result[tuple[str, ...], DomainError]:
        """Files read under a name of their own until `reindex` (copies, newcomers at a taken path), else a search
        index that does not hold every file (the files are the record: it finds nothing for the ones it lost)."""

        def walk() -> tuple[str, ...]:
            records = self.files.records()
            renamed = tuple(self.files.conflicts())
            indexed = value_of(self.index.count())
            if renamed or self.files.damaged or indexed == len(records):
                return renamed  # with files skipped or read under other names, the counts cannot agree yet
            return (f"The search index holds {indexed} of the {len(records)} memory files: run `memory reindex`.",)

        return self.files.guard("read the memory files", walk)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        return self.index.similarities(embedding, ids)

    # --- plumbing

    def _finder(self, ids: Sequence[str], *, walk_for_unindexed: bool) -> _Finder:
        indexed = value_of(self.index.get(list(ids))) if ids else []
        return _Finder(self.files, {m.id: m.path for m in indexed}, walk_for_unindexed)
