"""Research embedders from ONNX files built outside the product (bench/models): nomic-embed-text-v1.5 and others.

Research code only (bench/research); nothing here is imported by the product. A model is a graph whose
first output is the last hidden state [batch, seq, width] (mean pooled over the mask, then L2), the shipped
MiniLM tokenizer.json, and optional task prefixes for queries and documents. Texts are sorted by length
and embedded in batches of 16, as in the field notes' speed figures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

TOKENIZER = Path(__file__).resolve().parents[2] / "adapters" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"

# name -> (env var holding the model file, query prefix, document prefix, max tokens)
MODELS = {
    "nomic": ("NOMIC_MODEL", "search_query: ", "search_document: ", 512),
    "nomic-noprefix": ("NOMIC_MODEL", "", "", 512),
    "minilm-fast": ("MINILM_FAST_MODEL", "", "", 256),
}


class PrefixedOnnx:
    """Mean-pooled, L2-normalised sentence vectors from an ONNX encoder, with task prefixes."""

    def __init__(self, name: str, threads: int = 0, batch_size: int = 16) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        env, self.query_prefix, self.document_prefix, max_len = MODELS[name]
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(os.environ[env], options, providers=["CPUExecutionProvider"])
        self.wants_token_types = any(i.name == "token_type_ids" for i in self.session.get_inputs())
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER))
        self.tokenizer.enable_truncation(max_len)
        self.tokenizer.no_padding()
        self.batch_size = batch_size

    def _batch(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(i) for i in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(batch):
            ids[row, : len(i)] = i
            mask[row, : len(i)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self.wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        w = mask[:, :, None].astype(np.float32)
        pooled = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
        return (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)

    def embed(self, texts: list[str], kind: str) -> np.ndarray:
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        encoded = [e.ids for e in self.tokenizer.encode_batch([prefix + t for t in texts])]
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            vectors = self._batch([encoded[i] for i in idx])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors
        assert out is not None
        return out
