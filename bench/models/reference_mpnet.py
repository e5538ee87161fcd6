"""Check the built all-mpnet-base-v2 ONNX graphs against an independent numpy forward pass of the same weights.

    python bench/models/reference_mpnet.py --work DIR [--min-cosine 0.999]

Research/build tool; nothing here is imported by the product. The numpy pass is written from the MPNet
definition, not from the graph: positions from 2 (past the padding index), word + position embeddings →
LayerNorm; 12 post-norm layers whose attention scores get the relative-position bias (T5 buckets, computed
here one pair at a time); exact GELU; mean pooling; L2 norm. Texts go through the graphs in one padded
batch (the product pads with id 0, so the mask is exercised) and through numpy one at a time. Fails if the
fp32 graph's lowest cosine is under --min-cosine.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_minilm_fast import read_safetensors
from build_mpnet import SAFETENSORS_SHA256
from build_nomic import sha256

TEXTS = [
    "What did Caroline research after the support group?",
    "Caroline: I've been looking into adoption agencies, it's a big step but I'm ready.",
    "when is the dentist appointment",
    "The quarterly report is due on the 3rd of March; Ana owns the budget section, and the draft goes to "
    "legal two weeks before. Remember to attach the revised forecast.",
]
LAYERS, HEADS, EPS = 12, 12, 1e-5


def bucket(relative: int, buckets: int = 32, max_distance: int = 128) -> int:
    half = buckets // 2
    n = -relative
    result = half if n < 0 else 0
    n = abs(n)
    exact = half // 2
    if n < exact:
        return result + n
    large = exact + int(math.log(n / exact) / math.log(max_distance / exact) * (half - exact))
    return result + min(large, half - 1)


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPS) * w + b


def forward(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    seq = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][2 : 2 + seq]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    table = w["encoder.relative_attention_bias.weight"]
    bias = np.array([[table[bucket(j - i)] for j in range(seq)] for i in range(seq)]).transpose(2, 0, 1)
    width = x.shape[1]
    head = width // HEADS

    def lin(t: np.ndarray, name: str) -> np.ndarray:
        return t @ w[name + ".weight"].T + w[name + ".bias"]

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (lin(x, p + f"attention.attn.{n}").reshape(seq, HEADS, head).transpose(1, 0, 2) for n in "qkv")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(seq, width)
        x = layer_norm(
            x + lin(context, p + "attention.attn.o"), *(w[p + f"attention.LayerNorm.{s}"] for s in ("weight", "bias"))
        )
        inner = lin(x, p + "intermediate.dense")
        inner = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / math.sqrt(2)))
        x = layer_norm(
            x + lin(inner, p + "output.dense"), *(w[p + f"output.LayerNorm.{s}"] for s in ("weight", "bias"))
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def graph_vectors(path: Path, batch: list[list[int]]) -> np.ndarray:
    import onnxruntime as ort

    width = max(len(ids) for ids in batch)
    input_ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, ids in enumerate(batch):
        input_ids[row, : len(ids)] = ids
        mask[row, : len(ids)] = 1
    hidden = ort.InferenceSession(str(path)).run(None, {"input_ids": input_ids, "attention_mask": mask})[0]
    pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main() -> None:
    from tokenizers import Tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--min-cosine", type=float, default=0.999)
    args = parser.parse_args()
    weights_path = args.work / "all-mpnet-base-v2.safetensors"
    if sha256(weights_path) != SAFETENSORS_SHA256:
        raise SystemExit(f"{weights_path}: sha256 differs from the pinned one")
    weights = {k: v.astype(np.float64) for k, v in read_safetensors(weights_path).items()}
    tokenizer = Tokenizer.from_file(str(args.work / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=384)
    batch = [e.ids for e in tokenizer.encode_batch(TEXTS)]
    reference = np.array([forward(weights, ids) for ids in batch])
    report = {}
    for name in ("fp32", "int8"):
        got = graph_vectors(args.work / f"all-mpnet-base-v2-{name}.onnx", batch)
        report[name] = [round(float(c), 6) for c in (reference * got).sum(1)]
        print(name, report[name])
    if min(report["fp32"]) < args.min_cosine:
        raise SystemExit(f"fp32 graph: lowest cosine {min(report['fp32'])} < {args.min_cosine}")


if __name__ == "__main__":
    main()
