"""Test helper: a real Chroma server (`chroma run`) in a subprocess, as a context manager and a session fixture."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from attrs import frozen

STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
HOST = "127.0.0.1"


@frozen
class ChromaServer:
    """Where a running test server listens."""

    host: str
    port: int


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def chroma_executable() -> Path:
    return Path(sys.executable).parent / "chroma"


def _wait_for_heartbeat(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    url = f"http://{HOST}:{port}/api/v2/heartbeat"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"chroma run exited with {process.returncode}: {log.read_text(errors='replace')[-2000:]}"
            )
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(
        f"chroma run did not answer within {STARTUP_TIMEOUT_S} s: {log.read_text(errors='replace')[-2000:]}"
    )


def stop_chroma(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


def start_chroma(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    """Start `chroma run` on `port` with its data in `data_dir` and wait until it answers (a restart: the same
    folder and port again); the caller stops it (`_stop`) or kills it."""
    executable = chroma_executable()
    if not executable.exists():
        pytest.skip(f"no chroma executable at {executable}")
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "chroma-server.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(executable), "run", "--path", str(data_dir / "data"), "--host", HOST, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_heartbeat(process, port, log)
    except BaseException:
        stop_chroma(process)
        raise
    return process


@contextlib.contextmanager
def running_chroma(data_dir: Path) -> Iterator[ChromaServer]:
    """Start `chroma run` on a free port with its data in `data_dir`; stop (or kill) it on exit."""
    port = free_port()
    process = start_chroma(data_dir, port)
    try:
        yield ChromaServer(HOST, port)
    finally:
        stop_chroma(process)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One Chroma server for the whole test session; tests keep apart by using unique collection names."""
    with running_chroma(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server
