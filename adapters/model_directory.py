"""Embedding models as data: the shipped MiniLM, or a user's ONNX model directory read and checked at the boundary."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from attrs import evolve, frozen
from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.search.relevance import RelevanceRule

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "embedding.json"
# optional: the model's relevance rule, written by bench/relevance_calibration.py (without it: UNCALIBRATED)
RELEVANCE_FILE = "relevance.json"
RELEVANCE_KEYS = (
    "unrelated",
    "keep",
    "related",
    "floor",
    "spread",
    "alone",
    "cover",
    "close",
    "gap",
    "spared",
    "relative",
    "exempt",
)
# optional: the similarity at and over which two texts are near-duplicates, written by bench/duplicates.py --write
DUPLICATES_FILE = "duplicates.json"
POOLINGS = ("mean", "cls")
# every key of embedding.json, with its default (None: required)
CONFIG_KEYS: dict[str, object] = {
    "name": None,
    "dimension": None,
    "pooling": "mean",
    "normalize": True,
    "max_tokens": 512,
    "query_prefix": "",
    "document_prefix": "",
}
_HASH_CHUNK = 1 << 20

# the model and its own tokenizer ship inside this package (adapters/models/…, Apache-2.0; see NOTICE)
SHIPPED_DIRECTORY = Path(__file__).parent / "models" / "all-MiniLM-L6-v2"
SHIPPED_NAME = "all-MiniLM-L6-v2-int8"
SHIPPED_DIMENSION = 384
SHIPPED_MAX_TOKENS = 256  # the model's max_seq_length (sentence-transformers config)
SHIPPED_REMEDY = "reinstall agent-memory"


@frozen(kw_only=True)
class ModelSpec:
    """One embedding model: its files, how its token states become a vector, and the name stores record.

    `name` is the model's identity (decision 20): a store built with one name refuses to be searched with
    another. For a user's directory it ends with a hash of the model file, the tokenizer and every setting
    that changes vectors, so editing any of them is a switch of model that `memory reindex` settles.
    `remedy` ends every error about the files: what the user does to fix them.
    """

    name: str
    model_path: Path
    tokenizer_path: Path
    dimension: int
    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = SHIPPED_MAX_TOKENS
    query_prefix: str = ""
    document_prefix: str = ""
    remedy: str = SHIPPED_REMEDY
    relevance: RelevanceRule | None = None  # the directory's relevance.json; None: it has none (UNCALIBRATED)
    # the user's model directory, checked on its first load on each machine (model_check.py); None: the shipped
    # model, whose weight-only int8 graph computes in fp32 (no CPU-dependent integer kernels) and is checked in tests
    directory: Path | None = None
    duplicate_similarity: float | None = None  # the directory's duplicates.json; None: it has none (no check)


def shipped_spec(model_path: Path | None = None, tokenizer_path: Path | None = None) -> ModelSpec:
    """all-MiniLM-L6-v2 int8 as the package ships it: mean pooled, L2, 256 tokens, no prefixes."""
    return ModelSpec(
        name=SHIPPED_NAME,
        model_path=model_path or SHIPPED_DIRECTORY / MODEL_FILE,
        tokenizer_path=tokenizer_path or SHIPPED_DIRECTORY / TOKENIZER_FILE,
        dimension=SHIPPED_DIMENSION,
        relevance=_shipped_relevance(),
        duplicate_similarity=_shipped_duplicate_similarity(),
    )


def _shipped_relevance() -> RelevanceRule | None:
    """The shipped model's relevance rule (package data, written by bench/relevance_calibration.py --write)."""
    rule: RelevanceRule | None = read_relevance(SHIPPED_DIRECTORY).value_or(None)
    return rule


def _shipped_duplicate_similarity() -> float | None:
    """The shipped model's near-duplicate threshold (package data, written by bench/duplicates.py --write)."""
    similarity: float | None = read_duplicate_similarity(SHIPPED_DIRECTORY).value_or(None)
    return similarity


