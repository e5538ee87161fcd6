"""A user's model directory (the `embedder` setting given a path): read and checked at the boundary, its identity."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from agent_memory.adapters.in_memory import HashingEmbedder
from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY, ModelSpec, read_model_directory
from agent_memory.adapters.onnx_embedder import OnnxEmbedder, make_embedder
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings

NOMIC_LIKE = {
    "name": "my-model",
    "dimension": 384,
    "pooling": "mean",
    "normalize": True,
    "max_tokens": 256,
    "query_prefix": "search_query: ",
    "document_prefix": "search_document: ",
}


def directory(root: Path, config: Any = None, *, skip: str = "") -> Path:
    """A model directory over the shipped graph and tokenizer (symlinked), with `config` as embedding.json."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "tokenizer.json"):
        if name != skip:
            os.symlink(SHIPPED_DIRECTORY / name, root / name)
    if skip != "embedding.json":
        text = config if isinstance(config, str) else json.dumps(NOMIC_LIKE if config is None else config)
        (root / "embedding.json").write_text(text, encoding="utf-8")
    return root


def spec_of(root: Path) -> ModelSpec:
    result = read_model_directory(root)
    assert isinstance(result, Success), result
    spec: ModelSpec = result.unwrap()
    return spec


def refusal(root: Path) -> DomainError:
    result = read_model_directory(root)
    assert isinstance(result, Failure), result
    error: DomainError = result.failure()
    assert error.code is ErrorCode.INVALID_INPUT and error.path == str(root)
    assert "docs/configuration.md" in error.message
    return error


def test_a_directory_gives_its_settings_and_a_name_ending_in_its_hash(tmp_path: Path) -> None:
    spec = spec_of(directory(tmp_path / "m"))
    assert spec.name.startswith("my-model@") and len(spec.name) == len("my-model@") + 16
    assert (spec.dimension, spec.pooling, spec.max_tokens) == (384, "mean", 256)
    assert (spec.query_prefix, spec.document_prefix) == ("search_query: ", "search_document: ")
    assert spec.model_path == tmp_path / "m" / "model.onnx"
    assert spec_of(directory(tmp_path / "again")).name == spec.name  # same files, same settings: same model


@pytest.mark.parametrize(
    "change",
    [
        {"query_prefix": "query: "},
        {"document_prefix": ""},
        {"pooling": "cls"},
        {"max_tokens": 128},
        {"normalize": False},
    ],
)
def test_every_setting_that_changes_vectors_changes_the_identity(tmp_path: Path, change: dict[str, object]) -> None:
    base = spec_of(directory(tmp_path / "base")).name
    assert spec_of(directory(tmp_path / "changed", {**NOMIC_LIKE, **change})).name != base


def test_the_display_name_alone_does_not_change_the_hash(tmp_path: Path) -> None:
    base = spec_of(directory(tmp_path / "base")).name
    renamed = spec_of(directory(tmp_path / "renamed", {**NOMIC_LIKE, "name": "other"})).name
    assert renamed.split("@")[1] == base.split("@")[1] and renamed != base


def test_another_model_file_is_another_model(tmp_path: Path) -> None:
    base = spec_of(directory(tmp_path / "base")).name
    other = directory(tmp_path / "other", skip="model.onnx")
    (other / "model.onnx").write_bytes(b"another graph")
    assert spec_of(other).name != base


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json", "embedding.json"])
def test_a_missing_file_is_named(tmp_path: Path, missing: str) -> None:
    assert f"has no {missing}" in refusal(directory(tmp_path / "m", skip=missing)).message


def test_a_missing_directory_says_so(tmp_path: Path) -> None:
    assert "does not exist" in refusal(tmp_path / "nowhere").message


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("{not json", "unreadable embedding.json"),
        ("[1, 2]", "not a JSON object"),
        ({**NOMIC_LIKE, "pooling": "max"}, "pooling must be one of mean, cls"),
        ({**NOMIC_LIKE, "dimension": "768"}, "dimension must be"),
        ({**NOMIC_LIKE, "dimension": 0}, "dimension must be"),
        ({k: v for k, v in NOMIC_LIKE.items() if k != "dimension"}, "dimension must be"),
        ({k: v for k, v in NOMIC_LIKE.items() if k != "name"}, "give the model a name"),
        ({**NOMIC_LIKE, "max_tokens": True}, "max_tokens must be"),
        ({**NOMIC_LIKE, "normalize": "yes"}, "normalize must be true or false"),
        ({**NOMIC_LIKE, "query_prefix": None}, "query_prefix must be a string"),
        ({**NOMIC_LIKE, "prefix": "x"}, "unknown key(s) prefix"),
    ],
)
def test_a_bad_embedding_json_says_what_to_fix(tmp_path: Path, config: Any, said: str) -> None:
    assert said in refusal(directory(tmp_path / "m", config)).message


