"""The Embedder adapter: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, loaded lazily, batched by length."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Result, Success

from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from agent_memory.domain.ports import Embedder, Vector

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256  # the model's max_seq_length (sentence-transformers config)
DEFAULT_BATCH_SIZE = 16  # measured here: 16 ≥ 32 > 64 once sorted by length (bench/embedder.py)

# the model and its own tokenizer ship inside this package (adapters/models/…, Apache-2.0; see NOTICE)
_MODEL_DIRECTORY = Path(__file__).parent / "models" / "all-MiniLM-L6-v2"
_MODEL_FILE = _MODEL_DIRECTORY / "model.onnx"
_TOKENIZER_FILE = _MODEL_DIRECTORY / "tokenizer.json"
_ORT_QUIET = 3  # onnxruntime log severity: errors and above only
# onnxruntime raises its own classes, none of them a RuntimeError; not every version has every one.
_ORT_ERROR_NAMES = (
    "Fail",
    "InvalidArgument",
    "NoSuchFile",
    "NoModel",
    "EngineError",
    "RuntimeException",
    "InvalidProtobuf",
    "ModelLoaded",
    "NotImplemented",
    "InvalidGraph",
    "EPFail",
)


def default_model_path() -> Path | None:
    """The int8 ONNX model, shipped as package data of agent-memory itself."""
    return _MODEL_FILE if _MODEL_FILE.is_file() else None


def default_tokenizer_path() -> Path | None:
    """The model's tokenizer.json, shipped as package data of agent-memory itself."""
    return _TOKENIZER_FILE if _TOKENIZER_FILE.is_file() else None


def _embedding_error(message: str, path: Path | None = None, cause: BaseException | None = None) -> DomainError:
    return DomainError(
        ErrorCode.EMBEDDING_ERROR,
        message,
        path=str(path) if path is not None else None,
        cause=f"{type(cause).__name__}: {cause}" if cause is not None else None,
    )


def _quiet_onnxruntime() -> None:
    """Call before every `import onnxruntime`: its telemetry stays off unless the user turned it on.

    onnxruntime (1.2x+ on Linux) starts its telemetry when first imported: a device id and an event database
    under ~/.cache/Microsoft/DeveloperTools and a `.ses` file in $TMPDIR. The product runs offline and writes
    nothing outside its data directory. Set here, where the import happens, not when this module is imported.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def _ort_errors() -> tuple[type[BaseException], ...]:
    """onnxruntime's exception types plus OSError (reading the file); imported only once loading."""
    _quiet_onnxruntime()
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = (getattr(state, name, None) for name in _ORT_ERROR_NAMES)
    return (OSError, *(kind for kind in found if isinstance(kind, type)))


class _LoadedModel:
    """The onnxruntime session and tokenizer of one embedder, and the arithmetic around them."""

    def __init__(self, session: Any, tokenizer: Any) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.errors = _ort_errors()
        self.wants_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Truncated token ids (with [CLS] and [SEP]) of each text, unpadded."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]

    def embed_batch(self, batch: Sequence[list[int]]) -> npt.NDArray[np.float32]:
        """Unit vectors for token id lists padded to the longest in this batch: mean pool, L2."""
        import numpy as np

        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if self.wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


