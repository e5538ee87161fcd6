"""Tests of the frontmatter format adapter: exact round-trips, kept unknown keys, one error per code."""

from __future__ import annotations

import string
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from agent_memory.adapters.files.format import FrontmatterError, FrontmatterErrorCode, to_domain_error
from agent_memory.adapters.files.frontmatter import KNOWN_KEYS, ParsedMemory, parse_frontmatter, serialize_frontmatter
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.model import Memory
from agent_memory.domain.paths import MemoryPath
from tests import field_examples

ID = "3f2b6a2e-0d8e-4a8b-9c1e-1a2b3c4d5e6f"
T0 = datetime(2026, 11, 22, 4, 13, 35, tzinfo=UTC)
HEADER = f"id: {ID}\ncreated_at: 2026-11-22T04:13:35Z\nupdated_at: 2026-11-22T04:13:35Z\n"


def memory(**changes: object) -> Memory:
    values: dict[str, object] = {"id": ID, "content": "Some text.\n", "created_at": T0, "updated_at": T0}
    return Memory(**(values | changes))  # type: ignore[arg-type]


def parsed(
    text: str, *, store: str = "default", path: MemoryPath | None = None, default_id: str | None = None
) -> ParsedMemory:
    result = parse_frontmatter(text, store=store, path=path, default_id=default_id)
    assert isinstance(result, Success), result
    value: ParsedMemory = result.unwrap()
    return value


def failure(text: str) -> FrontmatterError:
    result = parse_frontmatter(text)
    assert isinstance(result, Failure), result
    error: FrontmatterError = result.failure()
    return error


# --- strategies -------------------------------------------------------------------------------

_printable = st.characters(min_codepoint=32, exclude_categories=["Cs"])
labels = st.text(_printable, min_size=1, max_size=40).filter(str.strip)
label_or_empty = st.one_of(st.just(""), labels)
namespace_labels = labels.filter(lambda s: "/" not in s)
utc_datetimes = st.datetimes(timezones=st.just(UTC))
_content_pieces = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["\n", "\r\n", "---", "---\n", "\n---\n", "...\n", " ", "\t", "\ufeff", "é😀", "# x\n"]),
)
contents = st.lists(_content_pieces, min_size=1, max_size=12).map("".join).filter(str.strip)
slugs = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)
paths = st.one_of(st.none(), st.lists(slugs, min_size=2, max_size=4).map(lambda s: MemoryPath(tuple(s))))
stores = st.sampled_from(["default", "work-notes", "s1"])

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.dates(),
    st.datetimes(),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
extras = st.dictionaries(st.text(max_size=12).filter(lambda k: k not in KNOWN_KEYS), yaml_values, max_size=4)


def memories() -> st.SearchStrategy[Memory]:
    """Every field drawn (tests/field_examples.py), with contents and labels that test the block's syntax."""
    return field_examples.memories(
        content=contents,
        created_at=utc_datetimes,
        updated_at=utc_datetimes,
        store=stores,
        path=paths,
        **{name: label_or_empty for name in ("agent", "personality", "project", "type", "source", "thread")},
        tags=st.lists(labels, max_size=4).map(tuple),
        citations=st.lists(labels, max_size=3).map(tuple),
    )


# --- round trips ------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories(), extras)
def test_serialize_then_parse_gives_back_the_memory_and_the_unknown_keys(
    original: Memory, extra: dict[str, object]
) -> None:
    text = serialize_frontmatter(original, extra)

    result = parsed(text, store=original.store)

    assert result.memory == original
    assert result.memory.content == original.content
    assert result.extra == extra
    assert list(result.extra) == list(extra)


@given(memories(), extras)
def test_the_file_is_delimiters_yaml_then_the_content_verbatim(original: Memory, extra: dict[str, object]) -> None:
    text = serialize_frontmatter(original, extra)

    assert text.startswith("---\n")
    block, separator, content = text[4:].partition("\n---\n")
    assert separator
    assert content == original.content
    assert "---" not in block.split("\n")


def test_timestamps_are_utc_with_z_and_microseconds_only_when_non_zero() -> None:
    text = serialize_frontmatter(memory(created_at=T0.replace(microsecond=123456)))

    assert "created_at: 2026-11-22T04:13:35.123456Z\n" in text
    assert "updated_at: 2026-11-22T04:13:35Z\n" in text


