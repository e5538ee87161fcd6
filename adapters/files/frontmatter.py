"""A Memory ⇄ its file: the frontmatter keys written in file order, and read back one key at a time.

The block holds snake_case keys. ``id``, ``created_at`` and ``updated_at`` are always written (a hand-written file
may leave out the id, which reindex adds, and the times, which its modification time stands for); ``tags``, ``source`` and
``citations`` are always written; other fields are written only when they differ from their default (``global_``
is written as ``global``). Timestamps are written as ISO 8601 UTC with a ``Z`` (microseconds kept when non-zero)
and read leniently: ``Z``, any offset (converted to UTC), naive (taken as UTC), or a YAML date (midnight UTC).
Keys this module does not know are returned as ``extra`` and written back after the known keys, so they survive
a rewrite. The syntax around the keys (the ``---`` lines, YAML) is format.py's.

Location wins. A memory's store and path are where its file lives, so they come from the caller.
``store`` is never written and a ``store`` key in a file is ignored. ``path`` is written (when set)
for people and for files read outside a store; it is read only when the caller gives no ``path``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from enum import Enum
from typing import Any

import attrs
from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory.adapters.files.format import (
    EXAMPLE_TIMESTAMP,
    FrontmatterError,
    FrontmatterErrorCode,
    UtcTimestamp,
    dump_block,
    format_timestamp,
    read_block,
)
from agent_memory.adapters.shared.memory_fields import is_timestamp, memory_fields
from agent_memory.domain.errors import InvalidValue
from agent_memory.domain.model import (
    DEFAULT_STORE,
    DecayPolicy,
    Memory,
    check_memory_id,
    check_namespace,
    parse_decay_policy,
)
from agent_memory.domain.paths import MemoryPath, parse_memory_path


@frozen
class ParsedMemory:
    """A memory read from a file, and the file's unknown keys (to write back on the next save)."""

    memory: Memory
    extra: Mapping[str, object]


# --- keys ---------------------------------------------------------------------------------------

# A key per Memory field (its plain name: `global_` is `global`), but the content, which is the text after the
# block. The leading keys are written first, in this order, for people; every other field follows in declaration
# order when it differs from its default, and is read by its type (fields added later need no edit here).
_LEADING_KEYS = ("id", "path", "created_at", "updated_at", "expires_at", "tags", "source", "citations")
_FIELDS = tuple((key, a) for key, a in memory_fields() if key != "content")
_OTHER_FIELDS = tuple((key, a) for key, a in _FIELDS if key not in _LEADING_KEYS and key != "store")
_TIMESTAMP_KEYS = tuple(key for key, a in _FIELDS if is_timestamp(a))
KNOWN_KEYS = frozenset(key for key, _ in _FIELDS)  # `store` among them: it is where the file lives, never read
_KEY_OF_ATTRIBUTE = {a.name: key for key, a in memory_fields()}
_CODE_OF_KEY = {
    "tags": FrontmatterErrorCode.INVALID_TAGS,
    "source": FrontmatterErrorCode.INVALID_SOURCE,
    "citations": FrontmatterErrorCode.INVALID_CITATIONS,
    **{key: FrontmatterErrorCode.INVALID_TIMESTAMP for key in _TIMESTAMP_KEYS},
}
_CAMEL_CASE = {"created_at": "createdAt", "updated_at": "updatedAt", "expires_at": "expiresAt"}


# --- serialize ----------------------------------------------------------------------------------


def _known_fields(memory: Memory) -> dict[str, object]:
    """The memory's keys in file order; optional ones only when they differ from their default."""
    fields: dict[str, object] = {"id": memory.id}
    if memory.path is not None:
        fields["path"] = str(memory.path)
    fields["created_at"] = UtcTimestamp(format_timestamp(memory.created_at))
    fields["updated_at"] = UtcTimestamp(format_timestamp(memory.updated_at))
    if memory.expires_at is not None:
        fields["expires_at"] = UtcTimestamp(format_timestamp(memory.expires_at))
    fields["tags"] = list(memory.tags)
    fields["source"] = memory.source
    fields["citations"] = list(memory.citations)
    for key, attribute in _OTHER_FIELDS:
        value = getattr(memory, attribute.name)
        if value != attribute.default:
            fields[key] = _yaml_value(value)
    return fields


