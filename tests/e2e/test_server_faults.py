"""The local memory server under the faults that need more than a kill: a hung server, a full or read-only disk,
and a client environment the server process does not share."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import MEMORY, MemoryCli, Ran
from tests.e2e.test_cli_server import contents, pid_of, status, wait_until

pytestmark = pytest.mark.slow

PATIENCE = {"MEMORY_SERVER_TIMEOUT_SECONDS": "2"}  # the client's silence limit, shortened from 60 s


@pytest.fixture
def served(tmp_path: Path) -> Iterator[MemoryCli]:
    made = MemoryCli(tmp_path, "chroma", mode="served")
    stopped: list[int] = []
    made.stopped = stopped  # type: ignore[attr-defined]
    try:
        yield made
    finally:
        for pid in stopped:  # a server this test stopped with SIGSTOP goes on, so that it can be stopped for good
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        made.stop_servers()


def freeze(cli: MemoryCli) -> int:
    pid = pid_of(cli)
    cli.stopped.append(pid)  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGSTOP)
    return pid


def run(cli: MemoryCli, *args: str, env: dict[str, str] | None = None) -> Ran:
    """One command that must end well before the old client's 3 x 60 s of waiting on a silent server."""
    done = subprocess.run(
        [str(MEMORY), *args], env={**cli.env, **(env or {})}, capture_output=True, text=True, timeout=60, check=False
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def test_a_stopped_server_gets_a_clear_error_and_server_stop_ends_it(served: MemoryCli) -> None:
    made = served.ok("create", "written before the server hung")
    pid = freeze(served)
    ran = run(served, "get", made["id"], env=PATIENCE)
    assert (ran.code, ran.stdout) == (1, ""), ran.stderr
    error = json.loads(ran.stderr)
    assert error["code"] == "SERVER_UNRESPONSIVE"
    for words in (f"pid {pid}", "did not run", "`memory server stop`", "--no-server", "MEMORY_SERVER_TIMEOUT_SECONDS"):
        assert words in error["error"], error
    assert json.loads(run(served, "server", "status", env=PATIENCE).stdout)["status"] == "not answering"

    stopped = json.loads(run(served, "server", "stop", env=PATIENCE).stdout)["stopped"]
    assert [(entry["pid"], entry["exited"]) for entry in stopped] == [(pid, True)]
    assert served.ok("get", made["id"])["content"] == "written before the server hung"  # on a new server
    assert pid_of(served) != pid


def test_a_server_hung_mid_write_says_so_and_the_write_lands_when_it_resumes(served: MemoryCli) -> None:
    served.ok("create", "opens the store")
    lock = served.data_dir / "locks" / "chroma" / "default.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the server's create now waits for this store's write lock
        client = subprocess.Popen(
            [str(MEMORY), "create", "sent to a server that hangs"],
            env={**served.env, **PATIENCE},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: status(served).get("requests_active") == 1, "the server runs the create")
        time.sleep(4)  # twice the client's patience: the server's heartbeats (every 0.5 s for it) keep it waiting
        assert client.poll() is None, client.communicate()
        pid = freeze(served)
        out, err = client.communicate(timeout=60)
    assert (client.returncode, out) == (1, ""), err
    error = json.loads(err)
    assert error["code"] == "SERVER_UNRESPONSIVE"
    assert "may or may not have taken effect" in error["error"], error
    os.kill(pid, signal.SIGCONT)  # it wakes, takes the lock now free, and finishes the write
    wait_until(lambda: "sent to a server that hangs" in contents(served), "the accepted write landed")
    assert pid_of(served) == pid


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_server_timeout_is_a_clear_error(served: MemoryCli, value: str) -> None:
    for command in (["search", "anything"], ["server", "status"]):
        error = served.fails(*command, env={"MEMORY_SERVER_TIMEOUT_SECONDS": value})
        assert error["code"] == "INVALID_INPUT"
        assert "MEMORY_SERVER_TIMEOUT_SECONDS" in error["error"] or "server_timeout_seconds" in error["error"], error
