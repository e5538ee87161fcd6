"""The frontmatter format adapter: a markdown file with a YAML metadata block ↔ a Memory.

Format. A file is ``"---\\n" + yaml + "---\\n" + content``. When parsing, the file must start with a
line that is exactly ``---`` (ended by ``\\n`` or ``\\r\\n``; one leading UTF-8 BOM is ignored); the
block ends at the first following line that is exactly ``---`` (again ``\\n`` or ``\\r\\n``), and
everything after that line's line break is the content, verbatim: leading and trailing newlines,
blank lines, ``---`` lines, CRLF and unicode all round-trip. The block is a YAML mapping with
snake_case keys, read with ``yaml.safe_load`` only. ``id``, ``created_at`` and ``updated_at`` are
required; ``tags``, ``source`` and ``citations`` are always written; other fields are written only
when they differ from their default (``global_`` is written as ``global``). Timestamps are written
as ISO 8601 UTC with a ``Z`` (microseconds kept when non-zero) and read leniently: ``Z``, any offset
(converted to UTC), naive (taken as UTC), or a YAML date (midnight UTC). Keys this module does not
know are returned as ``extra`` and written back after the known keys, so they survive a rewrite.

Location wins. A memory's store and path are where its file lives, so they come from the caller.
``store`` is never written and a ``store`` key in a file is ignored. ``path`` is written (when set)
for people and for files read outside a store; it is read only when the caller gives no ``path``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any

import attrs
import yaml
from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode, InvalidValue
from agent_memory.domain.model import (
    DEFAULT_STORE,
    DecayPolicy,
    Memory,
    check_memory_id,
    check_namespace,
    parse_decay_policy,
)
from agent_memory.domain.paths import MemoryPath, parse_memory_path

DELIMITER = "---"
_BOM = "\ufeff"
_EXAMPLE_TIMESTAMP = "2026-11-22T04:13:35Z"
_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class FrontmatterErrorCode(StrEnum):
    """Why a file could not be read as a memory."""

    MISSING_FRONTMATTER = "MISSING_FRONTMATTER"
    INVALID_FRONTMATTER = "INVALID_FRONTMATTER"
    MISSING_FIELD = "MISSING_FIELD"
    INVALID_TIMESTAMP = "INVALID_TIMESTAMP"
    INVALID_TAGS = "INVALID_TAGS"
    INVALID_SOURCE = "INVALID_SOURCE"
    INVALID_CITATIONS = "INVALID_CITATIONS"
    INVALID_FIELD = "INVALID_FIELD"


@frozen
class FrontmatterError:
    """A parse failure: its code, a message saying how to fix the file, and the key at fault."""

    code: FrontmatterErrorCode
    message: str
    field: str | None = None


@frozen
class ParsedMemory:
    """A memory read from a file, and the file's unknown keys (to write back on the next save)."""

    memory: Memory
    extra: Mapping[str, object]


def to_domain_error(err: FrontmatterError, path: str | None) -> DomainError:
    """The domain's INVALID_INPUT error for a file that could not be parsed (cause: the format code)."""
    return DomainError(ErrorCode.INVALID_INPUT, f"{err.code.value}: {err.message}", path=path, cause=err.code.value)


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


class _UtcTimestamp(str):
    """A timestamp already formatted as ISO 8601 UTC with 'Z': written as a plain YAML timestamp."""


class _FrontmatterDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no type stubs
    """SafeDumper that writes our timestamps unquoted and any multi-line string double-quoted.

    Double quotes escape every line break, so no line of the block can ever be a bare ``---``.
    """


