"""The ONNX model an embedder runs, loaded: its files checked, the tokenizer and the onnxruntime session (quiet, on
the CPU), and the loaded model that embeds a batch of token ids."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Result, Success

from agent_memory.adapters.model_directory import SHIPPED_DIRECTORY, SHIPPED_NAME, ModelSpec, shipped_spec
from agent_memory.adapters.token_windows import TokenWindows
from agent_memory.domain.errors import DomainError, ErrorCode

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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


def embedding_error(message: str, path: Path | None = None, cause: BaseException | None = None) -> DomainError:
    return DomainError(
        ErrorCode.EMBEDDING_ERROR,
        message,
        path=str(path) if path is not None else None,
        cause=f"{type(cause).__name__}: {cause}" if cause is not None else None,
    )


def quiet_onnxruntime() -> None:
    """Call before every `import onnxruntime`: its telemetry stays off unless the user turned it on.

    onnxruntime (1.2x+ on Linux) starts its telemetry when first imported: a device id and an event database
    under ~/.cache/Microsoft/DeveloperTools and a `.ses` file in $TMPDIR. The product runs offline and writes
    nothing outside its data directory. Set here, where the import happens, not when this module is imported.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def ort_errors() -> tuple[type[BaseException], ...]:
    """onnxruntime's exception types plus OSError (reading the file); imported only once loading."""
    quiet_onnxruntime()
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = (getattr(state, name, None) for name in _ORT_ERROR_NAMES)
    return (OSError, *(kind for kind in found if isinstance(kind, type)))


class LoadedModel:
    """The onnxruntime session and tokenizer of one embedder, and the arithmetic around them."""

    def __init__(self, session: Any, tokenizer: Any, spec: ModelSpec) -> None:
        self.session = session
        self.tokenizer = tokenizer
        self.spec = spec
        self.errors = ort_errors()
        self.wants_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())
        self.windows = TokenWindows(tokenizer, spec)  # cutting a long text into the model's windows

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Truncated token ids (with [CLS] and [SEP]) of each text, unpadded."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]

    def embed_batch(self, batch: Sequence[list[int]]) -> npt.NDArray[np.float32]:
        """Vectors for token id lists padded to the longest in this batch: mean or [CLS] pooled, then L2 (if set)."""
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
        if self.spec.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        if self.spec.normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        result: npt.NDArray[np.float32] = pooled.astype(np.float32)
        return result


def present_file(what: str, path: Path | None, spec: ModelSpec) -> Result[Path, DomainError]:
    """`path` when the file is there; else an error saying what to do (reinstall, or fix the directory)."""
    if path is not None and path.is_file():
        return Success(path)
    where = (
        f"the package ships models/{SHIPPED_DIRECTORY.name}/{path.name if path else ''}"
        if spec.name == SHIPPED_NAME
        else "a model directory holds model.onnx, tokenizer.json and embedding.json"
    )
    return Failure(embedding_error(f"The embedding {what} file is missing: {spec.remedy} ({where}).", path=path))


def load_tokenizer(path: Path, spec: ModelSpec) -> Result[Any, DomainError]:
    """The model's tokenizer, truncating at its window and not padding (batches pad themselves).

    The JSON is checked first (an object with a tokenizer model) because `tokenizers` reports a broken
    file as a plain Exception.
    """
    import json

    from tokenizers import Tokenizer

    try:
        text = path.read_text(encoding="utf-8")
        parsed = json.loads(text)
    except (OSError, ValueError) as error:
        return Failure(
            embedding_error(f"The embedding tokenizer file is unreadable: {spec.remedy}.", path=path, cause=error)
        )
    if not isinstance(parsed, dict) or not isinstance(parsed.get("model"), dict):
        return Failure(
            embedding_error(
                f"The embedding tokenizer file is not a Hugging Face tokenizer.json: {spec.remedy}.", path=path
            )
        )
    tokenizer = Tokenizer.from_str(text)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=spec.max_tokens)
    return Success(tokenizer)


def load_session(
    path: Path, intra_op_num_threads: int, allow_spinning: bool, spec: ModelSpec
) -> Result[Any, DomainError]:
    """A quiet CPU onnxruntime session on the model file.

    Spinning (idle threads busy-waiting for work) is off by default: on 2 shared cores it made
    batches slower and queries ~50% slower whenever another process was busy.
    """
    quiet_onnxruntime()
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = _ORT_QUIET
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = intra_op_num_threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if allow_spinning else "0")
    try:
        session = ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except ort_errors() as error:
        return Failure(
            embedding_error(
                f"The embedding model file could not be loaded: {spec.remedy} (the model file is missing or damaged).",
                path=path,
                cause=error,
            )
        )
    return Success(session)


def checked_dimension(session: Any, path: Path, spec: ModelSpec | None = None) -> Result[Any, DomainError]:
    """The session, if its first output is token states of the declared width: a swapped file must not mix vectors."""
    spec = spec or shipped_spec()
    shape = session.get_outputs()[0].shape
    features = shape[-1]
    if len(shape) == 3 and features == spec.dimension:
        return Success(session)
    if spec.name == SHIPPED_NAME:
        fix = f"point model_path at all-MiniLM-L6-v2, or {spec.remedy}"
    elif len(shape) != 3:
        fix = f"{spec.remedy}: its first output must be the token states [batch, tokens, width], got {list(shape)}"
    else:
        fix = f'{spec.remedy}: set "dimension": {features} in embedding.json if this is the model you meant'
    return Failure(
        embedding_error(f"The embedding model gives {features}-d vectors, not {spec.dimension}: {fix}.", path=path)
    )
