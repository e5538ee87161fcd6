"""Progress of batch create, import and reindex over fakes (monotone, ending at the total; a raising callback writes
nothing), and the CLI's bar: drawn on a terminal, silent on a pipe."""

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
from agent_memory.domain.commands import CreateMemory
from agent_memory.domain.progress import EMBED_SLICE, Count, embedded
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.cli.direct import run
from agent_memory.entrypoints.cli.progress_bar import ProgressBar
from agent_memory.entrypoints.cli.server.protocol import LIVE_STDERR
from agent_memory.entrypoints.cli.server.streams import client_stderr, client_text
from tests.isolation import empty_config


class Seen:
    """A Progress that keeps every report."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def __call__(self, done: int, total: int) -> None:
        self.calls.append((done, total))


class Stop(Exception):
    """What a Progress that must not be trusted raises."""


def stop(_done: int, _total: int) -> None:
    raise Stop


def fresh(clock: FixedClock, embedder: HashingEmbedder | None = None) -> MemoryService:
    catalog = InMemoryCatalog(embedder_name=(embedder or HashingEmbedder()).name)
    return MemoryService(catalog=catalog, embedder=embedder or HashingEmbedder(), clock=clock)


def assert_reported(calls: list[tuple[int, int]], done: list[int]) -> None:
    """Reported as it went (the counts grow to the total), every time against the same total."""
    assert calls == [(count, done[-1]) for count in done]


def batch(count: int) -> list[CreateMemory]:
    """`count` memories over two stores (the second one smaller), so a report crosses from one store to the next."""
    return [CreateMemory(content=f"memory {i}", store="a" if i < count * 2 // 3 else "b") for i in range(count)]


def test_batch_create_reports_each_slice_up_to_the_total(clock: FixedClock) -> None:
    seen, count = Seen(), 2 * EMBED_SLICE + 10
    fresh(clock).create_many(batch(count), progress=seen).unwrap()
    first_store = count * 2 // 3  # a slice of the first store, its rest, then the second store whole
    assert_reported(seen.calls, [EMBED_SLICE, first_store, count])


def test_import_reports_each_batch_up_to_the_total(clock: FixedClock) -> None:
    source = fresh(clock)
    source.create_many(batch(300)).unwrap()
    seen = Seen()
    fresh(clock).import_memories(source.export().unwrap(), progress=seen).unwrap()
    assert_reported(seen.calls, [200, 300])  # each store's part is one batch of at most 256


def test_reindex_reports_each_embedded_slice_up_to_the_total(clock: FixedClock) -> None:
    service, seen, count = fresh(clock), Seen(), 2 * EMBED_SLICE + 3
    service.create_many([CreateMemory(content=f"m {i}") for i in range(count)]).unwrap()
    service.reindex(progress=seen).unwrap()
    assert_reported(seen.calls, [EMBED_SLICE, 2 * EMBED_SLICE, count])


def test_a_progress_that_raises_leaves_nothing_written(clock: FixedClock) -> None:
    service = fresh(clock)
    with pytest.raises(Stop):
        service.create_many([CreateMemory(content=f"m {i}") for i in range(3)], progress=stop)
    assert service.export().unwrap() == []
    kept = service.create(CreateMemory(content="kept")).unwrap().memory  # the store's write lock was let go
    with pytest.raises(Stop):
        service.reindex(progress=stop)
    assert [m.id for m in service.export().unwrap()] == [kept.id]


def test_slices_of_like_length_give_each_text_its_own_vector() -> None:
    embedder, seen = HashingEmbedder(), Seen()
    texts = [("word " * (i * 7 % 13)) + f"text {i}" for i in range(EMBED_SLICE + 40)]
    assert embedded(embedder, texts, Count(len(texts), seen)).unwrap() == embedder.embed_documents(texts).unwrap()
    assert_reported(seen.calls, [EMBED_SLICE, len(texts)])


# --- the CLI's bar ---------------------------------------------------------------------------------------------


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
