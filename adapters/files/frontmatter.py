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

_TIMESTAMP_KEYS = ("created_at", "updated_at", "last_reinforced_at", "expires_at", "deleted_at")
_LABEL_KEYS = ("agent", "personality", "project", "type", "thread")
_BOOL_KEYS = {"global": "global_", "deleted": "deleted"}
_IGNORED_KEYS = frozenset({"store"})
KNOWN_KEYS = frozenset(
    {"id", "path", "tags", "source", "citations", "namespace", "decay_policy"}
    | set(_TIMESTAMP_KEYS)
    | set(_LABEL_KEYS)
    | set(_BOOL_KEYS)
    | _IGNORED_KEYS
)
_KEY_OF_ATTRIBUTE = {"global_": "global"}
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
    if memory.namespace:
        fields["namespace"] = list(memory.namespace)
    for key in _LABEL_KEYS:
        if getattr(memory, key):
            fields[key] = getattr(memory, key)
    if memory.global_:
        fields["global"] = True
    if memory.decay_policy is not DecayPolicy.STABLE:
        fields["decay_policy"] = memory.decay_policy.value
    if memory.last_reinforced_at is not None:
        fields["last_reinforced_at"] = UtcTimestamp(format_timestamp(memory.last_reinforced_at))
    if memory.deleted:
        fields["deleted"] = True
    if memory.deleted_at is not None:
        fields["deleted_at"] = UtcTimestamp(format_timestamp(memory.deleted_at))
    return fields


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
        "tags": _strings("tags", data.get("tags"), "[python, testing]"),
        "source": _text("source", data.get("source")),
        "citations": _strings("citations", data.get("citations"), '["src/app.py:12", "https://example.com"]'),
        "namespace": _checked("namespace", check_namespace, data.get("namespace")),
        "decay_policy": _decay_policy(data.get("decay_policy")),
    }
    for key in _LABEL_KEYS:
        values[key] = _text(key, data.get(key))
    for key, attribute in _BOOL_KEYS.items():
        values[attribute] = _flag(key, data.get(key))
    for key in ("last_reinforced_at", "expires_at", "deleted_at"):
        values[key] = _optional_timestamp(key, data.get(key))
    return values


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
            return _KEY_OF_ATTRIBUTE.get(attribute.name, attribute.name)
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
