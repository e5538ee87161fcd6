"""The REST door's OpenAPI says what the server enforces (rest/contract.py): OPTIONS lists every method of a path,
DTO bodies are closed, and the documented patterns agree with what the server accepts and refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.rest import contract
from agent_memory.entrypoints.rest.app import build_app

BASE = "http://127.0.0.1:8080"
METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient[Any]]:
    with TestClient(build_app(service), base_url=BASE) as test_client:
        yield test_client


def concrete(path: str) -> str:
    return path.replace("{ref}", "notes/a").replace("{path}", "notes/description").replace("{name}", "list-stores")


def test_options_answers_every_documented_method_of_each_path(client: TestClient[Any]) -> None:
    # Litestar's own answer kept only the first handler's methods: 4 paths were wrong
    for path, item in client.get("/openapi.json").json()["paths"].items():
        answer = client.options(concrete(path))
        assert answer.status_code == 204
        allowed = {method.strip() for method in answer.headers["allow"].split(",")}
        assert allowed - {"OPTIONS"} == {method.upper() for method in item if method in METHODS}, path


def test_bodies_that_refuse_unknown_fields_say_so(client: TestClient[Any]) -> None:
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    body = document["paths"]["/categories/{path}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert schemas[body["$ref"].rsplit("/", 1)[-1]]["additionalProperties"] is False
    refused = client.put("/categories/notes/description", json={"description": "x", "colour": "red"})
    assert refused.status_code == 400
    closed = [name for name, schema in schemas.items() if schema.get("additionalProperties") is False]
    assert len(closed) >= 8, closed  # every DTO body: memories, update, search, reinforce, move, stores, categories


def test_every_example_matches_its_own_pattern() -> None:
    for schema in (contract.STORE, contract.MEMORY_PATH, contract.REF, contract.CATEGORY):
        for example in schema["examples"]:
            assert re.search(schema["pattern"], example) and len(example) <= schema["maxLength"]


@pytest.mark.parametrize(
    ("schema", "fits", "misfits"),
    [
        (contract.STORE, ["default", "work-notes", "a1"], ["", "Work", "a--b", "-a", "a" * 64]),
        (contract.MEMORY_PATH, ["a/b", "Notes/My Editor", "a/b/c"], ["a", "/a/b", "a//b", "a/./b", "a\\b", "a/é"]),
        (contract.CATEGORY, ["a", "a/b"], ["", "a/", "..", "a/.."]),
        (contract.REF, ["notes/a", "3f2b0c1e-0000-4000-8000-000000000000"], ["", "notes", "a\\b"]),
        (contract.NAMESPACE_TEXT, ["user/u-1", "user"], ["", "/", " / "]),
    ],
)
def test_the_patterns_admit_only_what_the_server_accepts(schema: Any, fits: list[str], misfits: list[str]) -> None:
    # stricter than the server at times (it folds 'é' to 'e'), never looser
    for value in fits:
        assert re.search(schema["pattern"], value) and len(value) <= schema["maxLength"], value
    for value in misfits:
        assert not (re.search(schema["pattern"], value) and len(value) <= schema["maxLength"]), value


def test_a_root_category_is_inside_the_documented_delete_path_and_deleted(client: TestClient[Any]) -> None:
    parameters = client.get("/openapi.json").json()["paths"]["/categories/{path}"]["delete"]["parameters"]
    path = next(parameter for parameter in parameters if parameter["name"] == "path")
    assert re.search(path["schema"]["pattern"], "projects")  # root categories are deleted like any other (issue 41)
    assert client.post("/memories", json={"content": "Old plan", "path": "projects/old-plan"}).status_code == 201
    deleted = client.delete("/categories/projects")
    assert deleted.status_code == 200 and deleted.json()["memory_count"] == 1


def test_what_the_document_refuses_the_server_refuses(client: TestClient[Any]) -> None:
    assert client.post("/memories", json={"content": " "}).status_code == 422  # the pattern needs a non-blank
    assert client.post("/stores", json={"name": "Work"}).status_code == 422
    assert client.post("/search", json={"query": "x", "namespace": []}).status_code == 422  # minItems 1
    assert client.patch("/memories/notes/a", json={}).status_code == 422  # anyOf: something to change
    assert client.post("/search", json={"query": "x", "offset": 995}).status_code == 422  # limit + offset
