"""The OpenAPI document exact where the server was stricter or looser (issue 50): exclusive filters, public routes,
query parameters that cannot be null or empty, and what an expiry already past does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from litestar.testing import TestClient

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest.app import build_app

BASE = "http://127.0.0.1:8080"
TOKEN = "s3cret-token"


@pytest.fixture
def secured(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service, api_token=TOKEN), base_url=BASE) as test_client:
        yield test_client


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service), base_url=BASE) as test_client:
        yield test_client


def body_schema(document: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """An operation's request body schema, its components resolved (a validator of the whole document)."""
    ref = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return {"$ref": ref, "components": document["components"]}


def test_the_document_refuses_category_and_path_prefix_together_as_the_server_does(client: TestClient[Any]) -> None:
    schema = body_schema(client.get("/openapi.json").json(), "/search", "post")
    validator = jsonschema.Draft202012Validator(schema)
    for body, status in (
        ({"query": "x", "category": "notes", "path_prefix": "notes"}, 400),
        ({"query": "x", "category": "notes"}, 200),
        ({"query": "x", "path_prefix": "notes"}, 200),
        ({"query": "x", "category": "notes", "path_prefix": None}, 200),
    ):
        assert validator.is_valid(body) == (status == 200), body
        assert client.post("/search", json=body).status_code == status, body


def test_health_is_declared_public_and_answers_without_the_token(secured: TestClient[Any]) -> None:
    document = secured.get("/openapi.json").json()
    assert document["security"] == [{"bearer": []}]
    assert document["paths"]["/health"]["get"]["security"] == []
    assert "security" not in document["paths"]["/memories"]["get"]  # the document's bearer applies
    assert secured.get("/health").status_code == 200
    assert secured.get("/memories").status_code == 401


def test_query_parameters_are_strings_and_an_empty_one_is_refused(client: TestClient[Any]) -> None:
    document = client.get("/openapi.json").json()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query":
                    assert "oneOf" not in parameter["schema"] and parameter["schema"]["type"] != "null", (path, method)
    store = next(p for p in document["paths"]["/memories"]["get"]["parameters"] if p["name"] == "store")
    assert not jsonschema.Draft202012Validator(store["schema"]).is_valid("")
    assert client.post("/memories", params={"store": "work"}, json={"content": "in work"}).status_code == 201
    for path, query in (("/memories", "store="), ("/memories", "namespace="), ("/memories", "category=")):
        refused = client.get(f"{path}?{query}")
        assert refused.status_code == 400 and "without a value" in refused.json()["error"], query
    refused = client.post("/memories?store=", json={"content": "not in the default store"})
    assert refused.status_code == 400 and refused.json()["code"] == "INVALID_INPUT"
    assert client.get("/memories").json()["total"] == 0  # nothing reached the default store


def test_the_document_says_what_an_expiry_already_past_does(client: TestClient[Any]) -> None:
    document = client.get("/openapi.json").json()
    for path, method in (("/memories", "post"), ("/memories/{ref}", "patch")):
        schema = body_schema(document, path, method)
        name = schema["$ref"].rsplit("/", 1)[-1]
        expiry = document["components"]["schemas"][name]["properties"]["expires_at"]
        assert "already past hides it at once" in expiry["description"], path
