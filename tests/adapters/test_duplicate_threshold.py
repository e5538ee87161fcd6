"""The near-duplicate threshold a model carries (its duplicates.json, issue 41), and the settings over it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY
from agent_memory.adapters.onnx_embedder import OnnxEmbedder
from agent_memory.domain.duplicates import DuplicatePolicy
from agent_memory.entrypoints.bootstrap import build_service
from agent_memory.entrypoints.settings import load_settings
from tests.adapters.test_model_directory import directory, refusal, spec_of


def test_the_shipped_model_carries_the_calibrated_threshold_and_a_directory_without_the_file_none(
    tmp_path: Path,
) -> None:
    shipped = json.loads((SHIPPED_DIRECTORY / "duplicates.json").read_text(encoding="utf-8"))
    assert OnnxEmbedder().duplicate_similarity == shipped["similarity"]
    assert 0.5 < shipped["similarity"] < 1.0
    assert spec_of(directory(tmp_path / "m")).duplicate_similarity is None


def test_a_directory_carries_its_threshold(tmp_path: Path) -> None:
    root = directory(tmp_path / "m")
    (root / "duplicates.json").write_text(json.dumps({"similarity": 0.72}), encoding="utf-8")
    assert spec_of(root).duplicate_similarity == 0.72


@pytest.mark.parametrize("text", ["not json", "[]", '{"similarity": 1.5}', '{"similarity": true}', "{}"])
def test_a_bad_duplicates_json_says_what_to_fix(tmp_path: Path, text: str) -> None:
    root = directory(tmp_path / "m")
    (root / "duplicates.json").write_text(text, encoding="utf-8")
    assert "duplicates.json" in refusal(root).message


def test_the_settings_choose_the_policy_and_may_override_the_threshold(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    flags = {"data_dir": str(tmp_path / "data")}
    default = build_service(load_settings(flags, home).unwrap()).unwrap().context.policy
    assert (default.on_duplicate, default.duplicate_similarity) == (
        DuplicatePolicy.KEEP,
        OnnxEmbedder().duplicate_similarity,
    )
    chosen = {**home, "MEMORY_ON_DUPLICATE": "update", "MEMORY_DUPLICATE_SIMILARITY": "0.9"}
    policy = build_service(load_settings(flags, chosen).unwrap()).unwrap().context.policy
    assert (policy.on_duplicate, policy.duplicate_similarity) == (DuplicatePolicy.UPDATE, 0.9)


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("MEMORY_ON_DUPLICATE", "merge", "keep, skip, update"),
        ("MEMORY_DUPLICATE_SIMILARITY", "2", "between 0 and 1"),
        ("MEMORY_DUPLICATE_SIMILARITY", "high", "a number"),
    ],
)
def test_a_bad_setting_is_invalid_input_saying_what_to_give(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    error = load_settings({}, {"HOME": str(tmp_path), variable: value}).failure()
    assert error.code.value == "INVALID_INPUT" and said in error.message
