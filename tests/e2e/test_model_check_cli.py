"""A model directory that computes garbage is refused by the `memory` command with a JSON error saying what to do;
a sound one passes its check once and the verdict is kept in the data directory's cache (issue 40, item 5)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY
from tests.e2e.conftest import MemoryCli
from tests.onnx_graphs import one_point_graph

pytestmark = pytest.mark.slow  # three `memory` processes, one loading the real MiniLM


def model_dir(root: Path, graph: Path) -> Path:
    root.mkdir(parents=True)
    os.symlink(graph, root / "model.onnx")
    os.symlink(SHIPPED_DIRECTORY / "tokenizer.json", root / "tokenizer.json")
    (root / "embedding.json").write_text(json.dumps({"name": "checked", "dimension": 384}), encoding="utf-8")
    return root


def test_a_broken_model_directory_is_refused_on_the_cli_and_a_sound_one_passes_once(tmp_path: Path) -> None:
    broken = model_dir(tmp_path / "broken", one_point_graph(tmp_path / "one-point.onnx"))
    sound = model_dir(tmp_path / "sound", SHIPPED_DIRECTORY / "model.onnx")
    cli = MemoryCli(tmp_path / "home", "chroma")
    verdicts = cli.data_dir / "cache" / "model-checks"

    error = cli.fails("create", "The user prefers dark mode.", env={"MEMORY_EMBEDDER": str(broken)})
    assert error["code"] == "EMBEDDING_ERROR" and str(broken) in error["error"]
    assert "fails its check on this machine" in error["error"]
    assert "fp32" in error["error"] and 'embedder = "minilm"' in error["error"]
    assert len(list(verdicts.glob("*.json"))) == 1  # its verdict is kept: the next call is refused without a run

    again = cli.fails("search", "dark mode", env={"MEMORY_EMBEDDER": str(broken)})
    assert again["error"] == error["error"]

    created = cli("create", "The user prefers dark mode.", env={"MEMORY_EMBEDDER": str(sound)})
    assert created.code == 0, created.stderr
    passed = [json.loads(path.read_text(encoding="utf-8")) for path in verdicts.glob("*.json")]
    assert sorted(verdict["passed"] for verdict in passed) == [False, True]
