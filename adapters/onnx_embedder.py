"""The Embedder adapter: an ONNX sentence encoder on onnxruntime (the shipped MiniLM, or a user's model directory)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Result, Success

from agent_memory.adapters.model_directory import (
    SHIPPED_DIMENSION,
    SHIPPED_DIRECTORY,
    ModelSpec,
    looks_like_directory,
    read_model_directory,
    shipped_spec,
)
from agent_memory.adapters.onnx_model import (
    LoadedModel,
    checked_dimension,
    embedding_error,
    load_session,
    load_tokenizer,
    present_file,
)
from agent_memory.adapters.token_windows import TokenWindows, beyond, byte_bound
from agent_memory.domain.errors import DomainError, ErrorCode
from agent_memory.domain.search.relevance import UNCALIBRATED, RelevanceRule

if TYPE_CHECKING:
    from agent_memory.adapters.model_check import Verdict, Vetting
    from agent_memory.domain.ports import Embedder, Vector

DIMENSION = SHIPPED_DIMENSION
DEFAULT_BATCH_SIZE = 16  # measured here: 16 ≥ 32 > 64 once sorted by length (bench/embedder.py)

_MODEL_FILE = SHIPPED_DIRECTORY / "model.onnx"
_TOKENIZER_FILE = SHIPPED_DIRECTORY / "tokenizer.json"


def default_model_path() -> Path | None:
    """The int8 ONNX model, shipped as package data of agent-memory itself."""
    return _MODEL_FILE if _MODEL_FILE.is_file() else None


def default_tokenizer_path() -> Path | None:
    """The model's tokenizer.json, shipped as package data of agent-memory itself."""
    return _TOKENIZER_FILE if _TOKENIZER_FILE.is_file() else None


