"""POST /memories says what it did with a near-duplicate (issue 50): 201 and Location only when a memory was made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from agent_memory.adapters.clock import FixedClock
from agent_memory.adapters.in_memory import HashingEmbedder, InMemoryCatalog
from agent_memory.domain.context import SearchPolicy
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest.app import build_app

BASE = "http://127.0.0.1:8080"
FACT = {"content": "The user prefers dark mode in every editor.", "path": "preferences/theme"}
# the hashing embedder puts a text's exact repeat at similarity 1.0, and these other wordings well under 0.99
THRESHOLD = 0.99


@pytest.fixture
def client(clock: FixedClock) -> Iterator[TestClient[Any]]:
    service = MemoryService(
        catalog=InMemoryCatalog(embedder_name="hashing-bow"),
        embedder=HashingEmbedder(),
        clock=clock,
        policy=SearchPolicy(duplicate_similarity=THRESHOLD),
    )
    with TestClient(build_app(service), base_url=BASE) as test_client:
        yield test_client


def test_a_create_that_finds_no_duplicate_is_201_with_the_location_of_the_new_memory(client: TestClient[Any]) -> None:
    made = client.post("/memories", json=FACT)
    assert made.status_code == 201, made.text
    assert made.headers["location"] == f"/memories/{made.json()['id']}" and "content-location" not in made.headers
    assert "on_duplicate" not in made.json() and "duplicates" not in made.json()


def test_keep_stores_an_exact_repeat_beside_it_201_naming_it(client: TestClient[Any]) -> None:
    first = client.post("/memories", json=FACT).json()
    kept = client.post("/memories", json={"content": FACT["content"], "on_duplicate": "keep"})
    assert kept.status_code == 201, kept.text
    body = kept.json()
    assert body["id"] != first["id"] and body["on_duplicate"] == "kept"
    assert kept.headers["location"] == f"/memories/{body['id']}"
    assert [(d["id"], d["path"], d["similarity"]) for d in body["duplicates"]] == [(first["id"], FACT["path"], 1.0)]
    assert client.get("/memories").json()["total"] == 2


def test_skip_of_an_exact_repeat_is_200_with_the_existing_memory_and_no_location(client: TestClient[Any]) -> None:
    first = client.post("/memories", json=FACT).json()
    skipped = client.post("/memories", json={"content": FACT["content"], "path": "other/place", "on_duplicate": "skip"})
    assert skipped.status_code == 200, skipped.text
    assert "location" not in skipped.headers  # nothing was created
    assert skipped.headers["content-location"] == f"/memories/{first['id']}"
    body = skipped.json()
    assert (body["id"], body["path"], body["on_duplicate"]) == (first["id"], FACT["path"], "skipped")
    assert client.get("/memories").json()["total"] == 1
    assert client.get("/memories/other/place").status_code == 404


def test_update_is_200_with_the_merged_memory_in_its_store(client: TestClient[Any]) -> None:
    first = client.post("/memories", params={"store": "work"}, json=FACT).json()
    again = {"content": FACT["content"], "tags": ["ui"], "on_duplicate": "update"}
    merged = client.post("/memories", params={"store": "work"}, json=again)
    assert merged.status_code == 200, merged.text
    assert "location" not in merged.headers
    assert merged.headers["content-location"] == f"/memories/{first['id']}?store=work"
    assert (merged.json()["id"], merged.json()["on_duplicate"]) == (first["id"], "updated")
    assert client.get(merged.headers["content-location"]).json()["content"] == FACT["content"]


def test_the_document_declares_both_answers_of_a_create(client: TestClient[Any]) -> None:
    answers = client.get("/openapi.json").json()["paths"]["/memories"]["post"]["responses"]
    assert {"200", "201"} <= set(answers)
    assert "on_duplicate" in answers["200"]["description"]
