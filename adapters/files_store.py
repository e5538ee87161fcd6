"""The `files` backend: markdown files with YAML frontmatter are the record; an injected VectorStore indexes them.

Layout. A store is the directory ``<root>/<store>/``. A memory with a path lives at
``<store>/<category>/…/<slug>.md``; one without a path at ``<store>/_unfiled/<id>.md``. A soft-deleted
memory's file is ``<slug>.<id>.md`` (a live memory taking the path moves an older soft-deleted holder of
``<slug>.md`` there), so ``<slug>.md`` is always the live memory's. When another live memory already holds
``<slug>.md`` (only reachable below the use cases, which keep paths unique) the file is ``<slug>.<id>.md`` too. A category's description is ``<category dir>/_category.md`` with a
``description:`` key; an empty category directory is a category without a description. Names that
start with ``.`` (the ``.lock`` file, temporary files) or ``_`` are reserved and never read as memories.

Reading. The files are the truth: ``scan`` and ``count`` walk them, ``get`` and ``query`` read each
memory's file fresh (the index only says which memories and where to look). A file's store and path
come from where it lies; a file without ``id`` gets ``default_memory_id(store, relative path)``, which
``rebuild`` (``memory reindex``) writes into it. Symbolic links are never followed: linked files and
directories are not part of a store. Files at the store's top are memories without a path; folder and
file names that are not slugs are read as their slugs ("My Notes/Big Idea.md" is my-notes/big-idea).

Reindex. ``rebuild`` makes the files hold exactly the memories given, then rebuilds the index. A file
that already holds its memory is changed only to add a missing ``id:`` line (byte for byte otherwise)
or, when it is not where the layout puts it or records a stale ``path:``, rewritten at its place.
After a ``scan`` by the same store object, files changed since that scan are left alone.

Writing. Every write holds the store's lock (``<store>/.lock``), writes the file(s) first — each
atomically: a temporary ``.<name>.tmp-…`` in the same directory, fsync, rename, fsync the directory —
and then the index. A moved memory's new file is written (and synced) before the old one is removed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import filelock
import yaml
from attrs import define, evolve, field, frozen
from returns.result import Failure, Result, Success

from agent_memory.adapters.frontmatter import (
    load_block,
    parse_frontmatter,
    serialize_frontmatter,
    split_frontmatter,
    to_domain_error,
)
from agent_memory.adapters.shared.disk import disk_hint
from agent_memory.adapters.shared.durable import TEMP_MARKER, fsync_directory, write_atomically
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.filters import MemoryFilter
from agent_memory.domain.model import Memory, check_memory_id, check_store_name
from agent_memory.domain.paths import MAX_DEPTH, MAX_SEGMENT_LENGTH, CategoryPath, MemoryPath, normalise_segment
from agent_memory.domain.ports import StoreCatalog, Vector, VectorStore

T = TypeVar("T")

SUFFIX = ".md"
UNFILED = "_unfiled"
CATEGORY_FILE = "_category.md"
LOCK_FILE = ".lock"
LOCK_TIMEOUT_S = 30.0

_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_COLLISION_STEM = re.compile(rf"(?P<stem>.+)\.(?P<id>{_UUID})")
_WRITABLE_NAME = re.compile(rf"(?:{_SLUG.pattern}|{_UUID})(?:\.{_UUID})?\.md|{re.escape(CATEGORY_FILE)}")
_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")

Parts = tuple[str, ...]  # a file or directory inside a store, as names from the store directory down
Stamp = tuple[int, int, int]  # a file version as (inode, size, modification time in ns): a rename or an edit changes it


# --- public helpers ---------------------------------------------------------------------------


def default_memory_id(store: str, relative: str) -> str:
    """The id of a hand-written file without one, which `rebuild` (reindex) writes into it: a UUID4, like every
    memory id (decision 1), whose bits other than version and variant are a SHA-256 of '<store>/<path relative
    to the store>' rather than random, so that every process reads the same id before the reindex writes it."""
    digest = hashlib.sha256(f"{store}/{relative}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def memory_file(memory_id: str, path: MemoryPath | None) -> str:
    """Where a memory's file goes, relative to its store, when nothing else holds that place."""
    return "/".join(_canonical_parts(memory_id, path))


# --- the error boundary -----------------------------------------------------------------------


class _Abort(Exception):
    """A DomainError raised inside this module and turned back into a Failure at its public methods."""

    def __init__(self, error: DomainError) -> None:
        super().__init__(error.message)
        self.error = error


def _value(result: Result[T, DomainError]) -> T:
    """The value of a port call made inside a guarded step; its failure aborts the step."""
    match result:
        case Success(value):
            return value  # type: ignore[no-any-return]
        case Failure(error):
            raise _Abort(error)
    raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover


def _guarded(doing: str, where: Path, call: Callable[[], T]) -> Result[T, DomainError]:
    """Run one step of file work; OS errors become STORAGE_ERROR failures that say what to do."""
    try:
        return Success(call())
    except _Abort as abort:
        return Failure(abort.error)
    except InvalidValue as error:  # a value the domain's validators refuse, met while rebuilding a record
        return Failure(error.to_error())
    except filelock.Timeout as error:
        return Failure(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                f"Could not {doing}: another process has held the lock {where / LOCK_FILE} for more than "
                f"{LOCK_TIMEOUT_S:.0f} s. Retry; if no memory command is running, delete that lock file.",
                path=str(where),
                cause=str(error),
            )
        )
    except OSError as error:
        hint = disk_hint(error)
        return Failure(
            DomainError(
                ErrorCode.STORAGE_ERROR,
                f"Could not {doing} in {where}{hint}."
                if hint
                else f"Could not {doing} in {where}: "
                f"{error.strerror or error}. Check that the directory exists and is writable and that the disk has "
                "space, then retry (run `memory reindex` if the search index may have fallen behind the files).",
                path=error.filename if isinstance(error.filename, str) else str(where),
                cause=str(error),
            )
        )