def test_defaults_are_left_out_but_id_timestamps_tags_source_and_citations_are_always_written() -> None:
    block = yaml.safe_load(serialize_frontmatter(memory()).split("---\n")[1])

    assert list(block) == ["id", "created_at", "updated_at", "tags", "source", "citations"]
    assert block["tags"] == [] and block["source"] == "" and block["citations"] == []


def test_global_is_written_as_global_and_the_store_is_never_written() -> None:
    block = yaml.safe_load(serialize_frontmatter(memory(global_=True, store="work")).split("---\n")[1])

    assert block["global"] is True
    assert "global_" not in block and "store" not in block


@pytest.mark.parametrize(
    "value", ["yes", "no", "null", "~", "true", "2026-01-01", "#x", ": ", "a: b", "- x", "1e3", "'", '"']
)
def test_strings_yaml_would_read_as_something_else_round_trip_as_strings(value: str) -> None:
    original = memory(tags=(value,), source=value, citations=(value,), agent=value)

    assert parsed(serialize_frontmatter(original)).memory == original


def test_an_extra_key_that_is_a_known_key_does_not_override_the_memory() -> None:
    text = serialize_frontmatter(memory(), {"id": "not-an-id", "store": "x", "tags": ["y"]})

    assert parsed(text).memory == memory()


@pytest.mark.parametrize(
    "content",
    [
        "\n\nleading newlines",
        "trailing newlines\n\n\n",
        "---\nlooks like a block\n---\n",
        "crlf\r\nlines\r\n",
        "ünï 😀",
    ],
)
def test_content_round_trips_exactly(content: str) -> None:
    assert parsed(serialize_frontmatter(memory(content=content))).memory.content == content


# --- hand-written files -------------------------------------------------------------------------


def test_a_hand_written_file_keeps_its_unknown_keys_through_a_rewrite() -> None:
    hand_written = (
        f"---\nid: {ID}\ncreated_at: 2026-01-05\nupdated_at: 2026-01-06T10:00:00+02:00\n"
        "aliases: [x]\ncustom: {a: 1}\ntags: [python]\n---\n# Title\n\nBody.\n"
    )

    first = parsed(hand_written)
    second = parsed(serialize_frontmatter(first.memory, first.extra))

    assert first.extra == {"aliases": ["x"], "custom": {"a": 1}}
    assert second.extra == first.extra
    assert second.memory == first.memory
    assert first.memory.created_at == datetime(2026, 1, 5, tzinfo=UTC)
    assert first.memory.updated_at == datetime(2026, 1, 6, 8, tzinfo=UTC)
    assert first.memory.content == "# Title\n\nBody.\n"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-01-05", datetime(2026, 1, 5, tzinfo=UTC)),
        ("2026-01-05T10:00:00Z", datetime(2026, 1, 5, 10, tzinfo=UTC)),
        ("2026-01-05T10:00:00+00:00", datetime(2026, 1, 5, 10, tzinfo=UTC)),
        ("2026-01-05T10:00:00.5-01:30", datetime(2026, 1, 5, 11, 30, 0, 500000, tzinfo=UTC)),
        ("2026-01-05 10:00:00", datetime(2026, 1, 5, 10, tzinfo=UTC)),
        ("'2026-01-05T10:00:00Z'", datetime(2026, 1, 5, 10, tzinfo=UTC)),
        ("'2026-01-05T10:00:00'", datetime(2026, 1, 5, 10, tzinfo=UTC)),
    ],
)
def test_timestamps_are_read_in_every_iso_form_and_converted_to_utc(raw: str, expected: datetime) -> None:
    text = f"---\nid: {ID}\ncreated_at: {raw}\nupdated_at: {raw}\n---\ntext"

    created_at = parsed(text).memory.created_at

    assert created_at == expected
    assert created_at.utcoffset() == timedelta(0)


def test_crlf_files_and_a_leading_bom_are_read() -> None:
    text = f"\ufeff---\r\n{HEADER.replace(chr(10), chr(13) + chr(10))}---\r\nline one\r\nline two\r\n"

    assert parsed(text).memory.content == "line one\r\nline two\r\n"


