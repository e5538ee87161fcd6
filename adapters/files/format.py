"""The file format's syntax: a '---' line, a YAML block, '---', the content verbatim; one YAML dumper for every block.

When parsing, the file must start with a line that is exactly ``---`` (ended by ``\\n`` or ``\\r\\n``; one leading
UTF-8 BOM is ignored); the block ends at the first following line that is exactly ``---`` (again ``\\n`` or
``\\r\\n``), and everything after that line's line break is the content, verbatim: leading and trailing newlines,
blank lines, ``---`` lines, CRLF and unicode all round-trip. The block is a YAML mapping read with
PyYAML's safe loader only (libyaml's parser when available), and written by `dump_block` (libyaml's emitter
when available), which double-quotes multi-line strings so that no line of a block is ever a bare ``---``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any

from attrs import frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    import yaml

DELIMITER = "---"
EXAMPLE_TIMESTAMP = "2026-11-22T04:13:35Z"
_BOM = "\ufeff"
_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
# libyaml's parser when PyYAML was built with it (its wheels are): the same safe constructors and resolvers,
# about 10× faster to read a block, which is most of a cold start of a store of many files. It recurses in C
# over nested flow collections (100,000 '[' crash the process), so a block with many brackets is read by the
# Python parser, which refuses deep nesting with an error. PyYAML is imported on first use: a start that
# finds every file in the store's read cache never parses YAML.
_FAST_LOADER: Any = None  # None: libyaml's CSafeLoader when PyYAML has it (PyYAML ships no type stubs)
_FAST_LOADER_MAX_BRACKETS = 256  # far above any memory's block (tags, citations, namespace are short lists)


def _loader_for(block: str) -> Any:
    """The C loader for an ordinary block, the Python one where nesting could be deep."""
    import yaml

    if block.count("[") + block.count("{") > _FAST_LOADER_MAX_BRACKETS:
        return yaml.SafeLoader
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader) if _FAST_LOADER is None else _FAST_LOADER


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


def to_domain_error(err: FrontmatterError, path: str | None) -> DomainError:
    """The domain's INVALID_INPUT error for a file that could not be parsed (cause: the format code)."""
    return DomainError(ErrorCode.INVALID_INPUT, f"{err.code.value}: {err.message}", path=path, cause=err.code.value)


# --- write ----------------------------------------------------------------------------------------


class UtcTimestamp(str):
    """A timestamp already formatted as ISO 8601 UTC with 'Z': written as a plain YAML timestamp."""


@cache
def _block_dumper() -> Any:
    """SafeDumper that writes our timestamps unquoted and any multi-line string double-quoted.

    Double quotes escape every line break, so no line of the block can ever be a bare ``---``.
    """
    import yaml

    # libyaml's emitter when PyYAML has it: the same representers, so the same YAML (a check of 20,000 random
    # strings found no difference), about 4× faster, which matters to a batch of writes
    base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

    class BlockDumper(base):  # type: ignore[misc]  # PyYAML ships no type stubs
        pass

    BlockDumper.add_representer(UtcTimestamp, _represent_timestamp)
    BlockDumper.add_representer(str, _represent_str)
    return BlockDumper


def _represent_timestamp(dumper: yaml.SafeDumper, value: UtcTimestamp) -> Any:
    return dumper.represent_scalar(_TIMESTAMP_TAG, str(value))


def _represent_str(dumper: yaml.SafeDumper, value: str) -> Any:
    style = '"' if any(brk in value for brk in _LINE_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with a 'Z', microseconds only when non-zero: 2026-11-22T04:13:35.123456Z."""
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def dump_block(data: Mapping[str, object], body: str) -> str:
    """A file: '---', `data` as YAML in its own key order, '---', then `body` exactly as is."""
    import yaml

    block = yaml.dump(
        dict(data),
        Dumper=_block_dumper(),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=2**31 - 1,
    )
    return f"{DELIMITER}\n{block}{DELIMITER}\n{body}"


def with_id(text: str, memory_id: str) -> str | None:
    """The file with an `id:` line added right after its opening '---', everything else byte for byte."""
    bom = _BOM if text.startswith(_BOM) else ""
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


# --- read: the file's layout ----------------------------------------------------------------------


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


# --- read: the YAML block -------------------------------------------------------------------------


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
            f"like {EXAMPLE_TIMESTAMP}.",
            key,
        )
    return FrontmatterError(
        FrontmatterErrorCode.INVALID_FRONTMATTER,
        f"A value in the frontmatter cannot be read ({type(error).__name__}: {error}): check dates, explicit "
        "`!!` tags and nesting, and put plain text values in quotes.",
    )


def _key_of_bad_timestamp(block: str) -> tuple[str | None, int | None]:
    """The top-level key whose unquoted timestamp cannot be built, found on the composed (unbuilt) node tree."""
    import yaml

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
    import yaml

    try:
        data = yaml.load(block, Loader=_loader_for(block))  # a safe loader, C or Python
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


def read_block(text: str) -> Result[tuple[dict[str, object], str], FrontmatterError]:
    """A file's block as a mapping and its content."""
    return split_frontmatter(text).bind(lambda pieces: load_block(pieces[0]).map(lambda data: (data, pieces[1])))