def _represent_timestamp(dumper: yaml.SafeDumper, value: _UtcTimestamp) -> Any:
    return dumper.represent_scalar(_TIMESTAMP_TAG, str(value))


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = '"' if any(brk in value for brk in _LINE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_FrontmatterDumper.add_representer(_UtcTimestamp, _represent_timestamp)
_FrontmatterDumper.add_representer(str, _represent_str)


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with a 'Z', microseconds only when non-zero: 2026-11-22T04:13:35.123456Z."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def _known_fields(memory: Memory) -> dict[str, object]:
    """The memory's keys in file order; optional ones only when they differ from their default."""
    fields: dict[str, object] = {"id": memory.id}
    if memory.path is not None:
        fields["path"] = str(memory.path)
    fields["created_at"] = _UtcTimestamp(format_timestamp(memory.created_at))
    fields["updated_at"] = _UtcTimestamp(format_timestamp(memory.updated_at))
    if memory.expires_at is not None:
        fields["expires_at"] = _UtcTimestamp(format_timestamp(memory.expires_at))
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
        fields["last_reinforced_at"] = _UtcTimestamp(format_timestamp(memory.last_reinforced_at))
    if memory.deleted:
        fields["deleted"] = True
    if memory.deleted_at is not None:
        fields["deleted_at"] = _UtcTimestamp(format_timestamp(memory.deleted_at))
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
    text = yaml.dump(
        block,
        Dumper=_FrontmatterDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=2**31 - 1,
    )
    return f"{DELIMITER}\n{text}{DELIMITER}\n{memory.content}"


# --- parse: the file's layout ---------------------------------------------------------------------


def _split_line(text: str, start: int) -> tuple[str, int] | None:
    """The line starting at ``start`` without its '\\n' or '\\r\\n', and where the next one starts."""
    end = text.find("\n", start)
    if end == -1:
        return None
    return text[start:end].removesuffix("\r"), end + 1


def split_frontmatter(text: str) -> Result[tuple[str, str], FrontmatterError]:
    """The YAML block and the verbatim content of a file, per the format in the module docstring."""
    text = text.removeprefix(_BOM)
    first = _split_line(text, 0)
    if first is None or first[0] != DELIMITER:
        return Failure(
            FrontmatterError(
                FrontmatterErrorCode.MISSING_FRONTMATTER,
                "The file does not start with a frontmatter block: its first line must be exactly '---', "
                "followed by the metadata as YAML (at least id, created_at and updated_at), a line '---', "
                "then the memory's text.",
            )
        )
    block_start = position = first[1]
    while (line := _split_line(text, position)) is not None:
        if line[0] == DELIMITER:
            return Success((text[block_start:position], text[line[1] :]))
        position = line[1]
    if text[position:] == DELIMITER:  # closing line at the very end, without a line break
        return Success((text[block_start:position], ""))
    return Failure(
        FrontmatterError(
            FrontmatterErrorCode.INVALID_FRONTMATTER,
            "The frontmatter block opened on line 1 is never closed: add a line that is exactly '---' "
            "between the metadata and the memory's text.",
        )
    )


# --- parse: the YAML block ------------------------------------------------------------------------


def _yaml_error(error: yaml.YAMLError) -> FrontmatterError:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    where = f"line {mark.line + 2}" if mark is not None else "the frontmatter"  # line 1 is the opening '---'
    problem = getattr(error, "problem", None) or str(error)
    return FrontmatterError(
        FrontmatterErrorCode.INVALID_FRONTMATTER,
        f"The frontmatter is not valid YAML ({where}: {problem}): fix that line; put values that contain "
        "': ' or start with '#', '[', '{', '&', '*', '!', '|', '>', '%', '@' or '`' in quotes.",
    )


def _unbuildable_value(block: str, error: Exception) -> FrontmatterError:
    """Well-formed YAML holding a value PyYAML cannot build: an impossible date, `!!int abc`, deep nesting."""
    key, line = _key_of_bad_timestamp(block)
    if key is not None:
        detail = f" ({error})" if isinstance(error, ValueError) else ""
        return FrontmatterError(
            FrontmatterErrorCode.INVALID_TIMESTAMP,
            f"`{key}` (line {line}) is not a real date{detail}: write it as an ISO 8601 UTC timestamp "
            f"like {_EXAMPLE_TIMESTAMP}.",
            key,
        )
    return FrontmatterError(
        FrontmatterErrorCode.INVALID_FRONTMATTER,
        f"A value in the frontmatter cannot be read ({type(error).__name__}: {error}): check dates, explicit "
        "`!!` tags and nesting, and put plain text values in quotes.",
    )


def _key_of_bad_timestamp(block: str) -> tuple[str | None, int | None]:
    """The top-level key whose unquoted timestamp cannot be built, found on the composed (unbuilt) node tree."""
    try:
        root = yaml.compose(block, Loader=yaml.SafeLoader)
    except Exception:  # only a hint is lost
        return None, None
    if not isinstance(root, yaml.MappingNode):
        return None, None
    for key_node, value_node in root.value:
        if value_node.tag == _TIMESTAMP_TAG and isinstance(value_node, yaml.ScalarNode):
            try:
                yaml.constructor.SafeConstructor().construct_yaml_timestamp(value_node)
            except Exception:  # PyYAML raises ValueError, AttributeError… for bad timestamps
                return str(key_node.value), value_node.start_mark.line + 2
    return None, None


def load_block(block: str) -> Result[dict[str, object], FrontmatterError]:
    """The frontmatter block as a mapping with string keys (an empty block is an empty mapping)."""
    try:
        data = yaml.safe_load(block)
    except yaml.YAMLError as error:
        return Failure(_yaml_error(error))
    except Exception as error:  # PyYAML's constructors raise bare errors for bad explicit tags
        return Failure(_unbuildable_value(block, error))
    if data is None:
        return Success({})
    if not isinstance(data, dict):
        return Failure(
            FrontmatterError(
                FrontmatterErrorCode.INVALID_FRONTMATTER,
                f"The frontmatter is a YAML {type(data).__name__}, not a mapping: write one `key: value` "
                "per line, like `id: <uuid>`.",
            )
        )
    for key in data:
        if not isinstance(key, str):
            return Failure(
                FrontmatterError(
                    FrontmatterErrorCode.INVALID_FRONTMATTER,
                    f"The frontmatter key {key!r} is read by YAML as a {type(key).__name__}, not a name: "
                    f"put it in quotes, like '{key}': ….",
                )
            )
    return Success(data)


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
    how = f"write it as an ISO 8601 UTC timestamp like {_EXAMPLE_TIMESTAMP}."
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
        raise _missing(key, data, f"add `{key}: {_EXAMPLE_TIMESTAMP}` (ISO 8601, UTC).")
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
    recorded = parse_memory_path(raw)
    if isinstance(recorded, Failure):
        raise _problem("path", f"`path`: {recorded.failure().message}")
    return recorded.value_or(None)


def _memory_values(
    data: Mapping[str, object], content: str, store: str, path: MemoryPath | None, default_id: str | None
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
        "created_at": _required_timestamp("created_at", data),
        "updated_at": _required_timestamp("updated_at", data),
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
) -> Result[ParsedMemory, FrontmatterError]:
    """Read a memory file. ``store``/``path`` say where it lives (they win over the file);
    ``default_id`` is the id to give a hand-written file without one (reindex); without it a
    missing id is MISSING_FIELD. Never raises for a bad file: every problem is a Failure.
    """
    return split_frontmatter(text).bind(
        lambda parts: load_block(parts[0]).bind(lambda data: _read(data, parts[1], store, path, default_id))
    )


def _read(
    data: Mapping[str, object], content: str, store: str, path: MemoryPath | None, default_id: str | None
) -> Result[ParsedMemory, FrontmatterError]:
    """The memory and unknown keys of a loaded block and its content."""
    try:
        values = _memory_values(data, content, store, path, default_id)
    except _FieldProblem as problem:
        return Failure(problem.error)
    extra = {key: value for key, value in data.items() if key not in KNOWN_KEYS}
    return _build(values).map(lambda memory: ParsedMemory(memory, extra))
