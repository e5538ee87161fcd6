"""A killed batch is stored whole or not at all (issue 31): `memory create --jsonl` and `memory import` SIGKILLed
mid-write, in process on every backend and through the local server (its client killed, or the server itself).

The kill lands at a fixed point (adapters/shared/stall.py): the batch's memories stored, their words not yet
indexed. Random points, 20 kills per backend, are bench/kill_batches.py's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import BACKENDS, MEMORY, MemoryCli

pytestmark = pytest.mark.slow
LINES = "".join(json.dumps({"content": f"killed batch fact {n}"}) + "\n" for n in range(12))


def stalled(cli: MemoryCli, mark: Path, *args: str, stdin: str, served: bool = False) -> subprocess.Popen[str]:
    """The command started with the stall hook on; returns once a process (it, or its server) stalls mid-batch."""
    env = {**cli.env, "AGENT_MEMORY_STALL_AT": "keywords", "AGENT_MEMORY_STALL_MARK": str(mark)}
    env["MEMORY_SERVER"] = "auto" if served else "off"
    given = mark.with_suffix(".stdin")
    given.write_text(stdin)
    with given.open() as source:
        process = subprocess.Popen(
            [str(MEMORY), *args], stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
    deadline = time.monotonic() + 120
    while not (mark.exists() and mark.read_text()) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), process.communicate()
    return process


def killed(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)


def rolled_back(cli: MemoryCli, size: int) -> None:
    """The next status rolls the batch back and says so; the store holds none of it."""
    ran = cli("status")
    status = json.loads(ran.stdout)
    assert status["memory_count"] == 0, status
    assert status["status"] == "healthy", status  # rolled back: the store works, the warning says what happened
    assert any(f"A batch of {size} memories was interrupted" in warning for warning in status["warnings"]), status


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_create_is_rolled_back_and_a_retry_stores_each_memory_once(backend: str, tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, backend)
    killed(stalled(cli, tmp_path / "mark", "create", "--jsonl", "-", stdin=LINES))
    rolled_back(cli, 12)
    assert cli.ok("create", "--jsonl", "-", stdin=LINES)["count"] == 12
    assert cli.ok("status")["memory_count"] == 12  # twelve, not twelve plus what the killed batch left


def test_a_killed_import_puts_back_what_it_replaced(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files")
    cli.ok("create", "--jsonl", "-", stdin=LINES[: LINES.index("\n") + 1])
    (old,) = [json.loads(line) for line in cli("export").stdout.splitlines() if '"content"' in line]
    changed = {**old, "content": "changed by the import"}
    new = {**old, "id": "00000000-0000-4000-8000-0000000000ff", "content": "new from the import"}
    lines = json.dumps(changed) + "\n" + json.dumps(new) + "\n"
    killed(stalled(cli, tmp_path / "mark", "import", "-", stdin=lines))
    status = json.loads(cli("status").stdout)
    assert status["memory_count"] == 1 and "A batch of 2 memories" in status["warnings"][0]
    assert exported(cli) == {old["id"]: old["content"]}  # the replaced memory as it was, the new one gone
    cli.ok("import", "-", stdin=lines)
    assert exported(cli) == {old["id"]: changed["content"], new["id"]: new["content"]}


def exported(cli: MemoryCli) -> dict[str, str]:
    records = [json.loads(line) for line in cli("export").stdout.splitlines()]
    return {record["id"]: record["content"] for record in records if "id" in record}


def test_a_served_batch_whose_client_is_killed_is_rolled_back(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files", mode="served")
    try:
        mark = tmp_path / "mark"
        killed(stalled(cli, mark, "create", "--jsonl", "-", stdin=LINES, served=True))
        mark.unlink()  # the server goes on, finds its client gone, and takes the batch back out
        status = cli.ok("status")  # answered once the server is done with the batch
        assert status["memory_count"] == 0 and not list((cli.data_dir / "journals" / "files").iterdir())
    finally:
        cli.stop_servers()
    assert cli.ok("create", "--jsonl", "-", stdin=LINES)["count"] == 12
    assert cli.ok("status")["memory_count"] == 12
    cli.stop_servers()


def test_a_server_killed_mid_batch_leaves_nothing_after_the_next_command(tmp_path: Path) -> None:
    cli = MemoryCli(tmp_path, "files", mode="served")
    mark = tmp_path / "mark"
    client = stalled(cli, mark, "create", "--jsonl", "-", stdin=LINES, served=True)
    server = int(mark.read_text())
    assert server != client.pid
    os.kill(server, signal.SIGKILL)
    _, stderr = client.communicate(timeout=60)
    assert client.returncode == 1 and "Traceback" not in stderr
    try:
        rolled_back(cli, 12)
        assert cli.ok("create", "--jsonl", "-", stdin=LINES)["count"] == 12
        assert cli.ok("status")["memory_count"] == 12
    finally:
        cli.stop_servers()
