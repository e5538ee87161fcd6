"""The races of the no-write-lost issue, through the CLI where they were found: 0 lost, 0 reverted, 0 doubled."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import MEMORY, MemoryCli

pytestmark = pytest.mark.slow
BACKENDS = ("chroma", "files")


def start(cli: MemoryCli, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(MEMORY), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    assert "Traceback" not in err
    return process.returncode, out, err


@pytest.mark.parametrize("backend", BACKENDS)
def test_creates_from_one_shell_while_reindex_runs_in_another_are_all_kept(tmp_path: Path, backend: str) -> None:
    cli = MemoryCli(tmp_path, backend)
    for i in range(5):
        cli.ok("create", f"seed {i}")
    script = f'for i in $(seq 1 8); do "{MEMORY}" create "note $i" || exit 1; done'
    creating = subprocess.Popen(
        ["sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env
    )
    reindexing = subprocess.Popen(
        ["sh", "-c", f'for i in 1 2; do "{MEMORY}" reindex || exit 1; done'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.env,
    )
    code, out, err = finish(creating)
    assert code == 0, err
    assert finish(reindexing)[0] == 0
    acknowledged = {json.loads(line)["id"] for line in out.splitlines()}
    exported = {json.loads(line)["id"] for line in cli("export").stdout.split("\n") if line and '"kind"' not in line}
    assert len(acknowledged) == 8 and acknowledged <= exported and len(exported) == 13
    assert cli.ok("status")["status"] == "healthy"


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_shells_updating_one_memory_keep_both_changes(tmp_path: Path, backend: str) -> None:
    cli = MemoryCli(tmp_path, backend)
    memory_id = cli.ok("create", "shared")["id"]
    for round_ in range(2):
        tagging = start(cli, "update", memory_id, "--tag", f"t{round_}")
        sourcing = start(cli, "update", memory_id, "--source", f"s{round_}")
        assert finish(tagging)[0] == 0 and finish(sourcing)[0] == 0
        final = cli.ok("get", memory_id)
        assert (final["tags"], final["source"]) == ([f"t{round_}"], f"s{round_}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_four_shells_adding_at_one_path_leave_one_memory(tmp_path: Path, backend: str) -> None:
    cli = MemoryCli(tmp_path, backend)
    cli.ok("create", "the store exists")
    racers = [start(cli, "add", "notes/same", "--content", f"racer {i}") for i in range(4)]
    results = [finish(racer) for racer in racers]
    winners = [json.loads(out)["id"] for code, out, _ in results if code == 0]
    losers = [json.loads(err)["code"] for code, _, err in results if code != 0]
    assert len(winners) == 1 and losers == ["DESTINATION_EXISTS"] * 3
    listed = cli.ok("list", "notes")["memories"]
    assert [m["id"] for m in listed] == winners
