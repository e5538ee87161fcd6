"""A model directory is checked the first time it loads on a machine (issue 40, item 5): a graph that computes
garbage is refused with what to do, a sound one passes, and the verdict is read from the cache after that."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from returns.result import Failure, Success

from agent_memory.adapters import model_check
from agent_memory.adapters.model_check import REFERENCE_FILE, VerdictCache, parse_reference, reference_texts
from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY, read_model_directory
from agent_memory.adapters.onnx_embedder import OnnxEmbedder, make_embedder
from agent_memory.domain.errors import ErrorCode
from tests.onnx_graphs import one_point_graph

MINILM = {"name": "minilm-copy", "dimension": 384, "max_tokens": 256}


def model_dir(root: Path, *, graph: Path | None = None, reference: object = None) -> Path:
    """A model directory over the shipped tokenizer and graph (or `graph`), with `reference` as reference.json."""
    root.mkdir(parents=True)
    os.symlink(graph or SHIPPED_DIRECTORY / "model.onnx", root / "model.onnx")
    os.symlink(SHIPPED_DIRECTORY / "tokenizer.json", root / "tokenizer.json")
    (root / "embedding.json").write_text(json.dumps(MINILM), encoding="utf-8")
    if reference is not None:
        (root / REFERENCE_FILE).write_text(json.dumps(reference), encoding="utf-8")
    return root


def embedder(root: Path, verdicts: Path) -> OnnxEmbedder:
    spec = read_model_directory(root)
    assert isinstance(spec, Success), spec
    return OnnxEmbedder(spec.unwrap(), verdicts=verdicts)


def shipped_reference() -> dict[str, object]:
    """What bench/models/model_dir.py --reference-onnx records, with the shipped graph as its own reference."""
    texts = reference_texts()
    vectors = OnnxEmbedder(batch_size=1).embed_documents(texts).unwrap()
    return {"texts": texts, "vectors": vectors}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "bad reference.json"),
        ("[]", "bad reference.json"),
        (json.dumps({"texts": ["a"], "vectors": []}), "one per text"),
        (json.dumps({"pairs": [["only", "two"]]}), "[question, paraphrase, unrelated]"),
    ],
)
def test_a_bad_reference_json_says_what_to_fix(tmp_path: Path, content: str, said: str) -> None:
    found = parse_reference(tmp_path, content.encode())
    assert isinstance(found, Failure) and found.failure().code is ErrorCode.INVALID_INPUT
    assert said in found.failure().message and "model_dir.py --reference-onnx" in found.failure().message


def test_a_reference_json_may_carry_its_own_pairs_and_none_means_the_generic_ones(tmp_path: Path) -> None:
    own = [["¿Dónde vive Ana?", "Ana vive en Sevilla.", "El tren sale a las nueve."]]
    parsed = parse_reference(tmp_path, json.dumps({"pairs": own}).encode())
    assert isinstance(parsed, Success) and parsed.unwrap().pairs == (tuple(own[0]),)
    assert parse_reference(tmp_path, b"").unwrap().pairs == model_check.GENERIC_PAIRS


def test_the_cache_key_changes_with_the_cpu_the_model_and_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = VerdictCache.key(tmp_path, "m@1", b"")
    assert key == VerdictCache.key(tmp_path, "m@1", b"")
    assert key != VerdictCache.key(tmp_path, "m@2", b"")
    assert key != VerdictCache.key(tmp_path, "m@1", b"{}")
    assert key != VerdictCache.key(tmp_path / "elsewhere", "m@1", b"")
    monkeypatch.setattr(model_check, "cpu_flags", lambda: "another CPU")
    assert key != VerdictCache.key(tmp_path, "m@1", b"")


@pytest.mark.slow  # loads the real MiniLM (and a tiny graph)
def test_a_graph_that_maps_every_text_to_one_point_is_refused_and_a_sound_one_passes(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts"
    broken = embedder(model_dir(tmp_path / "broken", graph=one_point_graph(tmp_path / "one-point.onnx")), verdicts)
    refused = broken.embed_query("When do we deploy?")
    assert isinstance(refused, Failure), refused
    error = refused.failure()
    assert error.code is ErrorCode.EMBEDDING_ERROR and error.path == str(tmp_path / "broken")
    assert "fails its check on this machine" in error.message and "above the unrelated" in error.message
    assert "fp32" in error.message and 'embedder = "minilm"' in error.message  # what to do
    assert broken.verdict is not None and not broken.verdict.passed and not broken.is_loaded
    assert broken.embed_documents(["anything"]).failure() == error  # refused from then on, not loaded again

    sound = embedder(model_dir(tmp_path / "sound"), verdicts)
    assert isinstance(sound.embed_query("When do we deploy?"), Success)
    verdict = sound.verdict
    assert verdict is not None and verdict.passed and verdict.reason == ""
    assert verdict.worst_margin >= model_check.PAIR_MARGIN and verdict.worst_batch >= model_check.BATCH_AGREEMENT
    assert verdict.worst_reference is None  # no reference.json: the generic pairs only
    assert len(list(verdicts.glob("*.json"))) == 2  # one verdict per directory

    shipped = OnnxEmbedder(verdicts=verdicts)  # the shipped model is not checked at load (tests check it here)
    assert isinstance(shipped.embed_query("x"), Success) and shipped.verdict is None


@pytest.mark.slow  # loads the real MiniLM
def test_recorded_reference_vectors_pass_and_altered_ones_are_refused(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts"
    recorded = shipped_reference()
    good = embedder(model_dir(tmp_path / "good", reference=recorded), verdicts)
    assert isinstance(good.embed_query("x"), Success)
    assert good.verdict is not None and good.verdict.worst_reference is not None
    assert good.verdict.worst_reference > 0.999  # the same graph: the same vectors

    vectors = recorded["vectors"]
    assert isinstance(vectors, list)
    altered = {**recorded, "vectors": [vector[1:] + vector[:1] for vector in vectors]}  # every vector rotated
    bad = embedder(model_dir(tmp_path / "bad", reference=altered), verdicts)
    refused = bad.embed_query("x")
    assert isinstance(refused, Failure) and refused.failure().code is ErrorCode.EMBEDDING_ERROR
    assert "from the one recorded in reference.json" in refused.failure().message


@pytest.mark.slow  # loads the real MiniLM (and a tiny graph)
def test_the_composition_root_settles_the_verdict_before_any_store_and_keeps_it(tmp_path: Path) -> None:
    verdicts, root = tmp_path / "verdicts", model_dir(tmp_path / "m")
    broken = make_embedder(str(model_dir(tmp_path / "b", graph=one_point_graph(tmp_path / "p.onnx"))), verdicts)
    assert isinstance(broken, Failure) and "fails its check on this machine" in broken.failure().message

    first = make_embedder(str(root), verdicts).unwrap()
    assert isinstance(first, OnnxEmbedder) and first.is_loaded  # checked while the service is built
    kept = [path for path in verdicts.glob("*.json") if json.loads(path.read_text(encoding="utf-8"))["passed"]]
    assert len(kept) == 1
    recorded = json.loads(kept[0].read_text(encoding="utf-8"))
    assert recorded["model"] == first.name and recorded["directory"] == str(root)

    second = make_embedder(str(root), verdicts).unwrap()
    assert isinstance(second, OnnxEmbedder) and not second.is_loaded  # the kept verdict: no model run
    assert second.verdict is not None and second.verdict.passed

    # the file is the verdict: a forged one refuses without a run; a damaged one is checked again and rewritten
    kept[0].write_text(json.dumps({**recorded, "passed": False, "reason": "a kept verdict"}), encoding="utf-8")
    forged = make_embedder(str(root), verdicts)
    assert isinstance(forged, Failure) and "a kept verdict" in forged.failure().message
    kept[0].write_text("{damaged", encoding="utf-8")
    assert isinstance(make_embedder(str(root), verdicts), Success)
    assert json.loads(kept[0].read_text(encoding="utf-8"))["passed"] is True