def _invalid_path(message: str, path: str) -> _Abort:
    return _Abort(DomainError(ErrorCode.INVALID_PATH, message, path=path))


def _bad_file(relative: str, store: str, message: str, cause: str | None = None) -> _Abort:
    return _Abort(
        DomainError(
            ErrorCode.INVALID_INPUT,
            f"The file '{relative}' in store '{store}' cannot be read: {message}",
            path=relative,
            cause=cause,
        )
    )


# --- layout: store-relative locations ---------------------------------------------------------


def _checked_segments(segments: Sequence[str]) -> Parts:
    """Slug segments as they may appear on disk (defence in depth: MemoryPath validated them already)."""
    for segment in segments:
        if not isinstance(segment, str) or not _SLUG.fullmatch(segment) or len(segment) > MAX_SEGMENT_LENGTH:
            raise _invalid_path(
                f"Refusing to use {segment!r} as a file or folder name: path segments are slugs of a-z, 0-9 and '-'.",
                "/".join(str(s) for s in segments),
            )
    return tuple(segments)


def _checked_id(memory_id: str) -> str:
    try:
        canonical = check_memory_id(memory_id)
    except InvalidValue:
        canonical = None
    if canonical != memory_id:
        raise _invalid_path(
            f"Refusing to name a file after {memory_id!r}: it is not a canonical memory id.", str(memory_id)
        )
    return memory_id


def _canonical_parts(memory_id: str, path: MemoryPath | None) -> Parts:
    if path is None:
        return (UNFILED, f"{_checked_id(memory_id)}{SUFFIX}")
    segments = _checked_segments(path.segments)
    return (*segments[:-1], f"{segments[-1]}{SUFFIX}")


def _collision_parts(memory_id: str, path: MemoryPath) -> Parts:
    segments = _checked_segments(path.segments)
    return (*segments[:-1], f"{segments[-1]}.{_checked_id(memory_id)}{SUFFIX}")


def _candidate_parts(memory_id: str, path: MemoryPath | None) -> tuple[Parts, ...]:
    """Every place the layout may have put a memory's file, the usual one first."""
    if path is None:
        return (_canonical_parts(memory_id, path),)
    return (_canonical_parts(memory_id, path), _collision_parts(memory_id, path))


def _check_writable_parts(parts: Parts) -> None:
    """Only names this module builds may be written: slug folders (or _unfiled first) and known file names."""
    folders, name = parts[:-1], parts[-1]
    unfiled = folders[:1] == (UNFILED,)
    _checked_segments(folders[1:] if unfiled else folders)
    if not _WRITABLE_NAME.fullmatch(name):
        raise _invalid_path(f"Refusing to write a file named {name!r}.", "/".join(parts))


def _check_found_parts(parts: Parts) -> None:
    """A file found by walking the store may have any name, but never one that climbs or nests."""
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part or (os.altsep and os.altsep in part):
            relative = _relative(parts)
            raise _invalid_path(f"Refusing to touch {relative!r}: it is not a plain name inside the store.", relative)


def _relative(parts: Parts) -> str:
    return "/".join(parts)


