"""Slug paths (`category/…/slug`) and category paths: normalisation and the INVALID_PATH rules."""

from __future__ import annotations

import re
import unicodedata

from attrs import field, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue

MAX_SEGMENT_LENGTH = 120
MAX_PATH_LENGTH = 512
MAX_DEPTH = 32

_NOT_SLUG = re.compile(r"[^a-z0-9-]+")
_DASHES = re.compile(r"-{2,}")


def normalise_segment(raw: str) -> str:
    """Trim, lowercase, fold accents, spaces/underscores to '-', drop the rest, collapse '-'."""
    folded = unicodedata.normalize("NFKD", raw.strip().lower())
    dashed = re.sub(r"[\s_]+", "-", folded)
    kept = _NOT_SLUG.sub("", dashed)
    return _DASHES.sub("-", kept).strip("-")


def _segments(raw: str, *, minimum: int, what: str) -> tuple[str, ...]:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidValue(f"The {what} is empty: give it as 'category/slug'.", ErrorCode.INVALID_PATH)
    text = raw.strip()
    if "\\" in text:
        raise InvalidValue(f"The {what} '{raw}' has a backslash: separate segments with '/'.", ErrorCode.INVALID_PATH)
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise InvalidValue(
            f"The {what} '{raw}' is absolute: give it relative to the store, like 'category/slug'.",
            ErrorCode.INVALID_PATH,
        )
    if len(text) > MAX_PATH_LENGTH:
        raise InvalidValue(f"The {what} is longer than {MAX_PATH_LENGTH} characters.", ErrorCode.INVALID_PATH)
    parts = text.split("/")
    segments: list[str] = []
    for part in parts:
        if part.strip() in (".", ".."):
            raise InvalidValue(
                f"The {what} '{raw}' has a '{part.strip()}' segment: a path can never leave its store.",
                ErrorCode.INVALID_PATH,
            )
        slug = normalise_segment(part)
        if not slug:
            raise InvalidValue(
                f"The {what} '{raw}' has a segment that is empty once normalised to a slug "
                "(letters, digits and '-'): give every segment a name.",
                ErrorCode.INVALID_PATH,
            )
        if len(slug) > MAX_SEGMENT_LENGTH:
            raise InvalidValue(
                f"A segment of '{raw}' is longer than {MAX_SEGMENT_LENGTH} characters.", ErrorCode.INVALID_PATH
            )
        segments.append(slug)
    if len(segments) < minimum:
        raise InvalidValue(
            f"The {what} '{raw}' needs at least {minimum} segments, like 'category/slug'.", ErrorCode.INVALID_PATH
        )
    if len(segments) > MAX_DEPTH:
        raise InvalidValue(f"The {what} '{raw}' is deeper than {MAX_DEPTH} levels.", ErrorCode.INVALID_PATH)
    return tuple(segments)


def _valid_segments(minimum: int):  # type: ignore[no-untyped-def]
    def check(_instance: object, _attribute: object, value: tuple[str, ...]) -> None:
        if len(value) < minimum or any(normalise_segment(s) != s or not s for s in value):
            raise InvalidValue(f"Not a normalised path: {'/'.join(value)!r}.", ErrorCode.INVALID_PATH)

    return check


@frozen
class MemoryPath:
    """A memory's identity inside its store: one or more categories, then a slug."""

    segments: tuple[str, ...] = field(validator=_valid_segments(2))

    @property
    def category(self) -> CategoryPath:
        return CategoryPath(self.segments[:-1])

    @property
    def slug(self) -> str:
        return self.segments[-1]

    def __str__(self) -> str:
        return "/".join(self.segments)


@frozen
class CategoryPath:
    """A category of any depth; the first segment is a root category."""

    segments: tuple[str, ...] = field(validator=_valid_segments(1))

    def __str__(self) -> str:
        return "/".join(self.segments)

    def contains(self, path: MemoryPath) -> bool:
        return path.segments[: len(self.segments)] == self.segments


def memory_path(raw: str) -> MemoryPath:
    """Normalise a path, raising InvalidValue(INVALID_PATH); parse_memory_path is the Result form."""
    return MemoryPath(_segments(raw, minimum=2, what="path"))


def parse_memory_path(raw: str) -> Result[MemoryPath, DomainError]:
    """Normalise a user's path; INVALID_PATH when it is empty, escapes the store or lacks a slug."""
    try:
        return Success(memory_path(raw))
    except InvalidValue as error:
        return Failure(DomainError(error.code, error.message, path=str(raw)))


def parse_category_path(raw: str) -> Result[CategoryPath, DomainError]:
    """Normalise a category path (one segment or more)."""
    try:
        return Success(CategoryPath(_segments(raw, minimum=1, what="category")))
    except InvalidValue as error:
        return Failure(DomainError(error.code, error.message, path=str(raw)))