def looks_like_directory(value: str) -> bool:
    """Whether an `embedder` setting names a model directory (a path) rather than a built-in embedder."""
    return "/" in value or "\\" in value or value.startswith(("~", "."))


def _directory_error(directory: Path, message: str, cause: BaseException | None = None) -> DomainError:
    return DomainError(
        ErrorCode.INVALID_INPUT,
        f"The embedding model directory {directory} {message} "
        "(a model directory holds model.onnx, tokenizer.json and embedding.json: see docs/configuration.md).",
        path=str(directory),
        cause=f"{type(cause).__name__}: {cause}" if cause is not None else None,
    )


def read_model_directory(directory: Path) -> Result[ModelSpec, DomainError]:
    """The spec of a user's model directory, or an INVALID_INPUT error saying what to fix in it.

    Checks the files are there, embedding.json's keys and values, then hashes the model and tokenizer
    files for the identity (about 0.3 s for a 140 MB graph). The graph itself loads on first use; its
    output width is checked against `dimension` then.
    """
    directory = directory.expanduser()
    if not directory.is_dir():
        return Failure(_directory_error(directory, "does not exist or is not a directory: give the folder's path"))
    for required in (MODEL_FILE, TOKENIZER_FILE, CONFIG_FILE):
        if not (directory / required).is_file():
            return Failure(_directory_error(directory, f"has no {required}: put it there"))
    return _read_config(directory).bind(
        lambda config: _identified(directory, config).bind(
            lambda spec: (
                read_relevance(directory)
                .map(lambda rule: evolve(spec, relevance=rule))
                .bind(
                    lambda ruled: read_duplicate_similarity(directory).map(
                        lambda similarity: evolve(ruled, duplicate_similarity=similarity)
                    )
                )
            )
        )
    )


def read_relevance(directory: Path) -> Result[RelevanceRule | None, DomainError]:
    """The directory's relevance rule (relevance.json: unrelated, keep, related, floor — similarities 0 to 1 —,
    spread, alone and gap, a similarity or null, cover, a share 0 to 1, close, a similarity, spared, a share or null,
    relative, a positive multiple or null, exempt, a share or null; the last eight optional),
    None when it has none, or an INVALID_INPUT error saying what to fix."""
    path = directory / RELEVANCE_FILE
    if not path.is_file():
        return Success(None)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return Failure(_directory_error(directory, f"has an unreadable {RELEVANCE_FILE}: make it a JSON object", error))
    if not isinstance(raw, dict) or any(
        not isinstance(raw.get(key), int | float) or isinstance(raw.get(key), bool) for key in RELEVANCE_KEYS[:4]
    ):
        return Failure(
            _directory_error(
                directory,
                f"has a bad {RELEVANCE_FILE}: it needs numbers unrelated, keep, related and floor (and spread, a "
                "number or null); write it with bench/relevance_calibration.py --write, or delete it",
            )
        )
    spread, alone, gap, spared = raw.get("spread"), raw.get("alone"), raw.get("gap"), raw.get("spared")
    relative, exempt = raw.get("relative"), raw.get("exempt")
    try:
        return Success(
            RelevanceRule(
                unrelated=float(raw["unrelated"]),
                keep=float(raw["keep"]),
                related=float(raw["related"]),
                floor=float(raw["floor"]),
                spread=None if spread is None else float(spread),
                alone=None if alone is None else float(alone),
                cover=float(raw.get("cover", 1.0)),
                close=float(raw.get("close", 0.0)),
                gap=None if gap is None else float(gap),
                spared=None if spared is None else float(spared),
                relative=None if relative is None else float(relative),
                exempt=None if exempt is None else float(exempt),
            )
        )
    except (TypeError, ValueError) as error:
        return Failure(
            _directory_error(
                directory,
                f"has a bad {RELEVANCE_FILE}: every number is a similarity, 0 to 1 (relative: a multiple over 0)",
                error,
            )
        )


