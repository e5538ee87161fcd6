"""`memory serve` end to end with a token per tenant: the issue's cross-tenant findings, each refused at the door."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import MEMORY
from tests.e2e.test_rest import free_port, server_env, wait_until_healthy

pytestmark = [pytest.mark.slow, pytest.mark.server]

ALICE = {"Authorization": "Bearer tok-alice"}
BOB = {"Authorization": "Bearer tok-bob"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("rest-tenancy")
    port, log = free_port(), home / "server.log"
    env = {**server_env(home), "MEMORY_BACKEND": "files", "MEMORY_API_TOKENS": "tok-alice=user/alice,tok-bob=user/bob"}
    env.pop("MEMORY_API_TOKEN")
    with log.open("wb") as output:
        process = subprocess.Popen([str(MEMORY), "serve", "--port", str(port)], env=env, stdout=output, stderr=output)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(url, process, log)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert "Traceback" not in log.read_text()


def test_a_token_per_tenant_keeps_every_finding_of_the_issue_closed(base: str) -> None:
    with httpx.Client(base_url=base, timeout=120) as client:
        bob = client.post("/memories", headers=BOB, json={"content": "Bob's platypus", "path": "shared/team/plan"})
        assert bob.status_code == 201, bob.text
        bob_id = bob.json()["id"]
        assert bob.json()["namespace"] == ["user", "bob"]
        # search with Bob's namespace, or none, or a parent: never Bob's memory
        for body in ({"query": "platypus"}, {"query": "platypus", "mode": "keyword"}):
            found = client.post("/search", headers=ALICE, json=body)
            assert found.status_code == 200 and bob_id not in found.text
        for namespace in ([], ["user"], ["user", "bob"]):
            refused = client.post("/search", headers=ALICE, json={"query": "platypus", "namespace": namespace})
            assert refused.status_code == 422, refused.text
        for guard in ("", "user", "user/bob"):  # an empty one is refused before the guard's check (issue 50)
            refused = client.get(f"/memories?namespace={guard}", headers=ALICE)
            assert refused.status_code == (400 if guard == "" else 422), refused.text
        # by path: not found, and not Bob's id; the same path is free for Alice
        missing = client.get("/memories/shared/team/plan", headers=ALICE)
        assert missing.status_code == 404 and bob_id not in missing.text
        assert client.post("/memories", headers=ALICE, json={"content": "mine", "path": "shared/team/plan"}).is_success
        # categories, prune and stores stay Alice's
        assert client.delete("/categories/shared/team", headers=ALICE).status_code == 200
        assert client.post("/prune", headers=ALICE, json={"dry_run": True}).json()["count"] == 0
        assert client.get("/stores", headers=ALICE).json()["stores"][0]["memory_count"] == 0
        assert client.get(f"/memories/{bob_id}", headers=BOB).json()["content"] == "Bob's platypus"
        assert client.get("/memories", headers={"Authorization": "Bearer tok-carol"}).status_code == 401