def _yaml_value(value: object) -> object:
    """A field's value as the block writes it: a timestamp in UTC with a Z, a list, an enum as its value."""
    if isinstance(value, datetime):
        return UtcTimestamp(format_timestamp(value))
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Enum):
        return value.value
    return value


def serialize_frontmatter(memory: Memory, extra: Mapping[str, object] | None = None) -> str:
    """The file for a memory: '---', its metadata as YAML, '---', then the content exactly as is.

    ``extra`` (the unknown keys of an earlier version of the file) is written after the known keys;
    an extra key that is a known one is skipped, the memory's own value wins. Extra values must be
    plain YAML data (what ``yaml.safe_load`` returns).
    """
    block = _known_fields(memory)
    for key, value in (extra or {}).items():
        if key not in KNOWN_KEYS:
            block[key] = value
    return dump_block(block, memory.content)


# --- parse: one field at a time -------------------------------------------------------------------


class _FieldProblem(Exception):
    """A value of the wrong shape for its key; turned into a FrontmatterError at once."""

    def __init__(self, error: FrontmatterError) -> None:
        super().__init__(error.message)
        self.error = error


def _problem(key: str, message: str) -> _FieldProblem:
    return _FieldProblem(FrontmatterError(_CODE_OF_KEY.get(key, FrontmatterErrorCode.INVALID_FIELD), message, key))


def _timestamp(key: str, raw: object) -> datetime:
    """A UTC datetime from an ISO 8601 string, a YAML datetime or a YAML date."""
    how = f"write it as an ISO 8601 UTC timestamp like {EXAMPLE_TIMESTAMP}."
    if isinstance(raw, datetime):
        value = raw
    elif isinstance(raw, date):
        value = datetime(raw.year, raw.month, raw.day)
    elif isinstance(raw, str):
        try:
            value = datetime.fromisoformat(raw.strip())
        except ValueError:
            raise _problem(key, f"`{key}` is {raw!r}, which is not a timestamp: {how}") from None
    else:
        raise _problem(key, f"`{key}` is a {type(raw).__name__}, not a timestamp: {how}")
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise _problem(key, f"`{key}` is out of range once converted to UTC: {how}") from None


def _optional_timestamp(key: str, raw: object) -> datetime | None:
    return None if raw is None else _timestamp(key, raw)


def _strings(key: str, raw: object, example: str) -> tuple[str, ...]:
    """A list of non-empty strings; a missing or empty (null) value is the empty list."""
    how = f"write it as a list of non-empty strings, like `{key}: {example}`, quoting entries YAML would read as other types."
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _problem(key, f"`{key}` is a {type(raw).__name__}, not a list: {how}")
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            raise _problem(key, f"`{key}` has the entry {item!r}, which is not a non-empty string: {how}")
    return tuple(raw)


def _text(key: str, raw: object) -> str:
    """A string; a missing or empty (null) value is ''."""
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise _problem(key, f"`{key}` is a {type(raw).__name__} ({raw!r}), not text: put the value in quotes.")
    return raw


def _flag(key: str, raw: object) -> bool:
    if raw is None:
        return False
    if not isinstance(raw, bool):
        raise _problem(key, f"`{key}` is {raw!r}: write `{key}: true` or `{key}: false`.")
    return raw


def _checked(key: str, check: Callable[[Any], Any], raw: object) -> Any:
    """``check(raw)``, with its InvalidValue turned into an error on ``key``."""
    try:
        return check(raw)
    except InvalidValue as error:
        raise _problem(key, f"`{key}`: {error.message}") from None