def test_the_location_wins_over_the_recorded_path_and_store() -> None:
    text = f"---\n{HEADER}path: old/place\nstore: other\n---\ntext"
    here = MemoryPath(("new", "place"))

    result = parsed(text, store="work", path=here)

    assert result.memory.path == here
    assert result.memory.store == "work"
    assert result.extra == {}


def test_the_recorded_path_is_used_when_no_location_is_given() -> None:
    text = f"---\n{HEADER}path: Old Place/My Note\n---\ntext"

    assert parsed(text).memory.path == MemoryPath(("old-place", "my-note"))


def test_a_file_without_id_takes_the_default_id() -> None:
    text = "---\ncreated_at: 2026-01-05\nupdated_at: 2026-01-05\n---\ntext"

    assert parsed(text, default_id=ID).memory.id == ID


def test_a_recorded_id_wins_over_the_default_id() -> None:
    other = "11111111-1111-4111-8111-111111111111"

    assert parsed(f"---\n{HEADER}---\ntext", default_id=other).memory.id == ID


def test_null_lists_and_source_read_as_empty() -> None:
    result = parsed(f"---\n{HEADER}tags:\nsource:\ncitations:\n---\ntext")

    assert result.memory.tags == () and result.memory.source == "" and result.memory.citations == ()


def test_the_closing_line_may_end_the_file_but_then_there_is_no_text() -> None:
    error = failure(f"---\n{HEADER}---")

    assert error.code is FrontmatterErrorCode.INVALID_FIELD
    assert error.field == "content"