def _is_memory_name(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.startswith((".", "_"))


def _is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def _normalised(names: Sequence[str], relative: str, store: str) -> tuple[str, ...]:
    segments = tuple(normalise_segment(name) for name in names)
    if len(segments) > MAX_DEPTH or any(not s or len(s) > MAX_SEGMENT_LENGTH for s in segments):
        raise _bad_file(
            relative,
            store,
            "its folders and name do not make a memory path (each must keep some letters or digits once "
            f"lowercased, at most {MAX_SEGMENT_LENGTH} characters, at most {MAX_DEPTH} levels). Rename it, "
            "e.g. to 'category/my-note.md', then run `memory reindex`.",
        )
    return segments


def _location_path(parts: Parts, store: str) -> MemoryPath | None:
    """The path a file's place gives it: none at the store's top or under _unfiled, else folders + name."""
    if len(parts) == 1 or parts[0] == UNFILED:
        return None
    stem = parts[-1][: -len(SUFFIX)]
    collision = _COLLISION_STEM.fullmatch(stem)
    if collision is not None:
        stem = collision["stem"]
    return MemoryPath(_normalised((*parts[:-1], stem), _relative(parts), store))


# --- files on disk ----------------------------------------------------------------------------


def _raise(error: OSError) -> None:
    raise error


def _read_bytes(path: Path) -> tuple[bytes, Stamp] | None:
    """The file's bytes and version, without following a symbolic link; None when there is no such file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic link: not part of the store
            return None
        raise
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())  # before reading: an edit during the read makes the stamp stale, not wrong
        return handle.read(), (status.st_ino, status.st_size, status.st_mtime_ns)


def _stamp(place: Path) -> Stamp | None:
    try:
        status = place.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


@frozen
class _Record:
    """One memory file as read: the memory, its unknown keys, where it lies, and its text."""

    memory: Memory
    extra: Mapping[str, object]
    parts: Parts
    text: str
    stamp: Stamp | None = None


@frozen
class _Folder:
    """One directory of a walk: where it is, whether it was empty, and its regular files."""

    parts: Parts
    empty: bool
    files: tuple[str, ...]


@define
class _StoreFiles:
    """The files of one store directory: safe locations, walking, reading and parsing."""

    name: str
    directory: Path
    lock: filelock.BaseFileLock
    cache: dict[Parts, _Record] = field(factory=dict)  # parsed files by place, valid while their stamp is
    damaged: dict[Parts, str] = field(factory=dict)  # files the last walks could not read, with why

    # --- locations

    def target(self, parts: Parts, *, make_folders: bool) -> Path:
        """The absolute place of a file to write (or, with make_folders False, to delete), refusing links and
        anything outside the store. Files are only written under names this module builds; a file found by
        walking (a hand-named one that reindex moves) may be deleted whatever its name."""
        if make_folders:
            _check_writable_parts(parts)
        else:
            _check_found_parts(parts)
        current = self.directory
        for folder in parts[:-1]:
            current = current / folder
            if current.is_symlink():
                raise _invalid_path(
                    f"Refusing to write through '{_relative(parts)}': the folder '{folder}' is a symbolic link, "
                    "and memory files are only written inside the store's own directory.",
                    _relative(parts),
                )
            if make_folders and not current.exists():
                current.mkdir(exist_ok=True)
        target = current / parts[-1]
        self._check_inside(target.parent, _relative(parts))
        return target

    def _check_inside(self, folder: Path, relative: str) -> None:
        base = os.path.realpath(self.directory)
        real = os.path.realpath(folder)
        if real != base and not real.startswith(base + os.sep):
            raise _invalid_path(f"Refusing to write '{relative}': it would lie outside store '{self.name}'.", relative)

    def readable(self, parts: Parts) -> Path | None:
        """The place of a file to read, or None when a folder on the way is a link (not part of the store)."""
        current = self.directory
        for folder in parts[:-1]:
            current = current / folder
            if current.is_symlink():
                return None
        return current / parts[-1]

    # --- walking

    def walk(self) -> Iterator[_Folder]:
        """Every directory of the store, top first, without reserved folders or links."""
        for folder, subfolders, names in os.walk(self.directory, onerror=_raise):
            parts = Path(folder).relative_to(self.directory).parts
            empty = not subfolders and not names
            subfolders[:] = sorted(s for s in subfolders if self._walkable(parts, s, folder))
            files = tuple(sorted(n for n in names if not os.path.islink(os.path.join(folder, n))))
            yield _Folder(parts, empty, files)

    @staticmethod
    def _walkable(parts: Parts, name: str, folder: str) -> bool:
        if name.startswith(".") or os.path.islink(os.path.join(folder, name)):
            return False
        return not name.startswith("_") or (parts == () and name == UNFILED)

    def memory_files(self, select: Callable[[Parts], bool] | None = None) -> list[Parts]:
        found = [(*folder.parts, name) for folder in self.walk() for name in folder.files if _is_memory_name(name)]
        return found if select is None else [parts for parts in found if select(parts)]

    # --- reading

    def read_text(self, parts: Parts) -> str | None:
        read = self.read_stamped(parts)
        return None if read is None else read[0]

    def read_stamped(self, parts: Parts) -> tuple[str, Stamp] | None:
        place = self.readable(parts)
        read = None if place is None else _read_bytes(place)
        if read is None:
            return None
        try:
            return read[0].decode("utf-8"), read[1]
        except UnicodeDecodeError as error:
            raise _bad_file(
                _relative(parts), self.name, "it is not UTF-8 text. Save it as UTF-8.", str(error)
            ) from None

    def parse(self, parts: Parts, text: str, stamp: Stamp | None = None) -> _Record:
        relative = _relative(parts)
        path = _location_path(parts, self.name)
        parsed = parse_frontmatter(text, store=self.name, path=path, default_id=default_memory_id(self.name, relative))
        match parsed:
            case Success(found):
                memory = found.memory if found.memory.path == path else evolve(found.memory, path=path)
                return _Record(memory, dict(found.extra), parts, text, stamp)
            case Failure(problem):
                error = to_domain_error(problem, relative)
                raise _Abort(evolve(error, message=f"The file '{relative}' in store '{self.name}': {error.message}"))
        raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover

    def read_record(self, parts: Parts) -> _Record | None:
        """The memory of a file, parsed again only when the file changed since it was last read here."""
        cached = self.cache.get(parts)
        place = self.readable(parts)
        if cached is not None and place is not None and _stamp(place) == cached.stamp:
            return cached
        read = self.read_stamped(parts)
        if read is None:
            self.cache.pop(parts, None)
            return None
        record = self.parse(parts, *read)
        self.cache[parts] = record
        return record

    def remember(self, record: _Record) -> None:
        self.cache[record.parts] = record

    def forget(self, parts: Parts) -> None:
        self.cache.pop(parts, None)

    def records(self, select: Callable[[Parts], bool] | None = None) -> dict[str, _Record]:
        """The memory files (those whose place `select` accepts), by id.

        Two files with one id are an error, unless a writer was mid-move (it writes the new file before it
        deletes the old one): then the walk is repeated once the writer is done.
        """
        found = self._records_once(select)
        if isinstance(found, _Abort):
            with self.lock:
                found = self._records_once(select)
        if isinstance(found, _Abort):
            raise found
        if select is None:
            self._keep_cached({r.parts for r in found.values()})
        return found

    def _keep_cached(self, places: set[Parts]) -> None:
        for parts in [p for p in self.cache if p not in places]:
            self.cache.pop(parts, None)

    def _records_once(self, select: Callable[[Parts], bool] | None) -> dict[str, _Record] | _Abort:
        """One walk. A file that cannot be read as a memory is skipped and remembered in `damaged`: one bad
        hand edit never makes the whole store unreadable."""
        records: dict[str, _Record] = {}
        if select is None:
            self.damaged.clear()
        for parts in self.memory_files(select):
            try:
                record = self.read_record(parts)
            except _Abort as problem:
                self.damaged[parts] = problem.error.message
                continue
            self.damaged.pop(parts, None)
            if record is None:
                continue  # removed since the walk listed it
            twin = records.get(record.memory.id)
            if twin is not None:
                return self._duplicate(twin.parts, parts, record.memory.id)
            records[record.memory.id] = record
        return records

    def _duplicate(self, first: Parts, second: Parts, memory_id: str) -> _Abort:
        return _bad_file(
            _relative(second),
            self.name,
            f"it holds memory {memory_id}, like '{_relative(first)}'. Delete the stale copy (or remove the `id:` "
            "line of one to make it a separate memory), then run `memory reindex`.",
        )


@define
class _Batch:
    """The writes of one locked operation: atomic files, directories synced before any old file is removed."""

    files: _StoreFiles
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
        return _stamp(target)

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
            if _is_temp_name(entry.name) and entry.is_file(follow_symlinks=False):
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


def _same_but_store(one: Memory, other: Memory) -> bool:
    """Equal in every field but `store`, which for a file is where it lies (compared without re-validating)."""
    return all(getattr(one, f.name) == getattr(other, f.name) for f in attrs.fields(Memory) if f.name != "store")


def _with_id(text: str, memory_id: str) -> str | None:
    """The file with an `id:` line added right after its opening '---', everything else byte for byte."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    end = body.find("\n")
    if end == -1:
        return None
    newline = "\r\n" if body[:end].endswith("\r") else "\n"
    candidate = f"{bom}{body[: end + 1]}id: {memory_id}{newline}{body[end + 1 :]}"
    block = split_frontmatter(candidate).bind(lambda parts: load_block(parts[0]))
    match block:
        case Success(data) if data.get("id") == memory_id:
            return candidate
    return None


# --- the finder -------------------------------------------------------------------------------


@define
class _Finder:
    """Where memories' files are: the index's path first, else (once per operation) a walk of every file."""

    files: _StoreFiles
    hints: dict[str, MemoryPath | None]
    walk_for_unindexed: bool
    known: dict[str, _Record | None] = field(factory=dict)
    everything: dict[str, _Record] | None = None

    def find(self, memory_id: str) -> _Record | None:
        if memory_id not in self.known:
            self.known[memory_id] = self._look(memory_id)
        return self.known[memory_id]

    def remember(self, record: _Record) -> None:
        self.known[record.memory.id] = record

    def _look(self, memory_id: str) -> _Record | None:
        indexed = memory_id in self.hints
        if indexed:
            for parts in _candidate_parts(memory_id, self.hints[memory_id]):
                record = self.files.read_record(parts)
                if record is not None and record.memory.id == memory_id:
                    return record
        if not indexed and not self.walk_for_unindexed:
            return None
        if self.everything is None:
            self.everything = self.files.records()
        return self.everything.get(memory_id)


# --- the store --------------------------------------------------------------------------------


@define
class FilesVectorStore:
    """A VectorStore whose record is one markdown file per memory; `index` does the vector search."""

    files: _StoreFiles
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
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))

        def add(batch: _Batch) -> None:
            self._check_storable(batch, memories)
            finder = self._finder([m.id for m in memories], walk_for_unindexed=False)
            for memory in memories:
                self._save(batch, finder, memory)
            batch.finish()
            _value(self.index.add(memories, embeddings))

        return self._locked("add memories", add)

    def update_metadata(self, memories: Sequence[Memory]) -> Result[None, DomainError]:
        def update(batch: _Batch) -> None:
            finder = self._finder([m.id for m in memories], walk_for_unindexed=True)
            missing = [m.id for m in memories if finder.find(m.id) is None]
            if missing:
                raise _Abort(DomainError(ErrorCode.MEMORY_NOT_FOUND, "Memory not found", path=missing[0]))
            self._check_storable(batch, memories)
            for memory in memories:
                self._save(batch, finder, memory)
            batch.finish()
            indexed = [m for m in memories if m.id in finder.hints]  # hand-added files join the index on reindex
            if indexed:
                _value(self.index.update_metadata(indexed))

        return self._locked("update memories", update)

    def replace(self, memory: Memory, embedding: Vector) -> Result[None, DomainError]:
        def replace(batch: _Batch) -> None:
            self._check_storable(batch, [memory])
            self._save(batch, self._finder([memory.id], walk_for_unindexed=True), memory)
            batch.finish()
            _value(self.index.replace(memory, embedding))

        return self._locked("replace a memory", replace)

    def remove(self, ids: Sequence[str]) -> Result[None, DomainError]:
        def remove(batch: _Batch) -> None:
            finder = self._finder(ids, walk_for_unindexed=True)
            for memory_id in ids:
                record = finder.find(memory_id)
                if record is not None:
                    batch.delete(record.parts)
            batch.finish()
            _value(self.index.remove(ids))

        return self._locked("remove memories", remove)

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
        if len(memories) != len(embeddings):
            return Failure(DomainError(ErrorCode.STORAGE_ERROR, "memories and embeddings differ in number"))

        def rebuild(batch: _Batch) -> None:
            self._clean_all_temporaries()
            self._replace_files(batch, memories)
            batch.finish()
            _value(self.index.rebuild(memories, embeddings, embedding_model))

        return self._locked("reindex the store", rebuild)

    def _replace_files(self, batch: _Batch, memories: Sequence[Memory]) -> None:
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
        known: dict[str, _Record | None] = {r.memory.id: r for r in untouched if r.memory.id in given}
        finder = _Finder(self.files, {}, walk_for_unindexed=False, known=known)
        # soft-deleted memories first: they leave `<slug>.md` before any live memory is placed
        for record in [r for r in kept if r.memory.deleted]:
            self._settle(batch, finder, record)
        for memory in sorted([m for _, m in rewritten] + created, key=lambda m: not m.deleted):
            self._save(batch, finder, memory)
        for record in [r for r in kept if not r.memory.deleted]:
            self._settle(batch, finder, record)

    def _stored(self, memory: Memory) -> Memory:
        return memory if memory.store == self.files.name else evolve(memory, store=self.files.name)

    def _changed_since_scan(self, record: _Record) -> bool:
        return self.last_scan is not None and self.last_scan.get(record.parts) != record.stamp

    def _vanished(self, memory_id: str) -> bool:
        return self.last_scan is not None and memory_id in self.last_scan_ids

    def _save(self, batch: _Batch, finder: _Finder, memory: Memory) -> None:
        """Write a memory's file (keeping the unknown keys of its current file), then drop its old place."""
        current = finder.find(memory.id)
        parts = self._place(batch, finder, memory, None if current is None else current.parts)
        extra = {} if current is None else current.extra
        text = batch.texts.get(memory) if not extra else None
        text = serialize_frontmatter(memory, extra) if text is None else text
        record = _Record(self._stored(memory), extra, parts, text, batch.write(parts, text))
        self.files.remember(record)
        if current is not None and current.parts != parts:
            batch.delete(current.parts)
        finder.remember(record)

    def _check_storable(self, batch: _Batch, memories: Sequence[Memory]) -> None:
        """Refuse, before writing anything, a memory whose file could not be read back as the same memory."""
        for memory in memories:
            text = serialize_frontmatter(memory)
            self._check_readable(_canonical_parts(memory.id, memory.path), text, memory)
            batch.texts[memory] = text

    def _check_readable(self, parts: Parts, text: str, memory: Memory) -> None:
        try:
            back = self.files.parse(parts, text).memory
        except _Abort as abort:
            back, problem = None, abort.error.message.split(": ", 1)[-1]
        else:
            problem = "a field would read back differently"
        if back is None or not _same_but_store(back, memory):
            raise _Abort(
                DomainError(
                    ErrorCode.INVALID_INPUT,
                    f"Memory {memory.id} cannot be stored as a file: {problem}",
                    path=memory.id,
                )
            )

    def _place(self, batch: _Batch, finder: _Finder, memory: Memory, current: Parts | None) -> Parts:
        """Where a memory's file goes. A soft-deleted memory: `<slug>.<id>.md`, always. A live one: `<slug>.md`,
        moving a soft-deleted holder aside first; `<slug>.<id>.md` only when another live memory (or a file
        that cannot be read) holds `<slug>.md`. So the live memory at a path has the path's own file name."""
        candidates = _candidate_parts(memory.id, memory.path)
        usual, aside = candidates[0], candidates[-1]
        if memory.deleted:
            return aside
        if current == usual:
            return usual
        try:
            holder = self.files.read_record(usual)
        except _Abort:  # a file that cannot be read holds the place: it is never overwritten
            return aside
        if holder is None or holder.memory.id == memory.id:
            return usual
        if holder.memory.deleted:
            self._move_aside(batch, finder, holder)
            return usual
        return aside

    def _move_aside(self, batch: _Batch, finder: _Finder, record: _Record) -> None:
        """Rename a soft-deleted memory's file to `<slug>.<id>.md`, byte for byte, freeing `<slug>.md`."""
        path = record.memory.path
        assert path is not None  # for the type checker: only a file at a path's `<slug>.md` is moved aside
        aside = _collision_parts(record.memory.id, path)
        moved = evolve(record, parts=aside, stamp=batch.write(aside, record.text))
        batch.delete(record.parts)
        self.files.remember(moved)
        finder.remember(moved)

    def _settle(self, batch: _Batch, finder: _Finder, found: _Record) -> None:
        """Give a file its id and its place in the layout (reindex), rewriting as little as possible."""
        record = finder.find(found.memory.id) or found  # where it is now: it may have been moved aside
        memory, parts = record.memory, record.parts
        place = self._place(batch, finder, memory, parts)
        block = split_frontmatter(record.text).bind(lambda split: load_block(split[0])).value_or({})
        recorded_path = block.get("path")
        stale_path = recorded_path is not None and recorded_path != (None if memory.path is None else str(memory.path))
        if place == parts and not stale_path:
            if block.get("id") is None:
                batch.write(parts, _with_id(record.text, memory.id) or serialize_frontmatter(memory, record.extra))
            return
        batch.write(place, serialize_frontmatter(memory, record.extra))
        if place != parts:
            batch.delete(parts)

    def _clean_all_temporaries(self) -> None:
        for folder in self.files.walk():
            for name in folder.files:
                if _is_temp_name(name):
                    self.files.directory.joinpath(*folder.parts, name).unlink(missing_ok=True)

    # --- reads

    def get(self, ids: Sequence[str]) -> Result[list[Memory], DomainError]:
        def get() -> list[Memory]:
            finder = self._finder(ids, walk_for_unindexed=True)
            return [record.memory for memory_id in ids if (record := finder.find(memory_id)) is not None]

        return self._guard("read memories", get)

    def query(
        self, embedding: Vector, where: MemoryFilter, limit: int
    ) -> Result[list[tuple[Memory, float]], DomainError]:
        """The index's best matches, each read fresh from its file; vanished or no longer matching ones are dropped."""

        def query() -> list[tuple[Memory, float]]:
            want = limit
            while True:
                hits = _value(self.index.query(embedding, where, want))
                fresh = self._fresh(hits, where)
                if len(fresh) >= limit or len(hits) < want:
                    return fresh[:limit]
                want *= 2

        return self._guard("search memories", query)

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

        return self._guard("read the memory files", scan)

    def _may_match(self, parts: Parts, where: MemoryFilter) -> bool:
        """Whether a file's place allows the filter's path conditions (a memory's path is where its file lies)."""
        try:
            path = _location_path(parts, self.files.name)
        except _Abort:
            return True  # unreadable place: let parsing report it
        if where.path is not None and path != where.path:
            return False
        return where.path_prefix is None or (path is not None and where.path_prefix.contains(path))

    def count(self) -> Result[int, DomainError]:
        return self._guard("count the memory files", lambda: len(self.files.memory_files()))

    def embedding_model(self) -> Result[str | None, DomainError]:
        return self.index.embedding_model()

    def problems(self) -> Result[tuple[str, ...], DomainError]:
        """The files a full walk had to skip (each with what is wrong and how to fix it), or else an index
        that does not hold every file."""

        def walk() -> tuple[str, ...]:
            records = self.files.records()
            skipped = tuple(
                f"{why} (skipped until fixed; then run `memory reindex`)"
                for _, why in sorted(self.files.damaged.items())
            )
            indexed = _value(self.index.count())
            if skipped or indexed == len(records):
                return skipped
            # the files are the record; an index that lost some (or was deleted) finds nothing for them
            return (f"The search index holds {indexed} of the {len(records)} memory files: run `memory reindex`.",)

        return self._guard("read the memory files", walk)

    def similarities(self, embedding: Vector, ids: Sequence[str]) -> Result[dict[str, float], DomainError]:
        return self.index.similarities(embedding, ids)

    # --- plumbing

    def _finder(self, ids: Sequence[str], *, walk_for_unindexed: bool) -> _Finder:
        indexed = _value(self.index.get(list(ids))) if ids else []
        return _Finder(self.files, {m.id: m.path for m in indexed}, walk_for_unindexed)

    def _guard(self, doing: str, call: Callable[[], T]) -> Result[T, DomainError]:
        return _guarded(doing, self.files.directory, call)

    def _locked(self, doing: str, step: Callable[[_Batch], T]) -> Result[T, DomainError]:
        def run() -> T:
            with self.files.lock:
                return step(_Batch(self.files))

        return self._guard(doing, run)


