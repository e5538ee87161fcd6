"""A live MCP session is never broken by another caller: the environment never replaces its server, another build
starts a server beside it and the old one drains (issue 29)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent_memory
from tests.e2e.conftest import MEMORY, MemoryCli, server_directory, server_processes
from tests.e2e.test_cli_server import gone, pid_of, wait_until

pytestmark = pytest.mark.slow

# what a user's other shells bring: an activated virtualenv, Python's own variables, a proxy and its CA file
OTHER_ENVIRONMENTS: list[dict[str, str]] = [
    {"VIRTUAL_ENV": "/home/someone/project/.venv", "PATH": f"/home/someone/project/.venv/bin:{os.environ['PATH']}"},
    {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "7", "PYTHONWARNINGS": "ignore"},
    {"HTTPS_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9", "SSL_CERT_FILE": "/etc/ssl/none.pem"},
]


@contextlib.contextmanager
def mcp_session(shells: MemoryCli, log: Path) -> Iterator[object]:
    """The official MCP client holding `memory mcp` over stdio, started with the minimal environment a desktop
    client gives it."""
    from anyio.from_thread import start_blocking_portal
    from mcp.client.stdio import StdioServerParameters

    from tests.e2e.test_mcp import Mcp, stdio_session

    params = StdioServerParameters(command=str(MEMORY), args=["mcp"], env=shells.env)
    with (
        log.open("w") as errlog,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_session(params, errlog)) as session,
    ):
        yield Mcp(portal, session)


@contextlib.contextmanager
def another_build() -> Iterator[None]:
    """The installed package changes on disk, as an upgrade or an edited checkout does: clients from now on are of
    another build (the newest module time is part of it)."""
    module = Path(agent_memory.__file__).with_name("_version.py")
    before = module.stat()
    later = time.time_ns() + 3_600_000_000_000
    os.utime(module, ns=(later, later))
    try:
        yield
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_cli_calls_from_other_environments_leave_a_live_mcp_session_and_its_server_alone(tmp_path: Path) -> None:
    shells = MemoryCli(tmp_path, "chroma", mode="served")
    try:
        with mcp_session(shells, tmp_path / "mcp.log") as mcp:
            mcp.ok("add_memory", {"path": "notes/from-mcp", "content": "written over MCP"})  # type: ignore[attr-defined]
            server = pid_of(shells)
            for n, extra in enumerate(OTHER_ENVIRONMENTS):
                created = shells("create", f"shell {n}", env=extra)
                assert created.code == 0, created.stderr
                found = shells("get", "notes/from-mcp", env=extra)
                assert found.code == 0, found.stderr
                assert found.json["content"] == "written over MCP"
                assert server_processes(shells.data_dir) == [server]
            # the same build however it is started: `python -m`, `python3 -m`, the venv's python under each of its
            # names, and `memory` again, all reach the session's server (issue 43)
            for python in sorted(MEMORY.parent.glob("python*")):
                ran = subprocess.run(
                    [str(python), "-m", "agent_memory", "get", "notes/from-mcp"],
                    env=shells.env,
                    capture_output=True,
                    text=True,
                    timeout=180,
                    check=False,
                )
                assert ran.returncode == 0 and "written over MCP" in ran.stdout, (python, ran.stderr)
                assert server_processes(shells.data_dir) == [server], python
            assert shells("get", "notes/from-mcp").code == 0 and server_processes(shells.data_dir) == [server]
            hits = mcp.ok("search_memories", {"query": "shell", "limit": 10, "min_confidence": 0})  # type: ignore[attr-defined]
            assert {m["content"] for m in hits["results"]} >= {"shell 0", "shell 1", "shell 2"}
            log = Path(str(shells.ok("server", "status")["log"]))
            wait_until(lambda: "mirrored collection" in log.read_text(), "the background mirror's log line")
        assert "SERVER_LOST" not in (tmp_path / "mcp.log").read_text()
        # each line of the server's log once, in its own format (the MCP SDK's logging set-up adds no copy)
        assert log.read_text().count("mirrored collection") == 1, log.read_text()
    finally:
        shells.stop_servers()


def test_another_build_starts_beside_a_live_session_and_the_old_server_drains(tmp_path: Path) -> None:
    shells = MemoryCli(tmp_path, "chroma", mode="served")
    try:
        with mcp_session(shells, tmp_path / "mcp.log") as mcp:
            mcp.ok("add_memory", {"path": "notes/before", "content": "before the upgrade"})  # type: ignore[attr-defined]
            old = pid_of(shells)
            data_dir = str(shells.data_dir)
            with another_build():
                assert shells.ok("create", "written by the new build")["content"] == "written by the new build"
                new = pid_of(shells)
                assert new != old
                assert sorted(server_processes(shells.data_dir)) == sorted([old, new])  # the old one drains
                # both servers write the one store: each sees the other's writes
                mcp.ok("add_memory", {"path": "notes/during", "content": "written over MCP meanwhile"})  # type: ignore[attr-defined]
                assert shells.ok("get", "notes/during")["content"] == "written over MCP meanwhile"
                hits = mcp.ok("search_memories", {"query": "new build", "limit": 5, "min_confidence": 0})  # type: ignore[attr-defined]
                assert "written by the new build" in {m["content"] for m in hits["results"]}
                # at once, through both servers: the store's write locks hold across the two processes
                writers = [
                    subprocess.Popen([str(MEMORY), "add", f"race/cli-{n}", "--content", f"cli {n}"], env=shells.env)
                    for n in range(3)
                ]
                for n in range(3):
                    mcp.ok("add_memory", {"path": f"race/mcp-{n}", "content": f"mcp {n}"})  # type: ignore[attr-defined]
                assert [writer.wait(timeout=300) for writer in writers] == [0, 0, 0]
                raced = {f"race/{side}-{n}" for side in ("cli", "mcp") for n in range(3)}
                listed_by_mcp = mcp.ok("list_memories", {"category": "race", "limit": 50})  # type: ignore[attr-defined]
                assert {m["path"] for m in listed_by_mcp["memories"]} == raced
                assert {m["path"] for m in shells.ok("list", "race")["memories"]} == raced
                assert pid_of(shells) == new
                ours = str(server_directory(tmp_path))  # the list has this HOME's servers only (issue 50)
                listed = {s["pid"]: s for s in shells.ok("server", "list")["servers"] if s["directory"] == ours}
                assert {pid: s["state"] for pid, s in listed.items()} == {old: "draining", new: "serving"}
                # each holds the store open: the old one for its session, the new one for the commands
                for pid in (old, new):
                    assert [(s["data_dir"], s["backend"]) for s in listed[pid]["stores"]] == [(data_dir, "chroma")]
                assert listed[old]["stores"][0]["sessions"] == 1
                assert listed[old]["sessions"] == 1 and listed[new]["clients"] == 0
                assert all(s["rss_mb"] > 0 for s in listed.values())
        wait_until(lambda: gone(old), "the drained server exited when its last session ended")
        assert "SERVER_LOST" not in (tmp_path / "mcp.log").read_text()
        assert server_processes(shells.data_dir) == [new]
    finally:
        shells.stop_servers()


def test_another_build_beside_a_session_on_qdrant_local_mode_is_never_refused(tmp_path: Path) -> None:
    """Qdrant's local mode admits one process: while a session holds it, the old server runs the newer build's
    commands itself (a successor could open nothing), then leaves the place once the session ends (issue 43)."""
    shells = MemoryCli(tmp_path, "qdrant", mode="served")
    try:
        with mcp_session(shells, tmp_path / "mcp.log") as mcp:
            mcp.ok("add_memory", {"path": "notes/before", "content": "before the upgrade"})  # type: ignore[attr-defined]
            old = pid_of(shells)
            with another_build():
                for n in range(2):
                    created = shells("create", f"written by the new build {n}")
                    assert created.code == 0, created.stderr
                assert shells.ok("get", "notes/before")["content"] == "before the upgrade"
                assert server_processes(shells.data_dir) == [old]
                mcp.ok("add_memory", {"path": "notes/during", "content": "written over MCP meanwhile"})  # type: ignore[attr-defined]
                assert shells.ok("get", "notes/during")["content"] == "written over MCP meanwhile"
        with another_build():
            wait_until(lambda: gone(old), "the old server leaving once its session ended")
            assert len(shells.ok("list", "--limit", "10")["memories"]) == 4
            assert pid_of(shells) != old and len(server_processes(shells.data_dir)) == 1
    finally:
        shells.stop_servers()


def test_stop_all_also_ends_a_draining_server_of_this_data_directory(tmp_path: Path) -> None:
    from agent_memory.entrypoints.cli import client as cli_client

    shells = MemoryCli(tmp_path, "chroma", mode="served")
    shells.ok("create", "opens the store")
    old = pid_of(shells)
    args = cli_client._parse(["mcp"])
    place = cli_client.resolve_place(args, shells.env)
    request = cli_client.build_request("mcp", ["mcp"], args, place, shells.env)
    held = cli_client._exchange(place, request, until_stream=True)  # a live MCP session at the wire level
    assert held.kind == "done", held
    try:
        with another_build():
            assert shells.ok("create", "through the successor")["content"] == "through the successor"
            new = pid_of(shells)
            assert sorted(server_processes(shells.data_dir)) == sorted([old, new])
            stopped = shells.ok("server", "stop", "--all")["stopped"]
        assert {(e["pid"], e.get("draining", False), e["exited"], e.get("killed", False)) for e in stopped} == {
            (new, False, True, False),
            (old, True, True, False),  # SIGTERM ends a draining server's sessions: no SIGKILL needed
        }
        assert held.message["reader"].read1(65536) == b""  # the session was ended, as `stop` ends sessions
        assert server_processes(shells.data_dir) == []
    finally:
        held.message["connection"].close()
        shells.stop_servers()