# --- one malformed file per error code ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "field", "named"),
    [
        ("just text\n", FrontmatterErrorCode.MISSING_FRONTMATTER, None, "'---'"),
        ("\n---\nid: x\n---\ntext", FrontmatterErrorCode.MISSING_FRONTMATTER, None, "first line"),
        ("--- \nid: x\n---\ntext", FrontmatterErrorCode.MISSING_FRONTMATTER, None, "'---'"),
        (f"---\n{HEADER}text without a closing line", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "never closed"),
        ("---\nid: [unclosed\n---\ntext", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "line 3"),
        ("---\nkey: value: other\n---\ntext", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "line 2"),
        ("---\n- a\n- b\n---\ntext", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "mapping"),
        ("---\njust a string\n---\ntext", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "mapping"),
        (f"---\n{HEADER}on: monday\n---\ntext", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "quotes"),
        (
            "---\ncreated_at: 2026-01-05\nupdated_at: 2026-01-05\n---\ntext",
            FrontmatterErrorCode.MISSING_FIELD,
            "id",
            "`id",
        ),
        (
            f"---\nid: {ID}\nupdated_at: 2026-01-05\n---\ntext",
            FrontmatterErrorCode.MISSING_FIELD,
            "created_at",
            "created_at",
        ),
        (
            f"---\nid: {ID}\ncreated_at: 2026-01-05\n---\ntext",
            FrontmatterErrorCode.MISSING_FIELD,
            "updated_at",
            "updated_at",
        ),
        ("---\n---\ntext", FrontmatterErrorCode.MISSING_FIELD, "id", "`id"),
        (
            f"---\nid: {ID}\ncreated_at: yesterday\nupdated_at: 2026-01-05\n---\nx",
            FrontmatterErrorCode.INVALID_TIMESTAMP,
            "created_at",
            "created_at",
        ),
        (
            f"---\nid: {ID}\ncreated_at: 2026-13-45\nupdated_at: 2026-01-05\n---\nx",
            FrontmatterErrorCode.INVALID_TIMESTAMP,
            "created_at",
            "created_at",
        ),
        (
            f"---\nid: {ID}\ncreated_at: 12345\nupdated_at: 2026-01-05\n---\nx",
            FrontmatterErrorCode.INVALID_TIMESTAMP,
            "created_at",
            "created_at",
        ),
        (f"---\n{HEADER}a: !!int abc\n---\nx", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "cannot be read"),
        (f"---\n{HEADER}a: !!bool x\n---\nx", FrontmatterErrorCode.INVALID_FRONTMATTER, None, "cannot be read"),
        (
            f"---\n{HEADER}a: {'[' * 3000}{']' * 3000}\n---\nx",
            FrontmatterErrorCode.INVALID_FRONTMATTER,
            None,
            "nesting",
        ),
        (
            f"---\n{HEADER}a: !!python/object:os.system x\n---\nx",
            FrontmatterErrorCode.INVALID_FRONTMATTER,
            None,
            "line 5",
        ),
        (
            f"---\n{HEADER}expires_at: !!timestamp soon\n---\nx",
            FrontmatterErrorCode.INVALID_TIMESTAMP,
            "expires_at",
            "expires_at",
        ),
        (f"---\n{HEADER}expires_at: soon\n---\nx", FrontmatterErrorCode.INVALID_TIMESTAMP, "expires_at", "expires_at"),
        (f"---\n{HEADER}tags: python\n---\nx", FrontmatterErrorCode.INVALID_TAGS, "tags", "tags"),
        (f"---\n{HEADER}tags: [python, 2026]\n---\nx", FrontmatterErrorCode.INVALID_TAGS, "tags", "tags"),
        (f"---\n{HEADER}tags: ['']\n---\nx", FrontmatterErrorCode.INVALID_TAGS, "tags", "tags"),
        (f"---\n{HEADER}tags: ['{'x' * 300}']\n---\nx", FrontmatterErrorCode.INVALID_TAGS, "tags", "tags"),
        (f"---\n{HEADER}source: [a, b]\n---\nx", FrontmatterErrorCode.INVALID_SOURCE, "source", "source"),
        (f"---\n{HEADER}source: 42\n---\nx", FrontmatterErrorCode.INVALID_SOURCE, "source", "source"),
        (
            f"---\n{HEADER}citations: src/app.py\n---\nx",
            FrontmatterErrorCode.INVALID_CITATIONS,
            "citations",
            "citations",
        ),
        (f"---\n{HEADER}citations: [null]\n---\nx", FrontmatterErrorCode.INVALID_CITATIONS, "citations", "citations"),
        (
            f"---\n{HEADER}decay_policy: forever\n---\nx",
            FrontmatterErrorCode.INVALID_FIELD,
            "decay_policy",
            "decay_policy",
        ),
        (
            "---\nid: not-a-uuid\ncreated_at: 2026-01-05\nupdated_at: 2026-01-05\n---\nx",
            FrontmatterErrorCode.INVALID_FIELD,
            "id",
            "id",
        ),
        (f"---\n{HEADER}global: maybe\n---\nx", FrontmatterErrorCode.INVALID_FIELD, "global", "global"),
        (f"---\n{HEADER}project: 2026\n---\nx", FrontmatterErrorCode.INVALID_FIELD, "project", "project"),
        (f"---\n{HEADER}namespace: [user, '']\n---\nx", FrontmatterErrorCode.INVALID_FIELD, "namespace", "namespace"),
        (f"---\n{HEADER}path: ../escape\n---\nx", FrontmatterErrorCode.INVALID_FIELD, "path", "path"),
        (f"---\n{HEADER}---\n \n\t\n", FrontmatterErrorCode.INVALID_FIELD, "content", "text"),
        (f"---\n{HEADER}---\n{'x' * 100_001}", FrontmatterErrorCode.INVALID_FIELD, "content", "text"),
    ],
)
def test_a_malformed_file_fails_with_its_code_and_a_message_naming_the_fix(
    text: str, code: FrontmatterErrorCode, field: str | None, named: str
) -> None:
    error = failure(text)

    assert error.code is code
    assert error.field == field
    assert named in error.message


def test_a_camel_case_key_gets_a_rename_hint() -> None:
    error = failure(f"---\nid: {ID}\ncreatedAt: 2026-01-05\nupdated_at: 2026-01-05\n---\ntext")

    assert error.code is FrontmatterErrorCode.MISSING_FIELD
    assert "rename it to `created_at`" in error.message


def test_a_file_problem_becomes_an_invalid_input_domain_error() -> None:
    error = to_domain_error(failure("no block"), "notes/a.md")

    assert error.code is ErrorCode.INVALID_INPUT
    assert error.message.startswith("MISSING_FRONTMATTER: ")
    assert error.path == "notes/a.md"


@given(st.text(max_size=200))
def test_parsing_never_raises(text: str) -> None:
    assert isinstance(parse_frontmatter(text), Success | Failure)


