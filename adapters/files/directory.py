"""One store's directory: safe places, walking, reading and parsing its files (cached by version), batched writes.

A process's first full walk also uses the store's read cache (readcache.py): a file whose bytes it knows is
not parsed again.

Symbolic links are never followed: linked files and directories are not part of a store. Every write of a batch
is atomic (a temporary ``.<name>.tmp-…`` beside the target, fsync, rename) and its directory is fsynced before
any old file is removed, so a moved memory's new file is durable before the old one goes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import filelock
from attrs import define, evolve, field
from returns.result import Failure, Result, Success

from agent_memory.adapters.files.boundary import guarded
from agent_memory.adapters.files.file_records import Folder, Record, Stamp, raise_it, read_bytes, stamp_of
from agent_memory.adapters.files.format import to_domain_error
from agent_memory.adapters.files.frontmatter import parse_frontmatter
from agent_memory.adapters.files.layout import (
    UNFILED,
    Parts,
    bad_file,
    candidate_parts,
    check_found_parts,
    check_writable_parts,
    default_memory_id,
    invalid_path,
    is_memory_name,
    is_temp_name,
    location_path,
    relative_path,
)
from agent_memory.adapters.files.readcache import ReadCache, digest_of
from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.durable import fsync_directory, write_atomically
from agent_memory.adapters.shared.private import private_directory
from agent_memory.domain.errors import DomainError
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath

T = TypeVar("T")


@define
class StoreFiles:
    """The files of one store directory: safe locations, walking, reading and parsing."""

    name: str
    directory: Path
    lock: filelock.BaseFileLock
    cache: dict[Parts, Record] = field(factory=dict)  # parsed files by place, valid while their stamp is
    damaged: dict[Parts, str] = field(factory=dict)  # files the last walks could not read, with why
    # copies: a file holding the id of another (older) file, by place: (the id it holds, the older file's place)
    copies: dict[Parts, tuple[str, Parts]] = field(factory=dict)
    # newcomers: a file whose name normalises to the path of a memory file that has that path's own name (a
    # hand-placed `café.md` beside `cafe.md`), by place: (the path, the memory file's place, the path it is read at)
    newcomers: dict[Parts, tuple[MemoryPath, Parts, MemoryPath]] = field(factory=dict)
    on_disk: ReadCache | None = None  # the cache file, during the first full walk (the cold start) only
    walked: bool = False

    # --- the boundary

    def guard(self, doing: str, call: Callable[[], T]) -> Result[T, DomainError]:
        """`call()` as a Result, its errors said as failures to `doing` in this store."""
        return guarded(doing, self.directory, call)

    def locked(self, doing: str, step: Callable[[Batch], T]) -> Result[T, DomainError]:
        """`step` run on a new batch under the store's lock, as a Result."""

        def run() -> T:
            with self.lock:
                return step(Batch(self))

        return self.guard(doing, run)

    # --- locations

    def target(self, parts: Parts, *, make_folders: bool) -> Path:
        """The absolute place of a file to write (or, with make_folders False, to delete), refusing links and
        anything outside the store. Files are only written under names the layout builds; a file found by
        walking (a hand-named one that reindex moves) may be deleted whatever its name."""
        if make_folders:
            check_writable_parts(parts)
        else:
            check_found_parts(parts)
        current = self.directory
        for folder in parts[:-1]:
            current = current / folder
            if current.is_symlink():
                raise invalid_path(
                    f"Refusing to write through '{relative_path(parts)}': the folder '{folder}' is a symbolic link, "
                    "and memory files are only written inside the store's own directory.",
                    relative_path(parts),
                )
            if make_folders and not current.exists():
                private_directory(current)
        target = current / parts[-1]
        self._check_inside(target.parent, relative_path(parts))
        return target

    def _check_inside(self, folder: Path, relative: str) -> None:
        base = os.path.realpath(self.directory)
        real = os.path.realpath(folder)
        if real != base and not real.startswith(base + os.sep):
            raise invalid_path(f"Refusing to write '{relative}': it would lie outside store '{self.name}'.", relative)

    def readable(self, parts: Parts) -> Path | None:
        """The place of a file to read, or None when a folder on the way is a link (not part of the store)."""
        current = self.directory
        for folder in parts[:-1]:
            current = current / folder
            if current.is_symlink():
                return None
        return current / parts[-1]

    # --- walking

    def walk(self) -> Iterator[Folder]:
        """Every directory of the store, top first, without reserved folders or links."""
        for folder, subfolders, names in os.walk(self.directory, onerror=raise_it):
            parts = Path(folder).relative_to(self.directory).parts
            empty = not subfolders and not names
            subfolders[:] = sorted(s for s in subfolders if self._walkable(parts, s, folder))
            files = tuple(sorted(n for n in names if not os.path.islink(os.path.join(folder, n))))
            yield Folder(parts, empty, files)

    @staticmethod
    def _walkable(parts: Parts, name: str, folder: str) -> bool:
        if name.startswith(".") or os.path.islink(os.path.join(folder, name)):
            return False
        return not name.startswith("_") or (parts == () and name == UNFILED)

    def memory_files(self, select: Callable[[Parts], bool] | None = None) -> list[Parts]:
        found = [(*folder.parts, name) for folder in self.walk() for name in folder.files if is_memory_name(name)]
        return found if select is None else [parts for parts in found if select(parts)]

    # --- reading

    def read_text(self, parts: Parts) -> str | None:
        read = self.read_stamped(parts)
        return None if read is None else read[0]

    def read_stamped(self, parts: Parts) -> tuple[str, Stamp] | None:
        read = self._read(parts)
        return None if read is None else (read[0], read[1])

    def _read(self, parts: Parts) -> tuple[str, Stamp, bytes] | None:
        """The file's text, version and bytes."""
        place = self.readable(parts)
        read = None if place is None else read_bytes(place)
        if read is None:
            return None
        try:
            return read[0].decode("utf-8"), read[1], read[0]
        except UnicodeDecodeError as error:
            raise bad_file(
                relative_path(parts), self.name, "it is not UTF-8 text. Save it as UTF-8.", str(error)
            ) from None

    def parse(self, parts: Parts, text: str, stamp: Stamp | None = None, digest: str | None = None) -> Record:
        relative = relative_path(parts)
        path = location_path(parts, self.name)
        # a hand-written file without created_at/updated_at is as old as its last modification
        modified = None if stamp is None else datetime.fromtimestamp(stamp[2] / 1e9, UTC)
        parsed = parse_frontmatter(
            text, store=self.name, path=path, default_id=default_memory_id(self.name, relative), default_time=modified
        )
        match parsed:
            case Success(found):
                memory = found.memory if found.memory.path == path else evolve(found.memory, path=path)
                return Record(memory, dict(found.extra), parts, text, stamp, digest)
            case Failure(problem):
                error = to_domain_error(problem, relative)
                raise Abort(evolve(error, message=f"The file '{relative}' in store '{self.name}': {error.message}"))
        raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover

    def read_record(self, parts: Parts) -> Record | None:
        """The memory of a file, parsed again only when the file changed since it was last read here."""
        cached = self.cache.get(parts)
        if cached is not None:
            place = self.readable(parts)
            if place is not None and stamp_of(place) == cached.stamp:
                if self.on_disk is not None and cached.digest is not None and not cached.extra:
                    self.on_disk.note(relative_path(parts), cached.digest, cached.memory, cached.text)
                return cached
        read = self._read(parts)
        if read is None:
            self.cache.pop(parts, None)
            return None
        text, stamp, data = read
        digest = digest_of(data)
        record = None if self.on_disk is None else self._from_disk(parts, text, stamp, digest)
        if record is None:
            record = self.parse(parts, text, stamp, digest)
            if self.on_disk is not None and not record.extra:
                self.on_disk.note(relative_path(parts), digest, record.memory, text)
        self.cache[parts] = record
        return record

    def _from_disk(self, parts: Parts, text: str, stamp: Stamp, digest: str) -> Record | None:
        assert self.on_disk is not None  # for the type checker: only called while the cache file is in use
        memory = self.on_disk.memory(relative_path(parts), digest, text)
        return None if memory is None else Record(memory, {}, parts, text, stamp, digest)

    def remember(self, record: Record) -> None:
        self.cache[record.parts] = record

    def forget(self, parts: Parts) -> None:
        self.cache.pop(parts, None)

    def records(self, select: Callable[[Parts], bool] | None = None) -> dict[str, Record]:
        """The memory files (those whose place `select` accepts), by id.

        Two files with one id (a copied file) never fail the store: the older file keeps the id, the copy is read
        as a memory of its own, under an id made from its place (`copy_id`), and is listed in `copies` until
        `reindex` writes that id into it. A writer mid-move (it writes the new file before it deletes the old
        one) looks the same for a moment: the walk is then repeated once the writer is done.
        """
        first_walk = select is None and not self.walked
        if first_walk:
            self.on_disk = ReadCache.load(self.directory, self.name)
        try:
            found, copied = self._records_once(select)
            if copied:
                with self.lock:
                    found, copied = self._records_once(select)
            if first_walk and self.on_disk is not None:
                self.on_disk.save({relative_path(r.parts) for r in found.values()})
        finally:
            if first_walk:
                self.on_disk, self.walked = None, True
        if select is None:
            self._keep_cached({r.parts for r in found.values()})
        return found

    def _keep_cached(self, places: set[Parts]) -> None:
        for parts in [p for p in self.cache if p not in places]:
            self.cache.pop(parts, None)

    def _records_once(self, select: Callable[[Parts], bool] | None) -> tuple[dict[str, Record], bool]:
        """One walk, and whether it met a copy. A file that cannot be read as a memory is skipped and remembered in
        `damaged`: one bad hand edit (or a file this user may not read) never makes the whole store unreadable."""
        records: dict[str, Record] = {}
        copied = False
        if select is None:
            self.damaged.clear()
            self.copies.clear()
            self.newcomers.clear()
        for parts in self.memory_files(select):
            try:
                record = self.read_record(parts)
            except Abort as problem:
                self.damaged[parts] = problem.error.message
                continue
            except OSError as error:  # unreadable (permissions, I/O): reported, never failing the walk
                self.damaged[parts] = _unreadable(self.name, parts, error)
                continue
            self.damaged.pop(parts, None)
            if record is None:
                continue  # removed since the walk listed it
            known = self.copies.get(parts)
            if select is not None and known is not None and known[0] == record.memory.id:
                record = self._as_copy(record)  # a part of the store read alone: the copy as the last full walk saw it
            twin = records.get(record.memory.id)
            if twin is not None:
                copied = True
                keeper, copy = (twin, record) if _older(twin, record) else (record, twin)
                records[keeper.memory.id] = keeper
                self.copies[copy.parts] = (copy.memory.id, keeper.parts)
                record = self._as_copy(copy)
            records[record.memory.id] = record
        return self._newcomers_aside(records), copied

    def _newcomers_aside(self, records: dict[str, Record]) -> dict[str, Record]:
        """An acknowledged memory keeps its path against a hand-placed file however the file's name is normalised:
        where live memories of one namespace share a path and one file bears the path's own name (`cafe.md`, or
        `cafe.<id>.md`), each file that does not (`café.md`, NFC or NFD) is read at `<slug>-<id prefix>`, which
        `reindex` gives it, whatever its created_at (`status` names it). Where none or several bear the path's name,
        `reindex` settles them (domain.maintenance.one_memory_per_path: the oldest keeps it)."""
        sharing: dict[tuple[tuple[str, ...], MemoryPath], list[Record]] = {}
        for record in records.values():
            memory = record.memory
            if memory.path is not None and not memory.deleted:
                sharing.setdefault((memory.namespace, memory.path), []).append(record)
        for (_, path), group in sharing.items():
            if len(group) < 2:
                continue
            named = [record for record in group if record.parts in candidate_parts(record.memory.id, path)]
            if len(named) != 1:
                continue
            for record in group:
                if record is named[0]:
                    continue
                memory = record.memory
                aside = MemoryPath((*path.segments[:-1], f"{path.slug[:100]}-{memory.id[:8]}"))
                records[memory.id] = evolve(record, memory=evolve(memory, path=aside))
                self.newcomers[record.parts] = (path, named[0].parts, aside)
        return records

    def _as_copy(self, record: Record) -> Record:
        """A copied file's record under the id of its own place (see `copy_id`)."""
        return evolve(record, memory=evolve(record.memory, id=self.copy_id(record.parts, record.memory.id)))

    def copy_id(self, parts: Parts, held: str) -> str:
        """The id a copied file is read under, and which `reindex` writes into it: made from its place and the id
        it holds, so every process reads the same one."""
        return default_memory_id(self.name, f"{relative_path(parts)}#copy-of-{held}")

    def conflicts(self) -> list[str]:
        """The copies and newcomers the last full walk met, each saying what is read and what to run."""
        return [
            f"The file '{relative_path(parts)}' in store '{self.name}' holds memory {held}, like the older "
            f"'{relative_path(keeper)}': it is read as memory {self.copy_id(parts, held)}. Run `memory reindex` "
            "to write that id into it (or delete the copy)."
            for parts, (held, keeper) in sorted(self.copies.items())
        ] + [
            f"The file '{relative_path(parts)}' in store '{self.name}' names the path '{path}' of the memory file "
            f"'{relative_path(holder)}': it is read at '{aside}'. Run `memory reindex` to move it there (or rename "
            "it)."
            for parts, (path, holder, aside) in sorted(self.newcomers.items())
        ]


