"""Tiny ONNX graphs written byte by byte (the product does not depend on `onnx`): a model directory that is broken on
purpose, whose encoder maps every text to one point, as the int8 graphs of issue 40 did on a CPU without VNNI."""

from __future__ import annotations

import struct
from pathlib import Path

FLOAT, INT64 = 1, 7  # ONNX TensorProto data types
_ATTRIBUTE_INT = 2  # AttributeProto.AttributeType.INT


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s are ten-byte varints
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes(number: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def _tensor(name: str, data_type: int, dims: list[int], raw: bytes) -> bytes:
    return b"".join(_int(1, d) for d in dims) + _int(2, data_type) + _bytes(8, name) + _bytes(9, raw)


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem_type) + _bytes(2, shape)))


def _node(op: str, inputs: list[str], outputs: list[str], **ints: int) -> bytes:
    attributes = b"".join(
        _bytes(5, _bytes(1, key) + _int(3, value) + _int(20, _ATTRIBUTE_INT)) for key, value in ints.items()
    )
    return (
        b"".join(_bytes(1, i) for i in inputs)
        + b"".join(_bytes(2, o) for o in outputs)
        + _bytes(3, f"{op}_{outputs[0]}")
        + _bytes(4, op)
        + attributes
    )


def one_point_graph(path: Path, width: int = 384) -> Path:
    """An encoder whose token states are one constant vector for every token of every text (inputs input_ids and
    attention_mask, output [batch, tokens, width]): it loads, has the declared width, and computes garbage."""
    point = struct.pack(f"<{width}f", *(((i % 7) - 3) / 3.0 for i in range(width)))
    nodes = [
        _node("Cast", ["input_ids"], ["ids"], to=FLOAT),
        _node("Unsqueeze", ["ids", "last_axis"], ["ids3"]),
        _node("Mul", ["ids3", "zeros"], ["nothing"]),
        _node("Add", ["nothing", "point"], ["last_hidden_state"]),
    ]
    initializers = [
        _tensor("last_axis", INT64, [1], struct.pack("<q", -1)),
        _tensor("zeros", FLOAT, [width], bytes(4 * width)),
        _tensor("point", FLOAT, [width], point),
    ]
    graph = (
        b"".join(_bytes(1, n) for n in nodes)
        + _bytes(2, "one-point")
        + b"".join(_bytes(5, t) for t in initializers)
        + _bytes(11, _value_info("input_ids", INT64, ["batch", "seq"]))
        + _bytes(11, _value_info("attention_mask", INT64, ["batch", "seq"]))
        + _bytes(12, _value_info("last_hidden_state", FLOAT, ["batch", "seq", width]))
    )
    model = _int(1, 8) + _bytes(2, "agent-memory tests") + _bytes(7, graph) + _bytes(8, _int(2, 17))
    path.write_bytes(model)
    return path
