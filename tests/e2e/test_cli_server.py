"""The local memory server under faults: stale sockets, SIGKILL, other builds, killed clients, races, idle, modes."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import MEMORY, MemoryCli, server_directory, server_processes

pytestmark = pytest.mark.slow

BOUND_S = 120  # the longest any poll below waits for a state before the test fails (never a timing assertion)


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


USER_TMP = Path("/tmp") / f"agent-memory-{os.getuid()}"  # the sockets' last resort, as tmux and ssh-agent do


@pytest.fixture
def served(tmp_path: Path) -> Iterator[MemoryCli]:
    made = MemoryCli(tmp_path, "chroma", mode="served")
    yield made
    made.stop_servers()


def status(cli: MemoryCli) -> dict[str, object]:
    return cli.ok("server", "status")  # type: ignore[no-any-return]


def pid_of(cli: MemoryCli) -> int:
    found = status(cli)
    assert found["status"] == "running", found
    return found["pid"]  # type: ignore[return-value]


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, waiting for its parent to reap it


def contents(cli: MemoryCli) -> set[str]:
    return {line["content"] for line in map(json.loads, cli("export").stdout.splitlines()) if "content" in line}


def test_the_socket_is_owner_only_and_one_server_serves_many_calls(served: MemoryCli) -> None:
    first = served.ok("create", "first")
    pid = pid_of(served)
    assert served.ok("get", first["id"])["content"] == "first"
    assert pid_of(served) == pid
    where = Path(str(status(served)["socket"]))
    assert stat.S_ISSOCK(where.stat().st_mode)
    assert stat.S_IMODE(where.stat().st_mode) == 0o600
    assert stat.S_IMODE(where.parent.stat().st_mode) == 0o700
    # in the user's state directory, unless its path is too long for a socket (tests under xdist have long paths)
    assert where.parent in (server_directory(served.data_dir.parent), USER_TMP)
    log = Path(str(status(served)["log"])).read_text()
    assert "serving on" in log and f"'data_dir': '{served.data_dir}'" in log  # the store it opened


def test_a_home_too_deep_for_a_socket_still_gets_its_server(tmp_path: Path) -> None:
    deep = MemoryCli(tmp_path / ("deep-" * 16), "files", mode="served")
    try:
        made = deep.ok("create", "served from a deep directory")
        where = Path(str(status(deep)["socket"]))
        assert len(os.fsencode(server_directory(deep.data_dir.parent) / where.name)) > 100  # it could not live there
        assert where.parent == USER_TMP
        assert stat.S_IMODE(USER_TMP.stat().st_mode) == 0o700 and USER_TMP.stat().st_uid == os.getuid()
        assert stat.S_IMODE(where.stat().st_mode) == 0o600
        assert len(server_processes(deep.data_dir)) == 1
        assert deep.ok("get", made["id"])["content"] == "served from a deep directory"
    finally:
        deep.stop_servers()


def test_server_list_shows_this_homes_server_only_and_no_other_user_reaches_it(tmp_path: Path) -> None:
    """Issue 50: two HOMEs of one uid on one machine each list their own server, never the other's; a process of
    another uid can neither connect to a socket nor read the registry of servers."""
    mine, theirs = (MemoryCli(tmp_path / name, "files", mode="served") for name in ("mine", "theirs"))
    try:
        for cli in (mine, theirs):
            cli.ok("create", "a note")
        for cli, other in ((mine, theirs), (theirs, mine)):
            listed = cli.ok("server", "list")
            assert [server["pid"] for server in listed["servers"]] == [pid_of(cli)] and listed["count"] == 1
            assert listed["servers"][0]["directory"] == str(server_directory(cli.data_dir.parent))
            assert pid_of(other) not in [server["pid"] for server in listed["servers"]]
            text = cli("server", "list", "--format", "text").stdout
            assert text.startswith("1 memory server\n") and str(pid_of(other)) not in text
        sockets = [Path(str(status(cli)["socket"])) for cli in (mine, theirs)]
        for where in sockets:
            assert stat.S_IMODE(where.stat().st_mode) == 0o600 and where.stat().st_uid == os.getuid()
            assert stat.S_IMODE(where.parent.stat().st_mode) == 0o700
        registry = USER_TMP / "servers"
        assert stat.S_IMODE(registry.stat().st_mode) == 0o700 and stat.S_IMODE(USER_TMP.stat().st_mode) == 0o700
        system_python = Path("/usr/bin/python3")  # one the other user may run (a venv's may sit in root's HOME)
        if os.getuid() != 0 or not system_python.exists():
            return  # only root can run a process as another user
        probe = (
            "import socket, sys, os\n"
            "for where in sys.argv[2:]:\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    try:\n"
            "        s.connect(where); print('reached', where)\n"
            "    except OSError as e: print('refused', e.errno)\n"
            "try: print('listed', os.listdir(sys.argv[1]))\n"
            "except OSError as e: print('unlisted', e.errno)\n"
        )
        ran = subprocess.run(
            [str(system_python), "-I", "-c", probe, str(registry), *map(str, sockets)],
            user=65534, group=65534, extra_groups=[], capture_output=True, text=True, check=False, timeout=60,
            cwd="/",
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split() == ["refused", "13", "refused", "13", "unlisted", "13"], ran.stdout
    finally:
        mine.stop_servers()
        theirs.stop_servers()


def test_status_and_stop(served: MemoryCli) -> None:
    assert status(served)["status"] == "stopped"
    served.ok("create", "a note")
    pid = pid_of(served)
    assert served.ok("server", "stop")["stopped"] == [{"pid": pid, "exited": True}]
    assert status(served)["status"] == "stopped"
    assert gone(pid)
    assert served.ok("server", "stop") == {"stopped": []}


def test_the_server_mirrors_its_stores_in_the_background(served: MemoryCli) -> None:
    # written without the server: the store is opened (and its mirror read) by the search below, which is the
    # server's first command; a create through it would open the store, and start the read, before it writes
    served.ok("--no-server", "create", "the heron nests by the lake")
    served.ok("--no-server", "create", "tea is brewed at four")
    found = served.ok("search", "heron")  # a search finds no mirror (none, or still being built): Chroma answers
    assert found["results"][0]["content"] == "the heron nests by the lake"
    log = Path(str(status(served)["log"]))
    wait_until(lambda: "mirrored collection" in log.read_text(), "the background build's log line")
    assert "2 memories" in log.read_text()
    assert served.ok("search", "tea")["results"][0]["content"] == "tea is brewed at four"


def test_a_stale_socket_file_is_replaced(served: MemoryCli) -> None:
    where = Path(str(status(served)["socket"]))
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(where))
    stale.close()  # the file stays; nothing listens: what a crashed server leaves
    assert served.ok("create", "after a stale socket")["content"] == "after a stale socket"
    assert status(served)["status"] == "running"


def test_a_server_killed_with_sigkill_is_restarted_and_keeps_every_acknowledged_write(served: MemoryCli) -> None:
    made = [served.ok("create", f"acknowledged {n}")["id"] for n in range(3)]
    pid = pid_of(served)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: gone(pid), "the killed server exited")
    made.append(served.ok("create", "after the kill")["id"])
    assert pid_of(served) != pid
    assert [served.ok("get", ref)["id"] for ref in made] == made
    assert contents(served) == {"acknowledged 0", "acknowledged 1", "acknowledged 2", "after the kill"}


def test_a_client_of_another_process_environment_keeps_the_server(served: MemoryCli) -> None:
    """The process-wide environment (here PYTHONDONTWRITEBYTECODE and an activated virtualenv) is no part
    of a server's identity: another shell's variables never send it away (another build does: test_server_sessions)."""
    made = served.ok("create", "before")
    old = pid_of(served)
    other = served("get", made["id"], env={"PYTHONDONTWRITEBYTECODE": "1", "VIRTUAL_ENV": "/elsewhere/.venv"})
    assert other.code == 0, other.stderr
    assert json.loads(other.stdout)["content"] == "before"
    assert server_processes(served.data_dir) == [old]


def test_a_server_speaking_another_protocol_is_replaced(served: MemoryCli) -> None:
    """What a later version's server answers a protocol-1 client: a refusal; the client starts its own server."""
    where = Path(str(status(served)["socket"]))
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    foreign = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    foreign.bind(str(where))
    foreign.listen(8)

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = foreign.accept()
                with connection:
                    connection.makefile("rb").readline()
                    connection.sendall(b'{"refused": "protocol", "message": "this server speaks protocol 2"}\n')

    threading.Thread(target=answer, daemon=True).start()
    try:
        assert served.ok("create", "through a new server")["content"] == "through a new server"
        assert pid_of(served) != os.getpid()
    finally:
        foreign.close()