# --- categories -------------------------------------------------------------------------------


class _BlockDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no type stubs
    """SafeDumper writing multi-line strings double-quoted, so no line of the block is a bare '---'."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = '"' if any(brk in value for brk in _LINE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _represent_str)


def _category_text(data: Mapping[str, object], body: str) -> str:
    block = yaml.dump(
        dict(data), Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=2**31 - 1
    )
    return f"---\n{block}---\n{body}"


@define
class FilesCategories:
    """A CategoryRegistry of `_category.md` files (`description: …`); empty category folders count too."""

    files: _StoreFiles

    def describe_all(self) -> Result[Mapping[str, str], DomainError]:
        def describe() -> dict[str, str]:
            described: dict[str, str] = {}
            for folder in self.files.walk():
                if not folder.parts or folder.parts[0] == UNFILED:
                    continue
                if CATEGORY_FILE in folder.files or folder.empty:
                    key = "/".join(_normalised(folder.parts, _relative(folder.parts), self.files.name))
                    text = described.get(key) or self._description(folder.parts)
                    described[key] = text
            return described

        return _guarded("read the category descriptions", self.files.directory, describe)

    def put(self, category: CategoryPath, description: str) -> Result[None, DomainError]:
        def put(batch: _Batch) -> None:
            parts = (*_checked_segments(category.segments), CATEGORY_FILE)
            data, body = self._read(parts)
            others = {key: value for key, value in data.items() if key != "description"}
            batch.write(parts, _category_text({"description": description, **others}, body))
            batch.finish()

        return self._locked("describe a category", put)

    def remove(self, categories: Sequence[CategoryPath]) -> Result[None, DomainError]:
        def remove(batch: _Batch) -> None:
            for category in categories:
                folder = _checked_segments(category.segments)
                batch.delete((*folder, CATEGORY_FILE))
                batch.forget_folder(folder)
            batch.finish()

        return self._locked("remove categories", remove)

    def _description(self, folder: Parts) -> str:
        data, _ = self._read((*folder, CATEGORY_FILE))
        description = data.get("description")
        if description is None:
            return ""
        if not isinstance(description, str):
            raise _bad_file(
                _relative((*folder, CATEGORY_FILE)),
                self.files.name,
                f"`description` is a {type(description).__name__}: write it as text, like `description: Notes on X`.",
            )
        return description

    def _read(self, parts: Parts) -> tuple[dict[str, object], str]:
        """A category file's keys and the text after its block ({} and '' when there is no file)."""
        text = self.files.read_text(parts)
        if text is None:
            return {}, ""
        split = split_frontmatter(text)
        loaded = split.bind(lambda pieces: load_block(pieces[0]).map(lambda data: (data, pieces[1])))
        match loaded:
            case Success((data, body)):
                return dict(data), body
            case Failure(problem):
                error = to_domain_error(problem, _relative(parts))
                raise _bad_file(_relative(parts), self.files.name, error.message, error.cause)
        raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover

    def _locked(self, doing: str, step: Callable[[_Batch], None]) -> Result[None, DomainError]:
        def run() -> None:
            with self.files.lock:
                step(_Batch(self.files))

        return _guarded(doing, self.files.directory, run)