def test_the_setting_takes_a_path_and_builds_without_loading(tmp_path: Path) -> None:
    root = directory(tmp_path / "m")
    built = make_embedder(str(root))
    assert isinstance(built, Success)
    embedder = built.unwrap()
    assert isinstance(embedder, OnnxEmbedder) and not embedder.is_loaded
    assert embedder.name == spec_of(root).name and embedder.dimension == 384
    assert make_embedder("minilm").unwrap().name == "all-MiniLM-L6-v2-int8"  # the default is unchanged


def test_a_bad_directory_in_the_settings_fails_building_the_service(tmp_path: Path) -> None:
    root = directory(tmp_path / "m", {**NOMIC_LIKE, "pooling": "max"})
    settings = load_settings(
        {"data_dir": str(tmp_path / "data")}, {"HOME": str(tmp_path), "MEMORY_EMBEDDER": str(root)}
    )
    built = build_service(settings.unwrap())
    assert isinstance(built, Failure)
    assert built.failure().code is ErrorCode.INVALID_INPUT and "pooling" in built.failure().message
    overridden = build_service(settings.unwrap(), embedder=HashingEmbedder())  # an injected embedder wins
    assert isinstance(overridden, Success)


def test_an_unknown_name_suggests_a_model_directory() -> None:
    result = make_embedder("nomic")
    assert isinstance(result, Failure) and "path of a model directory" in result.failure().message


# --- with the real graph ------------------------------------------------------------------------


@pytest.mark.slow
def test_prefixes_go_where_declared_and_a_wrong_dimension_says_which_to_declare(tmp_path: Path) -> None:
    shipped = OnnxEmbedder()
    prefixed = OnnxEmbedder(spec_of(directory(tmp_path / "p", {**NOMIC_LIKE, "document_prefix": ""})))
    text = "The user prefers Python."
    assert prefixed.embed_documents([text]).unwrap() == shipped.embed_documents([text]).unwrap()
    assert prefixed.embed_query(text).unwrap() == shipped.embed_query("search_query: " + text).unwrap()
    assert prefixed.embed_query(text).unwrap() != shipped.embed_query(text).unwrap()

    cls = OnnxEmbedder(spec_of(directory(tmp_path / "c", {**NOMIC_LIKE, "pooling": "cls", "query_prefix": ""})))
    assert cls.embed_query(text).unwrap() != shipped.embed_query(text).unwrap()

    wide = OnnxEmbedder(spec_of(directory(tmp_path / "w", {**NOMIC_LIKE, "dimension": 768})))
    failed = wide.embed_query(text)
    assert isinstance(failed, Failure) and failed.failure().code is ErrorCode.EMBEDDING_ERROR
    assert '"dimension": 384' in failed.failure().message and str(tmp_path / "w") in failed.failure().message


# --- the model's relevance rule (issue 40) ---------------------------------------------------------------------


def test_a_directory_without_relevance_json_is_uncalibrated_and_the_shipped_model_carries_its_own(
    tmp_path: Path,
) -> None:
    assert spec_of(directory(tmp_path / "m")).relevance is None
    assert OnnxEmbedder(spec_of(directory(tmp_path / "n"))).relevance_rule == UNCALIBRATED
    shipped = json.loads((SHIPPED_DIRECTORY / "relevance.json").read_text(encoding="utf-8"))
    rule = OnnxEmbedder().relevance_rule
    assert rule == RelevanceRule(**{key: value for key, value in shipped.items() if key != "about"})


def test_a_directory_carries_its_relevance_rule_to_the_search_policy(tmp_path: Path) -> None:
    root = directory(tmp_path / "m")
    numbers = {"unrelated": 0.5, "keep": 0.6, "related": 0.8, "floor": 0.65, "spread": None, "alone": 0.7}
    numbers |= {"cover": 0.4, "close": 0.05}  # the evidence a hit needs: words, a similarity of its own, or the best's
    numbers |= {"gap": 0.03, "spared": 1.0, "relative": 1.5, "exempt": 0.5}  # what spares a hit the cuts (issue 48)
    (root / "relevance.json").write_text(json.dumps(numbers), encoding="utf-8")
    assert spec_of(root).relevance == RelevanceRule(**numbers)  # type: ignore[arg-type]
    settings = load_settings({"data_dir": str(tmp_path), "embedder": str(root)}, {"HOME": str(tmp_path)}).unwrap()
    service = build_service(settings).unwrap()
    assert service.policy.relevance == RelevanceRule(**numbers)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "unreadable relevance.json"),
        (json.dumps({"unrelated": 0.1, "keep": 0.3}), "needs numbers unrelated, keep, related and floor"),
        (json.dumps({"unrelated": 0.1, "keep": 0.3, "related": 2, "floor": 0.3}), "0 to 1"),
    ],
)
def test_a_bad_relevance_json_says_what_to_fix(tmp_path: Path, text: str, said: str) -> None:
    root = directory(tmp_path / "m")
    (root / "relevance.json").write_text(text, encoding="utf-8")
    assert said in refusal(root).message
