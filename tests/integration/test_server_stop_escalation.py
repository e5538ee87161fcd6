"""`memory server stop` escalates to SIGKILL for a server that neither answers nor exits on SIGTERM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_memory.entrypoints.cli.pump import stop_servers
from agent_memory.entrypoints.cli.server import protocol as wire

# A stand-in for a wedged server: it holds the pid file's lock (what "alive" means), writes its facts like a real
# server, listens on no socket (so it never answers) and ignores SIGTERM.
WEDGED = """
import fcntl, json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
handle = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(handle, fcntl.LOCK_EX)
os.write(handle, json.dumps({"pid": os.getpid(), "socket": sys.argv[2], "backend": "chroma"}).encode())
print("ready", flush=True)
time.sleep(120)
"""


def test_a_server_that_ignores_sigterm_is_killed_and_reported_so(tmp_path: Path) -> None:
    place = wire.Place(tmp_path / "server", tmp_path / "server" / "server-test.sock")
    place.directory.mkdir()
    wedged = subprocess.Popen(
        [sys.executable, "-c", WEDGED, str(place.pid_file), str(place.socket)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert wedged.stdout is not None and wedged.stdout.readline() == "ready\n"
        assert wire.server_alive(place)

        stopped = stop_servers(place, 0.5, everyone=False)

        assert stopped == [{"pid": wedged.pid, "killed": True, "exited": True}]
        assert wedged.wait(timeout=30) == -9  # SIGKILL, not the SIGTERM it ignored
        assert not wire.server_alive(place)
    finally:
        if wedged.poll() is None:
            wedged.kill()
            wedged.wait()


def test_a_server_that_exits_on_sigterm_is_not_killed(tmp_path: Path) -> None:
    place = wire.Place(tmp_path / "server", tmp_path / "server" / "server-test.sock")
    place.directory.mkdir()
    polite = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WEDGED.replace("signal.SIG_IGN", "signal.SIG_DFL"),
            str(place.pid_file),
            str(place.socket),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert polite.stdout is not None and polite.stdout.readline() == "ready\n"

        stopped = stop_servers(place, 5.0, everyone=False)

        assert stopped == [{"pid": polite.pid, "exited": True}]
        assert polite.wait(timeout=30) == -15
    finally:
        if polite.poll() is None:
            polite.kill()
            polite.wait()
