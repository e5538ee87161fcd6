"""The CLI's progress bar: one redrawn line on a terminal, silent on a pipe, for create --jsonl, import and reindex;
a terminal's stderr reaches the client as it is written."""

from __future__ import annotations

import base64
import io
import json
from functools import partial
from pathlib import Path

import pytest
from returns.result import Success

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.progress import EMBED_SLICE
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli.in_process import run
from agent_memory.entrypoints.cli.progress_bar import ProgressBar
from agent_memory.entrypoints.cli.server.protocol import LIVE_STDERR
from agent_memory.entrypoints.cli.server.streams import client_stderr, client_text
from tests.isolation import empty_config


def fresh(clock: FixedClock) -> MemoryService:
    return MemoryService(catalog=InMemoryCatalog(embedder_name="hashing-bow"), embedder=HashingEmbedder(), clock=clock)


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_bar_redraws_one_line_with_count_percent_rate_and_eta() -> None:
    now = [0.0]
    screen = Terminal()
    bar = ProgressBar("import", screen, clock=lambda: now[0])
    now[0] = 2.0
    bar(50, 200)
    now[0] = 4.0
    bar(200, 200)
    first, second = screen.getvalue().split("\r")[1:]
    assert first.startswith("import [######..................]") and "50/200" in first and " 25%" in first
    assert "25.0/s" in first and "ETA 0:06" in first and "\n" not in first
    assert "200/200" in second and "100%" in second and "in 0:04" in second and second.endswith("\n")
    bar.end()  # the line is already ended: nothing more
    assert screen.getvalue().endswith("in 0:04\n")


def test_a_bar_the_command_stopped_short_of_is_ended_with_a_newline() -> None:
    screen = Terminal()
    bar = ProgressBar("create", screen, clock=lambda: 0.0)
    bar(3, 10)
    bar.end()
    assert screen.getvalue().endswith("3/10   30%\n")


def served(service: MemoryService, _settings: object) -> Success[MemoryService]:
    return Success(service)


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    lines = [json.dumps({"content": f"memory {i}"}) for i in range(EMBED_SLICE + 6)]
    path = tmp_path / "batch.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_create_jsonl_import_and_reindex_draw_the_bar_only_on_a_terminal(
    tty: bool, jsonl: Path, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"MEMORY_CONFIG": empty_config(tmp_path), "MEMORY_DATA_DIR": str(tmp_path / "data")}
    source, target = fresh(clock), fresh(clock)
    exported = tmp_path / "export.jsonl"
    steps = [
        (source, ["create", "--jsonl", str(jsonl)], "create ["),
        (source, ["export", "--output", str(exported)], None),
        (target, ["import", str(exported)], "import ["),
        (target, ["reindex"], "reindex default ["),
    ]
    for service, argv, bar in steps:
        stderr, stdout = Terminal() if tty else io.StringIO(), io.StringIO()
        monkeypatch.setattr("sys.stderr", stderr)
        monkeypatch.setattr("sys.stdout", stdout)
        assert run(argv, env=env, services=partial(served, service)) == 0, stderr.getvalue()
        json.loads(stdout.getvalue())  # stdout is the command's JSON, whatever stderr is
        if bar is None:
            continue
        if tty:
            drawn = stderr.getvalue()
            assert drawn.startswith("\r" + bar) and f"{EMBED_SLICE + 6}/{EMBED_SLICE + 6}" in drawn
            assert drawn.endswith("\n") and drawn.count("\n") == 1
        else:
            assert stderr.getvalue() == ""


def test_a_terminal_stderr_on_the_server_is_sent_as_it_is_written_and_a_pipes_is_kept() -> None:
    sent: list[bytes] = []
    terminal = client_text(client_stderr(True, sent.append), ["utf-8", "backslashreplace", True], "backslashreplace")
    assert terminal.isatty()
    terminal.write("\rcreate [....] 1/4")
    terminal.flush()
    assert [json.loads(line) for line in sent] == [{LIVE_STDERR: base64.b64encode(b"\rcreate [....] 1/4").decode()}]
    pipe = client_stderr(False, sent.append)
    pipe.write(b'{"error": "..."}\n')
    assert len(sent) == 1 and not pipe.isatty() and pipe.getvalue() == b'{"error": "..."}\n'