def test_a_client_killed_mid_request_leaves_nothing_half_done_and_the_server_keeps_serving(served: MemoryCli) -> None:
    served.ok("create", "opens the store")
    pid = pid_of(served)
    lock = served.data_dir / "locks" / "chroma" / "default.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the server's create now waits for this store's write lock
        client = subprocess.Popen([str(MEMORY), "create", "sent by a killed client"], env=served.env)
        wait_until(lambda: status(served).get("requests_active") == 1, "the server runs the create")
        client.kill()
        client.wait()
    # a client that sends half a request, then one that sends nothing, are dropped
    for partial in (b'{"protocol": 1, "op": "ru', b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as raw:
            raw.connect(str(status(served)["socket"]))
            raw.sendall(partial)
    # its create ran once the lock was free, found the client gone and was taken back out: a retry stores it once
    assert contents(served) == {"opens the store"}
    assert pid_of(served) == pid


def test_eight_concurrent_clients_writing_lose_nothing(served: MemoryCli) -> None:
    clients = [
        subprocess.Popen([str(MEMORY), "create", f"shell {n}"], env=served.env, stdout=subprocess.PIPE, text=True)
        for n in range(8)
    ]
    ids = [json.loads(client.communicate(timeout=300)[0])["id"] for client in clients]
    assert all(client.returncode == 0 for client in clients)
    assert len(set(ids)) == 8
    assert contents(served) == {f"shell {n}" for n in range(8)}
    assert len(server_processes(served.data_dir)) == 1


def test_two_clients_racing_to_start_it_start_one_server(served: MemoryCli) -> None:
    assert server_processes(served.data_dir) == []
    racers = [
        subprocess.Popen([str(MEMORY), "search", "anything"], env=served.env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    for racer in racers:
        assert json.loads(racer.communicate(timeout=300)[0]) == {"results": [], "count": 0}
    assert len(server_processes(served.data_dir)) == 1


def test_an_idle_server_stops_itself(tmp_path: Path) -> None:
    idle = MemoryCli(tmp_path, "files", {"MEMORY_SERVER_IDLE_SECONDS": "0.5"}, mode="served")
    idle.ok("create", "then nothing")
    wait_until(lambda: server_processes(idle.data_dir) == [], "the idle server stopped")
    assert status(idle)["status"] == "stopped"
    (log,) = server_directory(tmp_path).glob("*.log")
    assert "idle for 0.5 s" in log.read_text()
    assert idle.ok("search", "then nothing")["count"] == 1  # and the next command starts one again
    idle.stop_servers()


@pytest.mark.parametrize(
    "how",
    [{"args": ["--no-server"]}, {"env": {"MEMORY_SERVER": "off"}}, {"config": 'server = "off"\n'}],
    ids=["flag", "environment", "config-file"],
)
def test_no_server_runs_in_process(served: MemoryCli, how: dict[str, object]) -> None:
    if "config" in how:
        Path(served.env["MEMORY_CONFIG"]).write_text(str(how["config"]))
        del served.env["MEMORY_SERVER"]  # the environment would win over the file
    ran = served("create", "in-process", *how.get("args", []), env=how.get("env"))  # type: ignore[arg-type]
    assert ran.code == 0, ran.stderr
    assert server_processes(served.data_dir) == []
    assert not server_directory(served.data_dir.parent).exists()


def test_no_server_can_be_made_so_the_command_runs_in_process(served: MemoryCli) -> None:
    server_directory(served.data_dir.parent).parent.mkdir(parents=True)
    server_directory(served.data_dir.parent).write_text("a file where the server's directory would go")
    assert served.ok("create", "still stored")["content"] == "still stored"
    assert server_processes(served.data_dir) == []


def test_relative_paths_are_the_clients_own(served: MemoryCli, tmp_path: Path) -> None:
    served.ok("create", "exported and imported")
    here = tmp_path / "work"
    here.mkdir()
    run = {"env": served.env, "cwd": here, "capture_output": True, "text": True, "timeout": 300}
    exported = subprocess.run([str(MEMORY), "export", "--output", "out.jsonl"], check=False, **run)  # type: ignore[call-overload]
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["output"] == "out.jsonl"
    assert "exported and imported" in (here / "out.jsonl").read_text()
    missing = subprocess.run([str(MEMORY), "import", "absent.jsonl"], check=False, **run)  # type: ignore[call-overload]
    assert (missing.returncode, missing.stdout) == (1, "")
    assert json.loads(missing.stderr)["error"] == "Cannot read absent.jsonl: No such file or directory."
    assert status(served)["status"] == "running"


def test_the_client_imports_only_the_standard_library(served: MemoryCli) -> None:
    made = served.ok("create", "warm")
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", str(MEMORY), "get", made["id"]],
        env=served.env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(traced.stdout)["content"] == "warm"
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in traced.stderr.splitlines()
        if line.startswith("import time:")
    }
    imported -= {"", "imported package", "org"}  # the header line; `org`: the stdlib's failed probe for Jython
    site_hooks = {name for name in imported if name.startswith(("__editable__", "_distutils_hack", "sitecustomize"))}
    assert imported - site_hooks - set(sys.stdlib_module_names) == {"agent_memory"}


def test_an_mcp_client_and_four_shells_share_one_qdrant_local_store(tmp_path: Path) -> None:
    """Qdrant local mode admits one process: through the memory server, `memory mcp` and the CLI work at once."""
    from anyio.from_thread import start_blocking_portal
    from mcp.client.stdio import StdioServerParameters

    from tests.e2e.test_mcp import Mcp, stdio_session

    shells = MemoryCli(tmp_path, "qdrant", mode="served")
    params = StdioServerParameters(command=str(MEMORY), args=["mcp"], env=shells.env)
    try:
        with (
            (tmp_path / "mcp.log").open("w") as errlog,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(stdio_session(params, errlog)) as session,
        ):
            mcp = Mcp(portal, session)
            mcp.ok("add_memory", {"path": "notes/from-mcp", "content": "written over MCP"})
            writers = [
                subprocess.Popen([str(MEMORY), "create", f"shell {n}"], env=shells.env, stdout=subprocess.PIPE)
                for n in range(4)
            ]
            assert [writer.wait(timeout=300) for writer in writers] == [0, 0, 0, 0]
            found = mcp.ok("search_memories", {"query": "shell", "limit": 10, "min_confidence": 0})
            assert {m["content"] for m in found["results"]} >= {f"shell {n}" for n in range(4)}
        assert shells.ok("get", "notes/from-mcp")["content"] == "written over MCP"
        assert len(server_processes(shells.data_dir)) == 1
    finally:
        shells.stop_servers()
