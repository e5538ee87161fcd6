"""The LangGraph store's `index`: SqliteStore's `text_fields` is read as `fields`; both, differing, is refused."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import Embeddings

from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.langgraph.store import MemoryStore
from agent_memory.entrypoints.tooling.tool_errors import MemoryToolError

NS = ("docs",)


class Letters(Embeddings):
    """How often each letter a–z occurs: a text and a query with the same letters score 1.0."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(text.lower().count(chr(ord("a") + n))) for n in range(26)]


def test_text_fields_is_honoured_as_fields(service: MemoryService) -> None:
    store = MemoryStore(service, index={"dims": 26, "embed": Letters(), "text_fields": ["title"]})
    assert store.index_config is not None and store.index_config["fields"] == ["title"]
    assert store.index_config["text_fields"] == ["title"]  # readable by SqliteStore's name too (issue 50)
    store.put(NS, "a", {"title": "zebra", "body": "quiet quiet quiet"})
    store.put(NS, "b", {"title": "quiet", "body": "zebra zebra zebra"})
    hits = store.search(NS, query="zebra")
    assert [hit.key for hit in hits] == ["a", "b"]  # the whole value embedded would put b first
    assert hits[0].score == pytest.approx(1.0)


def test_fields_and_a_different_text_fields_are_refused_naming_fields(service: MemoryService) -> None:
    index = {"dims": 26, "embed": Letters(), "fields": ["title"], "text_fields": ["body"]}
    with pytest.raises(MemoryToolError, match="give `fields` only"):
        MemoryStore(service, index=index)
    same = MemoryStore(service, index={**index, "text_fields": ["title"]})
    assert same.index_config is not None and same.index_config["fields"] == ["title"]


def test_index_config_exposes_fields_and_text_fields_as_langgraphs_stores_do(service: MemoryService) -> None:
    """InMemoryStore and PostgresStore keep `fields`, SqliteStore `text_fields`: code written for either reads them."""
    given = MemoryStore(service, index={"dims": 26, "embed": Letters(), "fields": ["body"]})
    assert given.index_config is not None
    assert (given.index_config["fields"], given.index_config["text_fields"]) == (["body"], ["body"])
    default = MemoryStore(service, index={"dims": 26, "embed": Letters()})
    assert default.index_config is not None
    assert (default.index_config["fields"], default.index_config["text_fields"]) == (["$"], ["$"])