def _missing(key: str, data: Mapping[str, object], how: str) -> _FieldProblem:
    camel = _CAMEL_CASE.get(key)
    hint = f" The file has `{camel}`: rename it to `{key}` (keys are snake_case)." if camel in data else ""
    return _FieldProblem(
        FrontmatterError(FrontmatterErrorCode.MISSING_FIELD, f"The frontmatter has no `{key}`: {how}{hint}", key)
    )


def _required_timestamp(key: str, data: Mapping[str, object]) -> datetime:
    if data.get(key) is None:
        raise _missing(key, data, f"add `{key}: {EXAMPLE_TIMESTAMP}` (ISO 8601, UTC).")
    return _timestamp(key, data[key])


def _memory_id(data: Mapping[str, object], default_id: str | None) -> str:
    raw = data.get("id")
    if raw is None and default_id is None:
        raise _missing(
            "id",
            data,
            "add a line `id: <uuid4>` (python -c 'import uuid; print(uuid.uuid4())' prints one), "
            "or run `memory reindex`, which gives an id to every file that lacks one.",
        )
    return str(_checked("id", check_memory_id, default_id if raw is None else raw))


def _location(data: Mapping[str, object], path: MemoryPath | None) -> MemoryPath | None:
    """The caller's path (where the file lives) wins; the recorded ``path`` is only a fallback."""
    if path is not None or data.get("path") is None:
        return path
    raw = data["path"]
    if not isinstance(raw, str):
        raise _problem("path", f"`path` is a {type(raw).__name__}: write it as text like `path: category/slug`.")
    match parse_memory_path(raw):
        case Success(recorded):
            return recorded  # type: ignore[no-any-return]
        case Failure(error):
            raise _problem("path", f"`path`: {error.message}")
    raise AssertionError("a Result is a Success or a Failure")  # pragma: no cover


def _times(data: Mapping[str, object], default_time: datetime | None) -> dict[str, datetime]:
    """created_at and updated_at; a hand-written file without them takes `default_time` (its modification time)."""
    if default_time is None:
        return {key: _required_timestamp(key, data) for key in ("created_at", "updated_at")}
    created, updated = (
        None if data.get(key) is None else _timestamp(key, data[key]) for key in ("created_at", "updated_at")
    )
    created = created or (default_time if updated is None else min(default_time, updated))
    return {"created_at": created, "updated_at": updated or max(default_time, created)}


def _memory_values(
    data: Mapping[str, object],
    content: str,
    store: str,
    path: MemoryPath | None,
    default_id: str | None,
    default_time: datetime | None = None,
) -> dict[str, Any]:
    """Every Memory argument, each read from its key; raises _FieldProblem for the first bad one."""
    if not content.strip():
        raise _problem(
            "content",
            "The memory's text after the closing '---' is empty: a memory needs some text, so write it there.",
        )
    values: dict[str, Any] = {
        "id": _memory_id(data, default_id),
        "content": content,
        "store": store,
        "path": _location(data, path),
        **_times(data, default_time),
        "expires_at": _optional_timestamp("expires_at", data.get("expires_at")),
        "tags": _strings("tags", data.get("tags"), "[python, testing]"),
        "source": _text("source", data.get("source")),
        "citations": _strings("citations", data.get("citations"), '["src/app.py:12", "https://example.com"]'),
    }
    for key, attribute in _OTHER_FIELDS:  # a missing (or null) key is the field's default
        raw = data.get(key)
        values[attribute.name] = attribute.default if raw is None else _READERS[key](key, raw)
    return values


