"""Bad input through the CLI: each a clear JSON error on stderr with exit 1, or a correct result; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import MemoryCli

pytestmark = pytest.mark.slow


# each case on every CLI variant, in one test per variant: one memory server per variant, not one per case (a
# served case costs a server start and stop, several seconds of CI; none of them writes, so they share a store)
BAD_ARGUMENTS = [
    (["create", "x", "--decay", "forever"], "Unknown decay policy 'forever'"),
    (["create", "x", "--format", "yaml"], "invalid choice: 'yaml'"),
    (["create", ""], "Content is empty"),
    (["create", "   "], "Content is empty"),
    (
        ["create", "x", "--expires-at", "9999-12-31T23:59:59-14:00"],
        "in the years 0001–9999 (UTC)",
    ),  # was INTERNAL_ERROR
    (["search", "x", "--limit", "many"], "invalid int value"),
    (["search", "x", "--limit", "0"], "limit must be between"),
    (["search", "x", "--min-confidence", "2"], "min-confidence must be between 0 and 1"),
    (["get"], "the following arguments are required"),
    (["frobnicate"], "invalid choice"),
    (["create", "x", "--backend", "mongo"], "Unknown backend 'mongo'"),
    (["create", "x", "--store", "../etc"], "Invalid store name"),
    (["add", "../../etc/passwd", "--content", "x"], "a path can never leave its store"),
]


def test_bad_arguments_are_json_errors(cli: MemoryCli) -> None:
    wrong = []
    for args, words in BAD_ARGUMENTS:
        error = cli.fails(*args)  # exit 1, nothing on stdout, no traceback
        well_formed = set(error) == {"error", "code"} and words in error["error"]
        if not well_formed or error["code"] not in {"INVALID_INPUT", "INVALID_PATH"}:
            wrong.append((args, error))
    assert wrong == [], "each case's words in a JSON error coded INVALID_INPUT or INVALID_PATH"


def test_a_malformed_id_is_not_found(cli: MemoryCli) -> None:
    for command in ("get", "reinforce", "delete"):
        assert cli.fails(command, "not a uuid at all") == {"error": "Memory not found", "code": "MEMORY_NOT_FOUND"}


def test_traversal_on_reads_is_invalid_path(cli: MemoryCli) -> None:
    # issue 12: reads answered MEMORY_NOT_FOUND for a path that can never be in a store
    for bad in ("../../etc/passwd",):
        for args in (["get", bad], ["delete", bad], ["move", bad, "notes/y"], ["update", bad, "--content", "x"]):
            assert cli.fails(*args)["code"] == "INVALID_PATH", args


def test_oversized_content_is_refused_and_stores_nothing(cli: MemoryCli) -> None:
    error = cli.fails("create", "-", stdin="x" * 200_000)  # argv cannot carry 200 KB: stdin can
    assert "the limit is 100000" in error["error"]
    assert cli.ok("status")["memory_count"] == 0


def test_content_just_under_the_limit_and_unicode_are_stored_exactly(cli: MemoryCli) -> None:
    big = ("Grüße 🌍 数据 " * 12_000)[:100_000]
    created = cli.ok("create", "-", stdin=big)
    assert cli.ok("get", created["id"])["content"] == big
    emoji = cli.ok("create", "Nutzer mag 🐍 und — «guillemets» \u200b zero-width")
    assert cli.ok("get", emoji["id"])["content"] == "Nutzer mag 🐍 und — «guillemets» \u200b zero-width"


def test_a_broken_config_file_is_a_json_error(cli: MemoryCli, tmp_path: object) -> None:
    config = cli.env["MEMORY_CONFIG"]
    with open(config, "w", encoding="utf-8") as handle:
        handle.write("backend = = chroma\n")
    assert "Cannot read the config file" in cli.fails("status")["error"]


def test_a_bad_environment_value_is_a_json_error(cli: MemoryCli) -> None:
    assert "CHROMADB_PORT must be a whole number" in cli.fails("status", env={"CHROMADB_PORT": "eighty"})["error"]
    missing_model = cli.fails("search", "x", env={"MEMORY_EMBEDDER": str(cli.data_dir.parent / "no-such-model")})
    assert missing_model["code"] == "INVALID_INPUT" and "no-such-model does not exist" in missing_model["error"]


def test_text_that_is_not_utf8_is_invalid_input_and_stores_nothing(cli: MemoryCli, tmp_path: Path) -> None:
    # found by bench/fuzz.py: bytes that are not UTF-8 reached the tokenizer and came back as INTERNAL_ERROR
    not_utf8 = "caf\udce9"  # b"caf\xe9" on the command line (Python decodes argv with surrogateescape)
    for args in (["create", not_utf8], ["add", "notes/a", "--content", not_utf8], ["search", not_utf8]):
        error = cli.fails(*args)
        assert error["code"] == "INVALID_INPUT" and "not valid UTF-8" in error["error"], args
    lines = tmp_path / "bad.jsonl"
    lines.write_bytes(b'{"content": "caf\xe9"}\n')
    assert "not valid UTF-8" in cli.fails("import", str(lines))["error"]
    assert "not valid UTF-8" in cli.fails("create", "--jsonl", str(lines))["error"]
    assert "lone surrogate" in cli.fails("create", "--jsonl", "-", stdin='{"content": "a\\ud800"}\n')["error"]
    assert "lone surrogate" in cli.fails("import", "-", stdin='{"content": "a\\ud800"}\n')["error"]
    assert cli.ok("status")["memory_count"] == 0