def _batches_in_order(lengths: Sequence[int], batch_size: int, sort_by_length: bool) -> list[list[int]]:
    """Indices of the texts grouped into batches; by length, padding is wasted on no text."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__) if sort_by_length else list(range(len(lengths)))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


class OnnxEmbedder:
    """A sentence encoder in ONNX run locally without torch: the shipped all-MiniLM-L6-v2 (int8, 384-d) by default.

    `spec` names another model (a user's model directory, see model_directory.py); `model_path` and
    `tokenizer_path` replace the shipped files only. Nothing loads at construction; the session and
    tokenizer load on the first embed call, once; a model directory is checked then, or earlier by `vet`
    (model_check.py: known sentence pairs and its recorded vectors, the verdict kept in the `verdicts` folder), and
    refused if it computes garbage on this CPU. Texts are truncated at the model's window (256 tokens for MiniLM)
    and embedded in batches of similar length (then put back in input order), which roughly
    doubles throughput on conversational text. Queries and documents get the model's own prefixes
    (MiniLM has none; nomic-embed-text wants "search_query: " and "search_document: ").
    """

    def __init__(
        self,
        spec: ModelSpec | None = None,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        intra_op_num_threads: int = 0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sort_by_length: bool = True,
        allow_spinning: bool = False,
        verdicts: Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if intra_op_num_threads < 0:
            raise ValueError("intra_op_num_threads must be 0 (auto) or more")
        self._spec = spec or shipped_spec()
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._intra_op_num_threads = intra_op_num_threads
        self._batch_size = batch_size
        self._sort_by_length = sort_by_length
        self._allow_spinning = allow_spinning
        self._vetting: Vetting | None = None  # a model directory's check on this machine (the shipped model: none)
        if self._spec.directory is not None:
            from agent_memory.adapters.model_check import Vetting

            self._vetting = Vetting(self._spec.directory, self._spec.name, verdicts)
        self._loaded: LoadedModel | None = None
        self._windows: Result[TokenWindows, DomainError] | None = None  # the tokenizer's alone (`needs_parts`)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def dimension(self) -> int:
        return self._spec.dimension

    @property
    def relevance_rule(self) -> RelevanceRule:
        """The model's relevance rule (its directory's relevance.json), UNCALIBRATED when it carries none."""
        return self._spec.relevance or UNCALIBRATED

    @property
    def verdict(self) -> Verdict | None:
        """A model directory's check verdict on this machine once settled (run here or read from `verdicts`)."""
        return self._vetting.verdict if self._vetting is not None else None

    def vet(self) -> Result[None, DomainError]:
        """Settle a model directory's verdict now, before any store is touched: read from the verdicts folder, or,
        the first time on this machine, the model loads and is checked. Nothing to do for the shipped model."""
        if self._vetting is None:
            return Success(None)
        vetting = self._vetting
        with self._lock:
            recalled = vetting.recall()
        return recalled.bind(
            lambda verdict: (
                self.load()
                if verdict is None
                else (Success(None) if verdict.passed else Failure(vetting.refusal(verdict)))
            )
        )

    @property
    def duplicate_similarity(self) -> float | None:
        """The model's near-duplicate threshold (its directory's duplicates.json), None when it carries none."""
        return self._spec.duplicate_similarity

    @property
    def is_loaded(self) -> bool:
        """Whether the model session exists yet (it is created by the first embed call)."""
        return self._loaded is not None

    def load(self) -> Result[None, DomainError]:
        """Load the model now instead of on first use (e.g. to warm up a server); idempotent."""
        return self._model().map(lambda _: None)

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        return self._embed(texts, self._spec.document_prefix)

    def embed_query(self, text: str) -> Result[Vector, DomainError]:
        return self._embed([text], self._spec.query_prefix).map(lambda vectors: vectors[0])

    def embed_parts(self, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        """The later windows of each text longer than the model's window (its first is `embed_documents`' vector),
        embedded as documents; a text within the window has none (tokenised only: no model run)."""
        if not texts:
            return Success([])
        return self._model().bind(lambda model: self._parts_of(model, texts))

    def needs_parts(self, texts: Sequence[str]) -> Result[list[bool], DomainError]:
        """Which texts are longer than the model's window: one of no more UTF-8 bytes than the window's tokens is not
        (token_windows.byte_bound), the rest are tokenised, with no model run (only the tokenizer is loaded when the
        model is not)."""
        bound = byte_bound(self._spec)
        candidates = [at for at, text in enumerate(texts) if beyond(text, bound)]
        if not candidates:
            return Success([False] * len(texts))

        def marked(windows: TokenWindows) -> list[bool]:
            found = [False] * len(texts)
            for at, longer in zip(candidates, windows.longer([texts[at] for at in candidates]), strict=True):
                found[at] = longer
            return found

        return self._token_windows().map(marked)

    def part_spans(self, texts: Sequence[str]) -> Result[list[list[tuple[int, int]]], DomainError]:
        """Where each of `embed_parts`' parts lies in its text (token_windows.TokenWindows.part_spans): the tokenizer
        alone, and only for texts longer than the window's bytes."""
        bound = byte_bound(self._spec)
        candidates = [at for at, text in enumerate(texts) if beyond(text, bound)]
        if not candidates:
            return Success([[] for _ in texts])

        def placed(windows: TokenWindows) -> list[list[tuple[int, int]]]:
            found: list[list[tuple[int, int]]] = [[] for _ in texts]
            for at, spans in zip(candidates, windows.part_spans([texts[at] for at in candidates]), strict=True):
                found[at] = spans
            return found

        return self._token_windows().map(placed)

    def _token_windows(self) -> Result[TokenWindows, DomainError]:
        """The loaded model's windows, or the tokenizer's alone (loaded once; the model is not)."""
        if self._loaded is not None:
            return Success(self._loaded.windows)
        with self._lock:
            if self._windows is None:
                spec = self._spec
                loaded = present_file("tokenizer", self._tokenizer_path or spec.tokenizer_path, spec).bind(
                    lambda path: load_tokenizer(path, spec)
                )
                self._windows = loaded.map(lambda tokenizer: TokenWindows(tokenizer, spec))
            return self._windows

    def _parts_of(self, model: LoadedModel, texts: Sequence[str]) -> Result[list[list[Vector]], DomainError]:
        windows = model.windows.parts(texts)
        flat = [window for parts in windows for window in parts]
        if not flat:
            return Success([[] for _ in texts])

        def regroup(vectors: list[Vector]) -> list[list[Vector]]:
            grouped: list[list[Vector]] = []
            at = 0
            for parts in windows:
                grouped.append(vectors[at : at + len(parts)])
                at += len(parts)
            return grouped

        return self._embed(flat, self._spec.document_prefix).map(regroup)

    def _embed(self, texts: Sequence[str], prefix: str) -> Result[list[Vector], DomainError]:
        if not texts:
            return Success([])
        prefixed = [prefix + text for text in texts] if prefix else texts
        return self._model().bind(lambda model: self._embed_all(model, prefixed))

    def _model(self) -> Result[LoadedModel, DomainError]:
        if self._loaded is not None:
            return Success(self._loaded)
        with self._lock:
            if self._loaded is not None:
                return Success(self._loaded)
            if self._vetting is not None and self._vetting.verdict is not None and not self._vetting.verdict.passed:
                return Failure(self._vetting.refusal(self._vetting.verdict))  # refused from then on, not loaded again
            return self._load().bind(self._checked).map(self._keep)

    def _checked(self, loaded: LoadedModel) -> Result[LoadedModel, DomainError]:
        """The loaded model if it passes its check on this machine; the shipped model (no directory) is not run."""
        if self._vetting is None:
            return Success(loaded)
        vetting = self._vetting
        try:
            judged = vetting.judge(
                lambda texts: loaded.embed_batch(loaded.token_ids(texts)),
                query_prefix=self._spec.query_prefix,
                document_prefix=self._spec.document_prefix,
            )
        except loaded.errors as error:
            return Failure(embedding_error(f"The embedding model failed to run: {self._spec.remedy}.", cause=error))
        return judged.bind(lambda verdict: Success(loaded) if verdict.passed else Failure(vetting.refusal(verdict)))

    def _keep(self, loaded: LoadedModel) -> LoadedModel:
        self._loaded = loaded
        return loaded

    def _load(self) -> Result[LoadedModel, DomainError]:
        spec = self._spec
        return Result.do(
            loaded
            for model_path in present_file("model", self._model_path or spec.model_path, spec)
            for tokenizer_path in present_file("tokenizer", self._tokenizer_path or spec.tokenizer_path, spec)
            for tokenizer in load_tokenizer(tokenizer_path, spec)
            for loaded in self._load_session_with(tokenizer, model_path)
        )

    def _load_session_with(self, tokenizer: Any, model_path: Path) -> Result[LoadedModel, DomainError]:
        return (
            load_session(model_path, self._intra_op_num_threads, self._allow_spinning, self._spec)
            .bind(lambda session: checked_dimension(session, model_path, self._spec))
            .map(lambda session: LoadedModel(session, tokenizer, self._spec))
        )

    def _embed_all(self, model: LoadedModel, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        import numpy as np

        try:
            token_ids = model.token_ids(texts)
            vectors = np.empty((len(texts), self._spec.dimension), dtype=np.float32)
            for batch in _batches_in_order([len(ids) for ids in token_ids], self._batch_size, self._sort_by_length):
                vectors[batch] = model.embed_batch([token_ids[i] for i in batch])
        except model.errors as error:
            return Failure(
                embedding_error(
                    f"The embedding model failed to run: {self._spec.remedy} if this persists.", cause=error
                )
            )
        rows: list[Vector] = list(vectors.tolist())
        return Success(rows)


OnnxMiniLMEmbedder = OnnxEmbedder  # the name it had while MiniLM was the only model


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"minilm": OnnxEmbedder}


def _vetted(embedder: OnnxEmbedder) -> Result[Embedder, DomainError]:
    return embedder.vet().map(lambda _: embedder)


def make_embedder(name: str, verdicts: Path | None = None) -> Result[Embedder, DomainError]:
    """The embedder the settings name: a built-in one (`minilm`), or the path of a model directory.

    A model directory is read and checked here (its files, embedding.json, the identity hash); its graph
    loads on first use. With `verdicts` (the composition root's), its check on this machine is settled here, before
    any store is touched: the verdict read from that folder, or, the first time, the model loaded and checked.
    """
    if looks_like_directory(name.strip()):
        built = read_model_directory(Path(name.strip())).map(lambda spec: OnnxEmbedder(spec, verdicts=verdicts))
        return built if verdicts is None else built.bind(_vetted)
    factory = EMBEDDERS.get(name.strip().lower())
    if factory is None:
        known = ", ".join(sorted(EMBEDDERS))
        return Failure(
            DomainError(
                ErrorCode.INVALID_INPUT,
                f"Unknown embedder '{name}'; known embedders: {known}, or the path of a model directory "
                "(e.g. ~/models/nomic: see docs/configuration.md).",
            )
        )
    return Success(factory())
