"""Where a store's files lie: names built from paths and ids (`<slug>.md`, `<slug>.<id>.md`), and paths read back.

A memory with a path lives at ``<store>/<category>/…/<slug>.md``; one without a path at
``<store>/_unfiled/<id>.md``. A soft-deleted memory's file is ``<slug>.<id>.md``, and so is a live one's when
another live memory already holds ``<slug>.md``. A category's description is ``<category dir>/_category.md``.
Names that start with ``.`` (the ``.lock`` file, temporaries) or ``_`` are reserved and never read as memories.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Sequence

from agent_memory.adapters.shared.boundary import Abort
from agent_memory.adapters.shared.durable import TEMP_MARKER
from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import check_memory_id
from agent_memory.domain.paths import MAX_DEPTH, MAX_SEGMENT_LENGTH, MemoryPath, normalise_segment

SUFFIX = ".md"
UNFILED = "_unfiled"
CATEGORY_FILE = "_category.md"
LOCK_FILE = ".lock"

_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_COLLISION_STEM = re.compile(rf"(?P<stem>.+)\.(?P<id>{_UUID})")
_WRITABLE_NAME = re.compile(rf"(?:{_SLUG.pattern}|{_UUID})(?:\.{_UUID})?\.md|{re.escape(CATEGORY_FILE)}")

Parts = tuple[str, ...]  # a file or directory inside a store, as names from the store directory down


def default_memory_id(store: str, relative: str) -> str:
    """The id of a hand-written file without one, which `rebuild` (reindex) writes into it: a UUID4, like every
    memory id (decision 1), whose bits other than version and variant are a SHA-256 of '<store>/<path relative
    to the store>' rather than random, so that every process reads the same id before the reindex writes it."""
    digest = hashlib.sha256(f"{store}/{relative}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def memory_file(memory_id: str, path: MemoryPath | None) -> str:
    """Where a memory's file goes, relative to its store, when nothing else holds that place."""
    return "/".join(canonical_parts(memory_id, path))


def invalid_path(message: str, path: str) -> Abort:
    return Abort(DomainError(ErrorCode.INVALID_PATH, message, path=path))


def bad_file(relative: str, store: str, message: str, cause: str | None = None) -> Abort:
    return Abort(
        DomainError(
            ErrorCode.INVALID_INPUT,
            f"The file '{relative}' in store '{store}' cannot be read: {message}",
            path=relative,
            cause=cause,
        )
    )


def checked_segments(segments: Sequence[str]) -> Parts:
    """Slug segments as they may appear on disk (defence in depth: MemoryPath validated them already)."""
    for segment in segments:
        if not isinstance(segment, str) or not _SLUG.fullmatch(segment) or len(segment) > MAX_SEGMENT_LENGTH:
            raise invalid_path(
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
        raise invalid_path(
            f"Refusing to name a file after {memory_id!r}: it is not a canonical memory id.", str(memory_id)
        )
    return memory_id


def canonical_parts(memory_id: str, path: MemoryPath | None) -> Parts:
    if path is None:
        return (UNFILED, f"{_checked_id(memory_id)}{SUFFIX}")
    segments = checked_segments(path.segments)
    return (*segments[:-1], f"{segments[-1]}{SUFFIX}")


def collision_parts(memory_id: str, path: MemoryPath) -> Parts:
    segments = checked_segments(path.segments)
    return (*segments[:-1], f"{segments[-1]}.{_checked_id(memory_id)}{SUFFIX}")


def candidate_parts(memory_id: str, path: MemoryPath | None) -> tuple[Parts, ...]:
    """Every place the layout may have put a memory's file, the usual one first."""
    if path is None:
        return (canonical_parts(memory_id, path),)
    return (canonical_parts(memory_id, path), collision_parts(memory_id, path))


def check_writable_parts(parts: Parts) -> None:
    """Only names this module builds may be written: slug folders (or _unfiled first) and known file names."""
    folders, name = parts[:-1], parts[-1]
    unfiled = folders[:1] == (UNFILED,)
    checked_segments(folders[1:] if unfiled else folders)
    if not _WRITABLE_NAME.fullmatch(name):
        raise invalid_path(f"Refusing to write a file named {name!r}.", "/".join(parts))


def check_found_parts(parts: Parts) -> None:
    """A file found by walking the store may have any name, but never one that climbs or nests."""
    for part in parts:
        if part in ("", ".", "..") or "/" in part or "\0" in part or (os.altsep and os.altsep in part):
            where = relative_path(parts)
            raise invalid_path(f"Refusing to touch {where!r}: it is not a plain name inside the store.", where)


def relative_path(parts: Parts) -> str:
    return "/".join(parts)


def is_memory_name(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.startswith((".", "_"))


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def normalised(names: Sequence[str], where: str, store: str) -> tuple[str, ...]:
    """Folder and file names read as the slugs of a memory path (or a category); unreadable ones abort."""
    segments = tuple(normalise_segment(name) for name in names)
    if len(segments) > MAX_DEPTH or any(not s or len(s) > MAX_SEGMENT_LENGTH for s in segments):
        raise bad_file(
            where,
            store,
            "its folders and name do not make a memory path (each must keep some letters or digits once "
            f"lowercased, at most {MAX_SEGMENT_LENGTH} characters, at most {MAX_DEPTH} levels). Rename it, "
            "e.g. to 'category/my-note.md', then run `memory reindex`.",
        )
    return segments


def location_path(parts: Parts, store: str) -> MemoryPath | None:
    """The path a file's place gives it: none at the store's top or under _unfiled, else folders + name."""
    if len(parts) == 1 or parts[0] == UNFILED:
        return None
    stem = parts[-1][: -len(SUFFIX)]
    collision = _COLLISION_STEM.fullmatch(stem)
    if collision is not None:
        stem = collision["stem"]
    return MemoryPath(normalised((*parts[:-1], stem), relative_path(parts), store))
