"""One memory server per user: every data directory and backend of a HOME in one process, each store isolated,
idle stores closed while the server lives (issue 43, item 1)."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import MEMORY, MemoryCli, server_directory, server_processes
from tests.e2e.test_cli_server import pid_of, wait_until

pytestmark = pytest.mark.slow

BACKENDS = ("chroma", "files", "qdrant")


def projects(home: Path) -> dict[str, MemoryCli]:
    """Three projects of one user, each with its own data directory and backend (as per-project `.mcp.json`s)."""
    made = {}
    for backend in BACKENDS:
        cli = MemoryCli(home, backend, mode="served")
        cli.env["MEMORY_DATA_DIR"] = str(home / f"project-{backend}")
        made[backend] = cli
    return made


def on_a_terminal(cli: MemoryCli, *args: str) -> tuple[int, str]:
    """Run `memory` with its stderr on a terminal (as in the quick start); its exit code and what the terminal got."""
    leader, follower = pty.openpty()
    try:
        ran = subprocess.run(
            [str(MEMORY), *args], env=cli.env, stdout=subprocess.PIPE, stderr=follower, timeout=180, check=False
        )
        os.close(follower)
        said = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(leader)
    return ran.returncode, said.decode()


def test_three_data_directories_used_in_turn_run_in_one_server_stay_isolated_and_close_when_idle(
    tmp_path: Path,
) -> None:
    clis = projects(tmp_path)
    try:
        ids = {}
        for backend, cli in clis.items():
            add = ("add", "notes/stack", "--content", f"this project keeps its memory in {backend}")
            if backend == "chroma":  # the user's first command, on a terminal: it says it started a server
                code, said = on_a_terminal(cli, *add)
                assert code == 0
                assert "background server" in said and "memory server stop" in said and said.count("\n") == 1
            else:
                assert on_a_terminal(cli, *add) == (0, "")  # once
            ids[backend] = cli.ok("get", "notes/stack")["id"]
        (pid,) = server_processes(tmp_path / "data")
        for backend, cli in clis.items():
            assert pid_of(cli) == pid
            found = cli.ok("search", "where does this project keep its memory?")["results"]
            assert [hit["content"] for hit in found] == [f"this project keeps its memory in {backend}"]
            assert cli.ok("get", "notes/stack")["id"] == ids[backend]
            for other in set(BACKENDS) - {backend}:
                assert cli.fails("get", ids[other])["code"] == "MEMORY_NOT_FOUND"
            assert cli.ok("status")["memory_count"] == 1
        assert server_processes(tmp_path / "data") == [pid]
        listed = clis["files"].ok("server", "list")["servers"]  # this HOME's servers only (issue 50)
        (server,) = [each for each in listed if each["directory"] == str(server_directory(tmp_path))]
        assert server["pid"] == pid and server["state"] == "serving"
        held = {(store["data_dir"], store["backend"]) for store in server["stores"]}
        assert held == {(str(tmp_path / f"project-{backend}"), backend) for backend in BACKENDS}
        clis["chroma"].stop_servers()
        # a new server, whose stores close after 0.5 s unused (`server_store_idle_seconds`); no second note
        for cli in clis.values():
            cli.env["MEMORY_SERVER_STORE_IDLE_SECONDS"] = "0.5"
        qdrant, files = clis["qdrant"], clis["files"]
        assert on_a_terminal(qdrant, "get", ids["qdrant"]) == (0, "")
        restarted = pid_of(qdrant)
        assert restarted != pid
        # closed once idle: its folder lock is given back, so a command without the server opens it
        wait_until(lambda: qdrant.ok("server", "status")["stores"] == [], "the idle store closed")
        direct = qdrant("get", ids["qdrant"], "--no-server")
        assert direct.code == 0, direct.stderr
        assert json.loads(direct.stdout)["content"] == "this project keeps its memory in qdrant"
        # the server goes on, serves another data directory, and opens the closed store again at its next use
        assert files.ok("create", "kept in files")["content"] == "kept in files"
        assert qdrant.ok("get", ids["qdrant"])["id"] == ids["qdrant"]
        status = qdrant.ok("server", "status")
        assert status["pid"] == restarted and status["stores_closed"] >= 1
        assert "closed {'data_dir'" in Path(str(status["log"])).read_text()
    finally:
        clis["chroma"].stop_servers()
