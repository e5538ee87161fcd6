"""The REST door read from the command table: body and query names as the other doors spell them, one operation
per command, and the deprecated spellings that keep older clients working."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from litestar.testing import TestClient

from agent_memory.domain import commands as c
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest import build_app

BASE = "http://127.0.0.1:8080"


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service), base_url=BASE) as test_client:
        yield test_client


def seed(client: TestClient[Any]) -> None:
    for path in ("prefs/editor", "notes/editor"):
        made = client.post("/memories", json={"path": path, "content": "The user prefers vim as editor."})
        assert made.status_code == 201, made.text


def paths(response: Any) -> list[str]:
    assert response.status_code == 200, response.text
    return [hit["path"] for hit in response.json()["results"]]


def schema_of(document: dict[str, Any], route: str, method: str = "post") -> dict[str, Any]:
    reference = document["paths"][route][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema: dict[str, Any] = document["components"]["schemas"][reference.rsplit("/", 1)[-1]]
    return schema


# --- the search's category filter ---------------------------------------------------------------------------------


def test_search_filters_by_category_as_the_cli_and_mcp_call_it(client: TestClient[Any]) -> None:
    seed(client)
    assert paths(client.post("/search", json={"query": "editor", "category": "prefs", "min_confidence": 0})) == [
        "prefs/editor"
    ]


def test_path_prefix_still_filters_as_a_deprecated_alias(client: TestClient[Any]) -> None:
    seed(client)
    assert paths(client.post("/search", json={"query": "editor", "path_prefix": "notes", "min_confidence": 0})) == [
        "notes/editor"
    ]


def test_category_and_path_prefix_at_once_is_400_saying_which_to_keep(client: TestClient[Any]) -> None:
    seed(client)
    both = client.post("/search", json={"query": "editor", "category": "prefs", "path_prefix": "notes"})
    assert both.status_code == 400, both.text
    body = both.json()
    assert body["code"] == "INVALID_INPUT" and "keep `category`" in body["error"]


def test_the_search_body_documents_category_and_deprecates_path_prefix(client: TestClient[Any]) -> None:
    body = schema_of(client.get("/openapi.json").json(), "/search")["properties"]
    command_text = c.field_doc(attrs.fields(c.SearchMemories).path_prefix).text
    assert body["category"]["description"] == command_text and not body["category"].get("deprecated")
    assert body["path_prefix"]["deprecated"] is True