def _older(one: Record, other: Record) -> bool:
    """Whether `one` is the original of two files with one id: the earlier modified, else the first by place."""
    return ((one.stamp or (0, 0, 0))[2], one.parts) <= ((other.stamp or (0, 0, 0))[2], other.parts)


def _unreadable(store: str, parts: Parts, error: OSError) -> str:
    return (
        f"The file '{relative_path(parts)}' in store '{store}' cannot be read ({error.strerror or error}): give "
        "this user read access to it, or move it out of the store"
    )


@define
class Batch:
    """The writes of one locked operation: atomic files, directories synced before any old file is removed."""

    files: StoreFiles
    cleaned: set[Path] = field(factory=set)
    written: set[Path] = field(factory=set)  # directories that gained a file not yet synced
    touched: set[Path] = field(factory=set)  # directories that lost a file or folder not yet synced
    emptied: set[Parts] = field(factory=set)
    texts: dict[Memory, str] = field(factory=dict)  # files already serialized (without unknown keys) by a check

    def write(self, parts: Parts, text: str) -> Stamp | None:
        """Write a file atomically; its stamp once written."""
        target = self.files.target(parts, make_folders=True)
        self._clean(target.parent)
        self.files.forget(parts)
        write_atomically(target, text.encode("utf-8"))
        self.written.add(target.parent)
        return stamp_of(target)

    def delete(self, parts: Parts) -> None:
        target = self.files.target(parts, make_folders=False)
        self._sync(self.written)  # the new copy of a moved memory is durable before the old one goes
        self.files.forget(parts)
        target.unlink(missing_ok=True)
        self.touched.add(target.parent)
        self.emptied.add(parts[:-1])

    def forget_folder(self, parts: Parts) -> None:
        """Mark a folder for removal if it ends up empty."""
        self.emptied.add(parts)

    def finish(self) -> None:
        """Remove folders the batch left empty, then make every change durable."""
        for folder in sorted(self.emptied, key=len, reverse=True):
            self._prune(folder)
        self.emptied.clear()
        self._sync(self.written)
        self._sync(self.touched)

    @staticmethod
    def _sync(directories: set[Path]) -> None:
        for directory in sorted(directories):
            if directory.is_dir():
                fsync_directory(directory)
        directories.clear()

    def _clean(self, directory: Path) -> None:
        """Temporary files left by a writer that crashed (under the lock, any temporary file is stale)."""
        if directory in self.cleaned:
            return
        self.cleaned.add(directory)
        for entry in os.scandir(directory):
            if is_temp_name(entry.name) and entry.is_file(follow_symlinks=False):
                Path(entry.path).unlink(missing_ok=True)

    def _prune(self, folder: Parts) -> None:
        """Remove a folder and its parents while they are empty, never the store directory itself."""
        while folder:
            place = self.files.directory.joinpath(*folder)
            if place.is_symlink():
                return
            try:
                place.rmdir()
            except OSError:  # not empty, already gone or not ours to remove: tidying stops here
                return
            self.touched.add(place.parent)
            folder = folder[:-1]