def _batches_in_order(lengths: Sequence[int], batch_size: int, sort_by_length: bool) -> list[list[int]]:
    """Indices of the texts grouped into batches; by length, padding is wasted on no text."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__) if sort_by_length else list(range(len(lengths)))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 with int8 weights, 384-d unit vectors, run locally without torch.

    Nothing loads at construction; the session and tokenizer load on the first embed call, once.
    Texts are truncated at 256 tokens and embedded in batches of similar length (then put back
    in input order), which roughly doubles throughput on conversational text. Queries and
    documents are encoded the same way (the model has no prefixes).
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        intra_op_num_threads: int = 0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sort_by_length: bool = True,
        allow_spinning: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if intra_op_num_threads < 0:
            raise ValueError("intra_op_num_threads must be 0 (auto) or more")
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._intra_op_num_threads = intra_op_num_threads
        self._batch_size = batch_size
        self._sort_by_length = sort_by_length
        self._allow_spinning = allow_spinning
        self._loaded: _LoadedModel | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def is_loaded(self) -> bool:
        """Whether the model session exists yet (it is created by the first embed call)."""
        return self._loaded is not None

    def load(self) -> Result[None, DomainError]:
        """Load the model now instead of on first use (e.g. to warm up a server); idempotent."""
        return self._model().map(lambda _: None)

    def embed_documents(self, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        if not texts:
            return Success([])
        return self._model().bind(lambda model: self._embed_all(model, texts))

    def embed_query(self, text: str) -> Result[Vector, DomainError]:
        return self.embed_documents([text]).map(lambda vectors: vectors[0])

    def _model(self) -> Result[_LoadedModel, DomainError]:
        if self._loaded is not None:
            return Success(self._loaded)
        with self._lock:
            if self._loaded is not None:
                return Success(self._loaded)
            return self._load().map(self._keep)

    def _keep(self, loaded: _LoadedModel) -> _LoadedModel:
        self._loaded = loaded
        return loaded

    def _load(self) -> Result[_LoadedModel, DomainError]:
        return Result.do(
            loaded
            for model_path in _shipped_file("model", self._model_path or default_model_path(), _MODEL_FILE)
            for tokenizer_path in _shipped_file(
                "tokenizer", self._tokenizer_path or default_tokenizer_path(), _TOKENIZER_FILE
            )
            for tokenizer in _load_tokenizer(tokenizer_path)
            for loaded in self._load_session_with(tokenizer, model_path)
        )

    def _load_session_with(self, tokenizer: Any, model_path: Path) -> Result[_LoadedModel, DomainError]:
        return (
            _load_session(model_path, self._intra_op_num_threads, self._allow_spinning)
            .bind(lambda session: _checked_dimension(session, model_path))
            .map(lambda session: _LoadedModel(session, tokenizer))
        )

    def _embed_all(self, model: _LoadedModel, texts: Sequence[str]) -> Result[list[Vector], DomainError]:
        import numpy as np

        try:
            token_ids = model.token_ids(texts)
            vectors = np.empty((len(texts), DIMENSION), dtype=np.float32)
            for batch in _batches_in_order([len(ids) for ids in token_ids], self._batch_size, self._sort_by_length):
                vectors[batch] = model.embed_batch([token_ids[i] for i in batch])
        except model.errors as error:
            return Failure(
                _embedding_error(
                    "The embedding model failed to run: reinstall agent-memory if this persists.", cause=error
                )
            )
        rows: list[Vector] = list(vectors.tolist())
        return Success(rows)


def _shipped_file(what: str, path: Path | None, shipped: Path) -> Result[Path, DomainError]:
    """`path` when the file is there; else an error saying the package ships it (`shipped` names where)."""
    if path is not None and path.is_file():
        return Success(path)
    return Failure(
        _embedding_error(
            f"The embedding {what} file is missing: reinstall agent-memory "
            f"(the package ships models/{shipped.parent.name}/{shipped.name}).",
            path=path,
        )
    )


def _load_tokenizer(path: Path) -> Result[Any, DomainError]:
    """The WordPiece tokenizer, truncating at MAX_TOKENS and not padding (batches pad themselves).

    The JSON is checked first because `tokenizers` reports a broken file as a plain Exception.
    """
    import json

    from tokenizers import Tokenizer

    try:
        text = path.read_text(encoding="utf-8")
        json.loads(text)
    except (OSError, ValueError) as error:
        return Failure(
            _embedding_error(
                "The embedding tokenizer file is unreadable: reinstall agent-memory.", path=path, cause=error
            )
        )
    tokenizer = Tokenizer.from_str(text)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return Success(tokenizer)


def _load_session(path: Path, intra_op_num_threads: int, allow_spinning: bool) -> Result[Any, DomainError]:
    """A quiet CPU onnxruntime session on the model file.

    Spinning (idle threads busy-waiting for work) is off by default: on 2 shared cores it made
    batches slower and queries ~50% slower whenever another process was busy.
    """
    _quiet_onnxruntime()
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = _ORT_QUIET
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_num_threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if allow_spinning else "0")
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except _ort_errors() as error:
        return Failure(
            _embedding_error(
                "The embedding model file could not be loaded: reinstall agent-memory "
                "(the model file is missing or damaged).",
                path=path,
                cause=error,
            )
        )
    return Success(session)


def _checked_dimension(session: Any, path: Path) -> Result[Any, DomainError]:
    """The session, if its output has DIMENSION features: a swapped model file must not mix vectors."""
    features = session.get_outputs()[0].shape[-1]
    if features != DIMENSION:
        return Failure(
            _embedding_error(
                f"The embedding model gives {features}-d vectors, not {DIMENSION}: "
                "point model_path at all-MiniLM-L6-v2, or reinstall agent-memory.",
                path=path,
            )
        )
    return Success(session)


EMBEDDERS: dict[str, Callable[[], Embedder]] = {"minilm": OnnxMiniLMEmbedder}


def make_embedder(name: str) -> Result[Embedder, DomainError]:
    """The embedder the composition root asked for by name (e.g. from settings); nothing loads yet."""
    factory = EMBEDDERS.get(name.strip().lower())
    if factory is None:
        known = ", ".join(sorted(EMBEDDERS))
        return Failure(DomainError(ErrorCode.INVALID_INPUT, f"Unknown embedder '{name}'; known embedders: {known}."))
    return Success(factory())
