"""Through the REST door on a real embedded Chroma: an oversized namespace is refused before storage, and the store lives on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.rest.app import build_app
from agent_memory.entrypoints.settings import load_settings

pytestmark = pytest.mark.slow


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient[Any]]:
    settings = load_settings({"data_dir": str(tmp_path / "data")}, {"HOME": str(tmp_path)}).unwrap()
    service = build_service(settings, embedder=HashingEmbedder()).unwrap()
    with TestClient(build_app(service), base_url="http://127.0.0.1:8080") as test_client:
        yield test_client


@pytest.mark.parametrize("labels", [6_000, 60_000])
def test_a_huge_namespace_is_422_and_the_store_keeps_working(client: TestClient[Any], labels: int) -> None:
    deep = client.post("/memories", json={"content": "deep", "namespace": ["l"] * labels})
    assert deep.status_code == 422 and deep.json()["code"] == "INVALID_INPUT"
    assert "at most 16" in deep.json()["error"]
    fine = client.post("/memories", json={"content": "still works", "namespace": ["user", "alice"]})
    assert fine.status_code == 201, fine.text
    assert client.get(f"/memories/{fine.json()['id']}", params={"namespace": "user/alice"}).status_code == 200
