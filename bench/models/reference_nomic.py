"""Check the built nomic ONNX graphs against an independent numpy forward pass of the same GGUF weights.

    python bench/models/reference_nomic.py --work DIR [--min-cosine 0.999]

Research/build tool (needs bench/models/requirements.txt); nothing here is imported by the product.
The numpy pass is written from the nomic-bert definition, not from the graph: embeddings (word + token
type 0) → LayerNorm; 12 post-norm layers of fused-qkv attention with rotary positions (NeoX halves, base
1000) and a SwiGLU feed-forward; mean pooling over the tokens; L2 norm. It reads the GGUF that
build_nomic.py extracted (its sha256 checked again here) and embeds a few texts with the task prefixes,
in one padded batch through the graphs (so the attention mask is exercised) and one text at a time in
numpy. Prints the cosine of every text for the fp32 and the int8 graph, and fails if the fp32 graph's
lowest cosine is under --min-cosine. Takes a few seconds once the model is built.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_nomic import EPS, GGUF_SHA256, HEADS, LAYERS, ROPE_BASE, TOKENIZER, sha256

TEXTS = [
    "search_query: What did Caroline research after the support group?",
    "search_document: Caroline: I've been looking into adoption agencies, it's a big step but I'm ready.",
    "search_document: Melanie: We went camping at the lake last weekend and the kids loved the stars.",
    "search_query: when is the dentist appointment",
    "search_document: The quarterly report is due on the 3rd of March; Ana owns the budget section, "
    "and the draft goes to legal two weeks before. Remember to attach the revised forecast.",
]


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w + b


def rope(x: np.ndarray) -> np.ndarray:
    """x: [heads, seq, dim]; NeoX rotary: the first half pairs with the second half."""
    dim = x.shape[-1]
    half = dim // 2
    inv = ROPE_BASE ** (-np.arange(half, dtype=np.float64) * 2 / dim)
    angle = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)


def forward(weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """One text's unit sentence vector, in float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = w["token_embd.weight"][ids] + w["token_types.weight"][0]
    x = layer_norm(x, w["token_embd_norm.weight"], w["token_embd_norm.bias"])
    seq, width = x.shape
    head = width // HEADS
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        qkv = x @ w[p + "attn_qkv.weight"].T
        q, k, v = (qkv[:, i * width : (i + 1) * width].reshape(seq, HEADS, head).transpose(1, 0, 2) for i in range(3))
        q, k = rope(q), rope(k)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(head)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        attn = (scores / scores.sum(-1, keepdims=True)) @ v
        attn = attn.transpose(1, 0, 2).reshape(seq, width) @ w[p + "attn_output.weight"].T
        x = layer_norm(x + attn, w[p + "attn_output_norm.weight"], w[p + "attn_output_norm.bias"])
        gate = x @ w[p + "ffn_gate.weight"].T
        up = x @ w[p + "ffn_up.weight"].T
        down = (up * gate / (1 + np.exp(-gate))) @ w[p + "ffn_down.weight"].T
        x = layer_norm(x + down, w[p + "layer_output_norm.weight"], w[p + "layer_output_norm.bias"])
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def graph_vectors(model: Path, encoded: list[list[int]]) -> np.ndarray:
    """All texts in one padded batch through an ONNX graph's `sentence_embedding` output."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    width = max(len(e) for e in encoded)
    ids = np.zeros((len(encoded), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encoded):
        ids[row, : len(e)] = e
        mask[row, : len(e)] = 1
    return session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path, help="the dir build_nomic.py built into")
    parser.add_argument("--min-cosine", type=float, default=0.999)
    args = parser.parse_args()
    from gguf import GGUFReader
    from tokenizers import Tokenizer

    gguf_path = args.work / "nomic-embed-text-v1.5.f16.gguf"
    if sha256(gguf_path) != GGUF_SHA256:
        raise SystemExit(json.dumps({"error": f"{gguf_path.name}: sha256 differs from the pinned one"}))
    reader = GGUFReader(str(gguf_path))
    weights = {
        t.name: np.asarray(t.data, dtype=np.float32).reshape(tuple(int(d) for d in reversed(t.shape.tolist())))
        for t in reader.tensors
    }
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    encoded = [e.ids for e in tokenizer.encode_batch(TEXTS)]
    reference = np.array([forward(weights, ids) for ids in encoded])
    report: dict[str, object] = {"texts": len(TEXTS)}
    for kind in ("fp32", "int8"):
        model = args.work / f"nomic-embed-text-v1.5-{kind}.onnx"
        vectors = graph_vectors(model, encoded).astype(np.float64)
        cosines = (vectors * reference).sum(1) / np.linalg.norm(vectors, axis=1)
        report[kind] = {"min_cosine": round(float(cosines.min()), 6), "cosines": [round(float(c), 6) for c in cosines]}
    # a sanity check that the texts are told apart at all: the query's best document is the relevant one
    report["query_best_document_is_relevant"] = bool(reference[0] @ reference[1] > reference[0] @ reference[2])
    print(json.dumps(report, indent=1))
    if report["fp32"]["min_cosine"] < args.min_cosine or not report["query_best_document_is_relevant"]:  # type: ignore[index]
        raise SystemExit(1)


if __name__ == "__main__":
    main()