def read_duplicate_similarity(directory: Path) -> Result[float | None, DomainError]:
    """The directory's near-duplicate threshold (duplicates.json's `similarity`, 0 to 1), None when it has none, or
    an INVALID_INPUT error saying what to fix."""
    path = directory / DUPLICATES_FILE
    if not path.is_file():
        return Success(None)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return Failure(
            _directory_error(directory, f"has an unreadable {DUPLICATES_FILE}: make it a JSON object", error)
        )
    similarity = raw.get("similarity") if isinstance(raw, dict) else None
    if not isinstance(similarity, int | float) or isinstance(similarity, bool) or not 0.0 <= similarity <= 1.0:
        return Failure(
            _directory_error(
                directory,
                f"has a bad {DUPLICATES_FILE}: it needs a number similarity between 0 and 1; write it with "
                "bench/duplicates.py --write, or delete it",
            )
        )
    return Success(float(similarity))


def _read_config(directory: Path) -> Result[dict[str, Any], DomainError]:
    try:
        raw = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return Failure(_directory_error(directory, f"has an unreadable {CONFIG_FILE}: make it a JSON object", error))
    if not isinstance(raw, dict):
        return Failure(_directory_error(directory, f"has a {CONFIG_FILE} that is not a JSON object"))
    unknown = sorted(set(raw) - set(CONFIG_KEYS))
    if unknown:
        return Failure(
            _directory_error(
                directory,
                f"has unknown key(s) {', '.join(unknown)} in {CONFIG_FILE}; known: {', '.join(CONFIG_KEYS)}",
            )
        )
    config = {key: raw.get(key, default) for key, default in CONFIG_KEYS.items()}
    problem = _config_problem(config)
    return Failure(_directory_error(directory, f"has a bad {CONFIG_FILE}: {problem}")) if problem else Success(config)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _config_problem(config: dict[str, Any]) -> str | None:
    """What is wrong with embedding.json's values, as an instruction; None when nothing is."""
    if not isinstance(config["name"], str) or not config["name"].strip():
        return 'give the model a name (a non-empty string), e.g. "name": "nomic-embed-text-v1.5-int8"'
    if not _is_count(config["dimension"]):
        return "dimension must be the model's output width, a positive whole number (e.g. 768)"
    if config["pooling"] not in POOLINGS:
        return f"pooling must be one of {', '.join(POOLINGS)}, got {config['pooling']!r}"
    if not isinstance(config["normalize"], bool):
        return "normalize must be true or false"
    if not _is_count(config["max_tokens"]):
        return "max_tokens must be a positive whole number (the model's window, e.g. 512)"
    for prefix in ("query_prefix", "document_prefix"):
        if not isinstance(config[prefix], str):
            return f'{prefix} must be a string ("" for none)'
    return None


def _identified(directory: Path, config: dict[str, Any]) -> Result[ModelSpec, DomainError]:
    vector_settings = {key: config[key] for key in CONFIG_KEYS if key != "name"}
    digest = hashlib.sha256(json.dumps(vector_settings, sort_keys=True).encode())
    try:
        for file in (MODEL_FILE, TOKENIZER_FILE):
            with (directory / file).open("rb") as handle:
                while chunk := handle.read(_HASH_CHUNK):
                    digest.update(chunk)
    except OSError as error:
        return Failure(_directory_error(directory, "has a file that cannot be read: check its permissions", error))
    return Success(
        ModelSpec(
            name=f"{config['name'].strip()}@{digest.hexdigest()[:16]}",
            model_path=directory / MODEL_FILE,
            tokenizer_path=directory / TOKENIZER_FILE,
            dimension=config["dimension"],
            pooling=config["pooling"],
            normalize=config["normalize"],
            max_tokens=config["max_tokens"],
            query_prefix=config["query_prefix"],
            document_prefix=config["document_prefix"],
            remedy=f"fix the model directory {directory}",
            directory=directory,
        )
    )