# --- the catalog ------------------------------------------------------------------------------


@frozen(kw_only=True)
class FilesCatalog:
    """The stores under `root`, one directory each; `index` supplies each store's search index (same name)."""

    root: Path = field(converter=Path)
    index: StoreCatalog
    _parsed: dict[str, dict[Parts, _Record]] = field(factory=dict, init=False, repr=False, eq=False)

    @property
    def backend(self) -> str:
        return "files"

    def open(self, name: str, *, create: bool) -> Result[FilesVectorStore, DomainError]:
        return self._store_files(name, create=create).bind(
            lambda files: self.index.open(name, create=True).map(lambda index: FilesVectorStore(files, index))
        )

    def categories(self, name: str) -> Result[FilesCategories, DomainError]:
        return self._store_files(name, create=False).map(FilesCategories)

    def names(self) -> Result[list[str], DomainError]:
        def names() -> list[str]:
            if not self.root.is_dir():
                return []
            return sorted(entry.name for entry in self.root.iterdir() if entry.is_dir() and _is_store_name(entry.name))

        return _guarded("list the stores", self.root, names)

    def health(self) -> Result[Mapping[str, str], DomainError]:
        def merged(index_fields: Mapping[str, str]) -> Mapping[str, str]:
            fields = {"files_root": str(self.root), "index_backend": self.index.backend}
            return fields | {f"index_{key}": value for key, value in index_fields.items()}

        return self._usable_root().bind(lambda _: self.index.health().map(merged))

    def _usable_root(self) -> Result[None, DomainError]:
        """A root that exists is usable for reading even on a disk that refuses writes (writes then say so)."""
        return Success(None) if self.root.is_dir() else self._writable_root()

    def _writable_root(self) -> Result[None, DomainError]:
        def check() -> None:
            self.root.mkdir(parents=True, exist_ok=True)
            if not os.access(self.root, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, "not writable", str(self.root))

        return _guarded("prepare the files root", self.root, check).alt(
            lambda error: DomainError(
                ErrorCode.BACKEND_UNAVAILABLE,
                f"The files root {self.root} cannot be created or written ({error.cause}). Point the data directory "
                "at a writable place, or fix its permissions.",
                path=str(self.root),
                cause=error.cause,
            )
        )

    def _store_files(self, name: str, *, create: bool) -> Result[_StoreFiles, DomainError]:
        try:
            checked = check_store_name(name)
        except InvalidValue as error:
            return Failure(error.to_error())
        directory = self.root / checked
        if directory.is_dir():
            return Success(self._files(checked, directory))
        self._parsed.pop(checked, None)
        if not create:
            return Failure(
                DomainError(
                    ErrorCode.STORE_NOT_FOUND,
                    f"Store '{checked}' does not exist. Create it with `memory store create {checked}` or add a memory to it.",
                    path=checked,
                )
            )
        return (
            self._writable_root()
            .bind(lambda _: _guarded(f"create store '{checked}'", self.root, lambda: directory.mkdir(exist_ok=True)))
            .map(lambda _: self._files(checked, directory))
        )

    def _files(self, name: str, directory: Path) -> _StoreFiles:
        lock = filelock.FileLock(str(directory / LOCK_FILE), timeout=LOCK_TIMEOUT_S, is_singleton=True)
        return _StoreFiles(name, directory, lock, self._parsed.setdefault(name, {}))


def _is_store_name(name: str) -> bool:
    try:
        return check_store_name(name) == name
    except InvalidValue:
        return False