def _whole(key: str, raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _problem(key, f"`{key}` is {raw!r}, not a whole number: write it like `{key}: 3`.")
    return raw


def _real(key: str, raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise _problem(key, f"`{key}` is {raw!r}, not a number: write it like `{key}: 0.5`.")
    return float(raw)


def _choice(kind: type[Enum]) -> Callable[[str, object], Enum]:
    def read(key: str, raw: object) -> Enum:
        try:
            return kind(str(raw).strip().lower())
        except ValueError:
            names = ", ".join(str(member.value) for member in kind)
            raise _problem(key, f"`{key}` is {raw!r}: use one of {names}.") from None

    return read


def _reader(key: str, attribute: attrs.Attribute[Any]) -> Callable[[str, object], Any]:
    """How the value of a field's key is read, by the field's type (a few keys by their own rule)."""
    if key == "namespace":
        return lambda key, raw: _checked(key, check_namespace, raw)
    if key == "decay_policy":
        return lambda _key, raw: _decay_policy(raw)
    kind = attribute.type
    by_type: dict[object, Callable[[str, object], Any]] = {
        str: _text,
        bool: _flag,
        datetime | None: _optional_timestamp,
        tuple[str, ...]: lambda key, raw: _strings(key, raw, "[a, b]"),
        int: _whole,
        int | None: _whole,
        float: _real,
        float | None: _real,
    }
    if kind in by_type:
        return by_type[kind]
    if isinstance(kind, type) and issubclass(kind, Enum):
        return _choice(kind)
    raise TypeError(f"the file format has no reader for the Memory field {key!r} of type {kind}: add one here")


_READERS = {key: _reader(key, attribute) for key, attribute in _OTHER_FIELDS}


def _decay_policy(raw: object) -> DecayPolicy:
    return DecayPolicy.STABLE if raw is None else _checked("decay_policy", parse_decay_policy, raw)


def _failing_key(values: Mapping[str, Any]) -> str | None:
    """The file key whose value a Memory validator rejects (validators are re-run one by one)."""
    for attribute in attrs.fields(Memory):
        if attribute.validator is None or attribute.name not in values:
            continue
        try:
            attribute.validator(None, attribute, values[attribute.name])
        except InvalidValue:
            return _KEY_OF_ATTRIBUTE[attribute.name]
    return None


def _build(values: dict[str, Any]) -> Result[Memory, FrontmatterError]:
    try:
        return Success(Memory(**values))
    except InvalidValue as error:
        key = _failing_key(values)
        if key is None:
            return Failure(FrontmatterError(FrontmatterErrorCode.INVALID_FIELD, error.message))
        if key == "content":
            return Failure(_problem(key, f"The memory's text: {error.message}").error)
        return Failure(_problem(key, f"`{key}`: {error.message}").error)


def parse_frontmatter(
    text: str,
    *,
    store: str = DEFAULT_STORE,
    path: MemoryPath | None = None,
    default_id: str | None = None,
    default_time: datetime | None = None,
) -> Result[ParsedMemory, FrontmatterError]:
    """Read a memory file. ``store``/``path`` say where it lives (they win over the file);
    ``default_id`` is the id to give a hand-written file without one (reindex); without it a
    missing id is MISSING_FIELD. ``default_time`` (the file's modification time) stands for a missing
    ``created_at``/``updated_at``; without it they are MISSING_FIELD. Never raises for a bad file: every
    problem is a Failure.
    """
    return read_block(text).bind(lambda pieces: _read(pieces[0], pieces[1], store, path, default_id, default_time))


def _read(
    data: Mapping[str, object],
    content: str,
    store: str,
    path: MemoryPath | None,
    default_id: str | None,
    default_time: datetime | None,
) -> Result[ParsedMemory, FrontmatterError]:
    """The memory and unknown keys of a loaded block and its content."""
    try:
        values = _memory_values(data, content, store, path, default_id, default_time)
    except _FieldProblem as problem:
        return Failure(problem.error)
    extra = {key: value for key, value in data.items() if key not in KNOWN_KEYS}
    return _build(values).map(lambda memory: ParsedMemory(memory, extra))
