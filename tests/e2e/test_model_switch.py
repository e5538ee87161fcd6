"""Switching the embedding model (decision 20): a store built with one model refuses another with an error naming
`memory reindex`, and reindex moves it to the new model losing nothing, on every embedded backend (in-process)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from attrs import frozen
from returns.result import Failure

from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY
from agent_memory.adapters.qdrant.catalog import QdrantCatalog
from agent_memory.domain.commands import CreateMemory, SearchMemories
from agent_memory.domain.errors import ErrorCode
from agent_memory.domain.ports import Embedder
from agent_memory.domain.service import MemoryService
from agent_memory.entrypoints.bootstrap import build_embedder, build_service
from agent_memory.entrypoints.settings import Settings, load_settings

pytestmark = pytest.mark.slow  # loads the real MiniLM graph (twice: two model identities)

FACTS = (
    "The user prefers Python for data work.",
    "Sam's birthday party is on the ninth of June.",
    "The flat's heating was repaired on Tuesday.",
)


def model_directory(root: Path, **config: object) -> Path:
    """The shipped MiniLM files under another declared configuration: another model identity, cheaply."""
    root.mkdir(parents=True)
    for name in ("model.onnx", "tokenizer.json"):
        os.symlink(SHIPPED_DIRECTORY / name, root / name)
    (root / "embedding.json").write_text(
        json.dumps({"name": "minilm-prefixed", "dimension": 384, "max_tokens": 256, **config}), encoding="utf-8"
    )
    return root


def settings_for(data_dir: Path, embedder: str, backend: str) -> Settings:
    flags = {"data_dir": str(data_dir), "backend": backend, "embedder": embedder}
    return load_settings(flags, {"HOME": str(data_dir)}).unwrap()


@frozen
class Models:
    """The shipped model and a model directory (the same graph with a query prefix: its own identity)."""

    shipped: Embedder
    other: Embedder
    other_setting: str


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    """Both models built from their settings once per module, so that each graph loads once."""
    directory = str(model_directory(tmp_path_factory.mktemp("models") / "prefixed", query_prefix="query: "))
    home = tmp_path_factory.mktemp("unused")
    return Models(
        shipped=build_embedder(settings_for(home, "minilm", "chroma")).unwrap(),
        other=build_embedder(settings_for(home, directory, "chroma")).unwrap(),
        other_setting=directory,
    )


@contextmanager
def opened(data_dir: Path, backend: str, embedder: Embedder, setting: str) -> Iterator[MemoryService]:
    service = build_service(settings_for(data_dir, setting, backend), embedder=embedder).unwrap()
    try:
        yield service
    finally:
        if isinstance(service.catalog, QdrantCatalog):
            service.catalog.close()  # qdrant local mode admits one client per folder


@pytest.mark.parametrize("backend", ["chroma", "files", "qdrant"])
def test_a_store_of_another_model_names_reindex_and_reindex_moves_it_losing_nothing(
    tmp_path: Path, backend: str, models: Models
) -> None:
    old, new, path = models.shipped, models.other, models.other_setting
    assert old.name != new.name and new.name.startswith("minilm-prefixed@")
    with opened(tmp_path, backend, old, "minilm") as service:
        created = service.create_many([CreateMemory(content=fact, tags=("kept",)) for fact in FACTS]).unwrap()
        ids = [view.memory.id for view in created]
        service.delete(ids[2]).unwrap()  # a soft-deleted memory is part of the store too

    with opened(tmp_path, backend, new, path) as service:
        refused = service.search(SearchMemories(query="which language for data?"))
        assert isinstance(refused, Failure)
        error = refused.failure()
        assert error.code is ErrorCode.EMBEDDING_MISMATCH
        assert "memory reindex" in error.message and old.name in error.message and new.name in error.message

        report = service.reindex().unwrap()
        assert report.memory_count == len(FACTS) and report.embedding_model == new.name
        for memory_id, fact in zip(ids[:2], FACTS, strict=False):
            kept = service.get(memory_id).unwrap().memory
            assert kept.content == fact and kept.tags == ("kept",)
        assert service.get(ids[2]).failure().code is ErrorCode.MEMORY_NOT_FOUND  # still deleted, not revived
        found = service.search(SearchMemories(query="which language does the user like for data?", limit=1)).unwrap()
        assert [hit.memory.id for hit in found.results] == [ids[0]]

    with opened(tmp_path, backend, old, "minilm") as service:
        back = service.search(SearchMemories(query="heating"))
        assert isinstance(back, Failure) and back.failure().code is ErrorCode.EMBEDDING_MISMATCH
