"""Issue 41: the README's short tour runs as written. Each command of its code block, in order, is run with the real
`memory` command in a fresh HOME and data directory, the id the first command prints standing in for `<id>`, and
every one exits 0."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.e2e.conftest import MemoryCli

pytestmark = [pytest.mark.slow, pytest.mark.server]

README = Path(__file__).resolve().parents[2] / "README.md"


def tour() -> list[list[str]]:
    """The tour's commands, each as its words: comments dropped, `a ; b` two commands."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A short tour") :]
    found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert found is not None, "no sh block in the README's tour"
    commands: list[list[str]] = []
    for line in found.group(1).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
        lexer.whitespace_split = True  # words as a shell splits them; '#' starts a comment
        words: list[str] = []
        for word in [*lexer, ";"]:
            if word == ";":
                commands += [words] if words else []
                words = []
            else:
                words.append(word)
    return commands


def test_the_readme_tour_runs_in_order_and_every_command_succeeds(tmp_path: Path) -> None:
    commands = tour()
    assert [words[0] for words in commands] == ["memory"] * len(commands)
    assert ["memory", "reinforce", "<id>"] in commands and ["memory", "restore", "<id>"] in commands
    cli = MemoryCli(tmp_path, "chroma", mode="served")  # as a user runs it: through the local memory server
    try:
        first_id: str | None = None
        for words in commands:
            args = [first_id if word == "<id>" and first_id else word for word in words[1:]]
            assert "<id>" not in args, f"{shlex.join(words)} runs before any command printed an id"
            ran = cli(*args)
            assert ran.code == 0, f"`{shlex.join(words)}` failed: {ran.stderr}"
            assert "Traceback" not in ran.stderr
            answer = json.loads(ran.stdout.splitlines()[0]) if ran.stdout.strip() else {}
            if first_id is None and isinstance(answer, dict) and "id" in answer:
                first_id = answer["id"]
            if words[1] == "restore" and words[2] == "<id>":
                assert answer["id"] == first_id and answer["deleted"] is False  # the same memory, back
    finally:
        cli.stop_servers()
