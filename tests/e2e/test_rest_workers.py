"""Issue 39 item 3: `memory serve --workers N` answers from several processes over one Chroma server, and refuses
several processes over an embedded engine at start-up with what to change."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.chroma_server import ChromaServer
from tests.e2e.conftest import MEMORY
from tests.e2e.test_rest import AUTH, free_port, server_env, wait_until_healthy

CLIENTS = 8
REQUESTS = 48


@pytest.fixture(scope="module")
def two_workers(chroma_server: ChromaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`memory serve --workers 2` over the session's `chroma run`; yields its base URL."""
    home = tmp_path_factory.mktemp("rest-workers-home")
    env = {
        **server_env(home),
        "CHROMADB_HOST": chroma_server.host,
        "CHROMADB_PORT": str(chroma_server.port),
        "MEMORY_COLLECTION": "workers_" + uuid.uuid4().hex[:8],
    }
    port, log = free_port(), home / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(MEMORY), "serve", "--workers", "2", "--port", str(port)], env=env, stdout=output, stderr=output
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, process, log)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    text = log.read_text()
    assert "Traceback" not in text, text
    assert text.count("Finished server process") == 2, text  # both workers shut down cleanly with the supervisor


def test_two_workers_answer_concurrent_requests_and_both_serve(two_workers: str) -> None:
    tag = uuid.uuid4().hex[:8]

    def create(number: int) -> httpx.Response:
        body = {"content": f"worker check {tag} number {number}", "path": f"workers/{tag}-{number}"}
        with httpx.Client(base_url=two_workers, headers=AUTH, timeout=120) as client:
            return client.post("/memories", json=body)

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(create, range(REQUESTS)))
    assert [answer.status_code for answer in answers] == [201] * REQUESTS, [a.text for a in answers if a.is_error]
    pids = {answer.headers["x-memory-worker"] for answer in answers}
    assert len(pids) == 2, pids  # both processes served (the kernel spreads accepted connections over them)
    with httpx.Client(base_url=two_workers, headers=AUTH, timeout=120) as client:
        for worker in range(4):  # every process sees what every other wrote: one engine
            listed = client.get("/memories", params={"category": "workers", "limit": 100})
            assert listed.status_code == 200, listed.text
            paths = {memory["path"] for memory in listed.json()["memories"]}
            assert {f"workers/{tag}-{number}" for number in range(REQUESTS)} <= paths, worker


@pytest.mark.parametrize("backend", ["chroma", "qdrant", "files"])
def test_several_workers_over_an_embedded_engine_are_refused_at_start_up(tmp_path: Path, backend: str) -> None:
    env = {**server_env(tmp_path), "MEMORY_BACKEND": backend}
    done = subprocess.run(
        [str(MEMORY), "serve", "--workers", "3", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    refusal = json.loads(done.stderr)
    assert refusal["code"] == "INVALID_INPUT"
    assert (
        "CHROMADB_HOST" in refusal["error"] and "QDRANT_URL" in refusal["error"] and "--workers 1" in refusal["error"]
    )


def test_a_workers_setting_that_is_not_a_count_is_refused(tmp_path: Path) -> None:
    env = {**server_env(tmp_path), "MEMORY_SERVE_WORKERS": "0"}
    done = subprocess.run(
        [str(MEMORY), "serve", "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "serve_workers" in json.loads(done.stderr)["error"]
