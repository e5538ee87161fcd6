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
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chroma_server import ChromaServer
from tests.e2e.conftest import MEMORY, MemoryCli, Ran
from tests.e2e.test_cli_server import contents, pid_of, status, wait_until
from tests.e2e.test_disk_faults import fill, read_only, small_disk

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


def test_a_server_hung_mid_write_says_so_and_takes_the_create_back_out_when_it_resumes(served: MemoryCli) -> None:
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
    os.kill(pid, signal.SIGCONT)  # it wakes, takes the lock now free, writes, finds its client gone: rolls back
    wait_until(lambda: status(served).get("requests_active") == 0, "the server is done with the create")
    assert contents(served) == {"opens the store"}  # not kept unacknowledged: a retry cannot store it twice
    assert pid_of(served) == pid


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_server_timeout_is_a_clear_error(served: MemoryCli, value: str) -> None:
    for command in (["search", "anything"], ["server", "status"]):
        error = served.fails(*command, env={"MEMORY_SERVER_TIMEOUT_SECONDS": value})
        assert error["code"] == "INVALID_INPUT"
        assert "MEMORY_SERVER_TIMEOUT_SECONDS" in error["error"] or "server_timeout_seconds" in error["error"], error


def test_a_full_disk_through_the_server_errs_as_in_process_and_the_server_serves_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with small_disk(data):
        cli = MemoryCli(tmp_path, "chroma", mode="served")
        try:
            kept = cli.ok("create", "written while there was room")
            pid = pid_of(cli)
            fill(data)
            too_many = ["create", "a memory too many " * 2000]
            served, direct = cli(*too_many), cli(*too_many, "--no-server")
            assert (served.code, served.stdout) == (direct.code, direct.stdout) == (1, ""), (served, direct)
            # not byte for byte: the warm server fails at the write ("Nothing was written"), a cold process
            # already at opening the store on the full disk; both say what to do
            for ran in (served, direct):
                assert ran.error["code"] in ("STORAGE_ERROR", "BACKEND_UNAVAILABLE")
                assert "the disk is full" in ran.error["error"], ran.error
            assert cli.ok("get", kept["id"])["content"] == "written while there was room"  # reads go on
            (data / "ballast").unlink()
            later = cli.ok("create", "written once there was room again")
            assert pid_of(cli) == pid
            assert contents(cli) == {"written while there was room", "written once there was room again"}
            assert cli.ok("get", later["id"])["id"] == later["id"]
        finally:
            cli.stop_servers()


def test_a_data_directory_on_a_full_disk_gives_the_in_process_answer_through_a_new_server(tmp_path: Path) -> None:
    """The data directory's disk is full before any server starts (the server's own files live in the user's
    state directory, on another disk here): the server starts and answers what the in-process run answers (the
    disk is full), bounded by the subprocess timeout below, never a hang."""
    data = tmp_path / "data"
    with small_disk(data):
        cli = MemoryCli(tmp_path, "files", mode="served")
        try:
            kept = cli.ok("create", "written while there was room", "--no-server")
            fill(data)
            too_many = ["create", "a memory too many " * 2000]
            served, direct = run(cli, *too_many), run(cli, *too_many, "--no-server")
            assert served == direct and served.code == 1, served
            assert "the disk is full" in served.error["error"], served.error
            # a read too (the files backend's index cannot even be opened on a full disk, in-process either)
            assert run(cli, "get", kept["id"]) == run(cli, "get", kept["id"], "--no-server")
            pid = pid_of(cli)
            (data / "ballast").unlink()
            assert cli.ok("create", "and stored once there is room")["content"] == "and stored once there is room"
            assert pid_of(cli) == pid
        finally:
            cli.stop_servers()


def test_a_read_only_data_directory_answers_through_the_server_as_in_process(tmp_path: Path) -> None:
    """The data directory turns read-only (the server's own files live in the user's state directory): reads work
    and writes say the disk is read-only, as in-process, never a hang (bounded by the subprocess timeout)."""
    cli = MemoryCli(tmp_path, "chroma", mode="served")
    kept = cli.ok("create", "written before the disk turned read-only", "--no-server")
    with read_only(cli.data_dir):
        assert run(cli, "get", kept["id"]).json["content"] == "written before the disk turned read-only"
        served, direct = run(cli, "create", "refused"), run(cli, "create", "refused", "--no-server")
        assert served == direct and served.code == 1, (served, direct)
        assert "read-only" in served.error["error"] or "not writable" in served.error["error"], served.error
        assert status(cli)["status"] == "running"
    assert cli.ok("create", "written once it is writable again")["content"] == "written once it is writable again"
    cli.stop_servers()


def test_a_client_behind_another_proxy_gets_the_output_of_its_own_environment(
    tmp_path: Path, chroma_server: ChromaServer
) -> None:
    """HTTP_PROXY is read by the Chroma server's HTTP client when the warm storage is opened: a server started
    without it would answer a client that has it as if it had none."""
    where = {"CHROMADB_HOST": chroma_server.host, "CHROMADB_PORT": str(chroma_server.port)}
    cli = MemoryCli(tmp_path, "chroma", {**where, "MEMORY_COLLECTION": f"e2e-{uuid.uuid4().hex[:12]}"}, mode="served")
    try:
        cli.ok("create", "reached without a proxy")
        proxied = {"HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}  # nothing listens there
        served, direct = (
            run(cli, "search", "proxy", env=proxied),
            run(cli, "search", "proxy", "--no-server", env=proxied),
        )
        assert direct.code == 1, direct  # the in-process run goes through the proxy, and fails
        assert served == direct
        assert cli.ok("search", "proxy")["count"] == 1  # and without it, through a server of its own again
    finally:
        cli.stop_servers()


@pytest.mark.parametrize("variables", [{"TZ": "Asia/Kathmandu"}, {"LANG": "C", "LC_ALL": "POSIX"}, {"COLUMNS": "20"}])
def test_output_does_not_depend_on_the_servers_time_zone_locale_or_width(
    served: MemoryCli, variables: dict[str, str]
) -> None:
    """These stay the server's own (not forwarded, not part of its build): no output depends on them."""
    made = served.ok("add", "notes/timed", "--content", "a note with a time")
    for command in (
        ["get", made["id"], "--format", "text"],
        ["recent", "--format", "text"],
        ["list", "--format", "text"],
    ):
        served_run = run(served, *command, env=variables)
        assert served_run.code == 0, served_run
        assert made["id"] in served_run.stdout or "notes/timed" in served_run.stdout, served_run
        assert served_run == run(served, *command, "--no-server", env=variables)