@given(st.text(max_size=80))
def test_parsing_any_block_never_raises(block: str) -> None:
    assert isinstance(parse_frontmatter(f"---\n{block}\n---\ntext"), Success | Failure)


def test_unknown_yaml_types_in_extra_survive() -> None:
    text = f"---\n{HEADER}when: 2026-01-05\nstamp: 2026-01-05 10:00:00+02:00\nratio: .inf\n---\ntext"

    first = parsed(text)
    again = parsed(serialize_frontmatter(first.memory, first.extra))

    assert again.extra == first.extra
    assert again.extra["when"] == date(2026, 1, 5)
    assert again.extra["stamp"] == datetime(2026, 1, 5, 10, tzinfo=timezone(timedelta(hours=2)))


def test_an_ordinary_block_is_read_by_libyaml_when_pyyaml_has_it() -> None:
    import yaml

    from agent_memory.adapters.files import format as file_format

    expected = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert file_format._loader_for(f"{HEADER}tags: [a, b]\nnamespace: [user]\n") is expected
    assert file_format._loader_for("a: " + "[" * 300 + "]" * 300) is yaml.SafeLoader


def test_nesting_deep_enough_to_crash_libyaml_is_a_frontmatter_error_not_a_crash() -> None:
    import subprocess
    import sys

    probe = (
        "from agent_memory.adapters.files.frontmatter import parse_frontmatter\n"
        f"text = '---\\n' + {HEADER!r} + 'a: ' + '[' * 100_000 + ']' * 100_000 + '\\n---\\nx'\n"
        "result = parse_frontmatter(text)\n"
        "print(type(result).__name__, result.failure().code if hasattr(result, 'failure') else '')\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # libyaml recursing in C over this killed the process
    assert out.stdout.split()[:1] == ["Failure"]
    assert "INVALID_FRONTMATTER" in out.stdout


@pytest.mark.parametrize(
    "text",
    ["plain", "", " lead", "trail ", "a\nb", "x\r\ny", "\u2028", "\x85", "---", "- a", "a: b", "#x", "yes", "é✓"],
)
def test_blocks_are_written_by_libyaml_as_the_python_emitter_writes_them(text: str) -> None:
    import yaml

    from agent_memory.adapters.files import format as file_format

    dumper = file_format._block_dumper()
    assert issubclass(dumper, getattr(yaml, "CSafeDumper", yaml.SafeDumper))
    data = {
        "id": "x",
        "created_at": file_format.UtcTimestamp(file_format.EXAMPLE_TIMESTAMP),
        "source": text,
        "tags": [text or "t"],
    }
    options = {"sort_keys": False, "allow_unicode": True, "default_flow_style": False, "width": 2**31 - 1}

    class PythonDumper(yaml.SafeDumper):  # type: ignore[misc]
        pass

    PythonDumper.add_representer(file_format.UtcTimestamp, file_format._represent_timestamp)
    PythonDumper.add_representer(str, file_format._represent_str)
    assert yaml.dump(data, Dumper=dumper, **options) == yaml.dump(data, Dumper=PythonDumper, **options)


@pytest.mark.parametrize(
    ("block", "created", "updated"),
    [
        ("", T0, T0),  # neither: the file's modification time
        ("created_at: 2026-01-01T00:00:00Z\n", datetime(2026, 1, 1, tzinfo=UTC), T0),
        ("updated_at: 2026-01-01T00:00:00Z\n", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC)),
        ("created_at: 2027-01-01T00:00:00Z\n", datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)),
    ],
)
def test_a_hand_written_file_without_times_takes_its_modification_time(
    block: str, created: datetime, updated: datetime
) -> None:
    """Issue 29: hand-written files work (README), so missing times are no MISSING_FIELD when the reader knows the
    file's modification time; never an updated_at before created_at."""
    text = f"---\nid: {ID}\n{block}---\nBy hand.\n"
    found = parse_frontmatter(text, default_time=T0)
    assert isinstance(found, Success), found
    assert (found.unwrap().memory.created_at, found.unwrap().memory.updated_at) == (created, updated)
    assert isinstance(parse_frontmatter(text), Failure)  # without a modification time: MISSING_FIELD, as before
