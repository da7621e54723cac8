"""onnxruntime's ``com.microsoft`` quantized contrib ops: what ``quantize_static`` writes in its
QOperator format next to the standard QLinearConv / QLinearMatMul (QGemm for Linear layers,
QLinearAdd for residuals, ...).

ONNX shape inference has no rules for them, so :func:`add_shapes` computes their output shapes
and element types here; they go back into the model as ``value_info`` before the next round.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from compiler.frontend.graphinfo import TensorInfo

DOMAIN = "com.microsoft"

MS_KINDS: dict[str, str] = {
    "QGemm": "mac", "QLinearAdd": "vector", "QLinearMul": "vector", "QLinearSigmoid": "vector",
    "QLinearLeakyRelu": "vector", "QLinearSoftmax": "vector", "QLinearGlobalAveragePool": "vector",
    "QLinearAveragePool": "vector", "QLinearConcat": "layout",
}

DATA_SLOTS: dict[str, tuple[int, ...]] = {
    "QGemm": (0, 3, 6), "QLinearAdd": (0, 3), "QLinearMul": (0, 3), "QLinearSigmoid": (0,),
    "QLinearLeakyRelu": (0,), "QLinearSoftmax": (0,), "QLinearGlobalAveragePool": (0,),
    "QLinearAveragePool": (0,),
}
"""Inputs that hold data (the others are scales and zero points); QLinearConcat: every third from 2."""


def data_slots(node: Any) -> tuple[int, ...]:
    if node.op_type == "QLinearConcat":
        return tuple(range(2, len(node.input), 3))
    return DATA_SLOTS.get(node.op_type, ())


def _out_type(node: Any, tensors: dict[str, TensorInfo]) -> int:
    def dtype(slot: int) -> int:
        name = node.input[slot] if len(node.input) > slot else ""
        return tensors[name].dtype if name in tensors else 0

    if node.op_type == "QGemm":
        return dtype(8) or 1  # no y_zero_point: float output
    if node.op_type == "QLinearConcat":
        return dtype(2)
    return dtype(0)


def _out_shape(node: Any, shapes: list[tuple[int, ...] | None], attrs: dict[str, Any]) -> tuple[int, ...] | None:
    op = node.op_type
    if any(s is None for s in shapes):
        return None
    if op == "QGemm":
        a, b = shapes[0], shapes[3]
        m = a[1] if attrs.get("transA", 0) else a[0]
        n = b[0] if attrs.get("transB", 0) else b[1]
        return (m, n)
    if op in ("QLinearAdd", "QLinearMul"):
        return tuple(np.broadcast_shapes(shapes[0], shapes[3]))
    if op == "QLinearGlobalAveragePool":
        x = shapes[0]
        return (x[0], *([1] * (len(x) - 2)), x[-1]) if attrs.get("channels_last", 0) else (*x[:2], *[1] * (len(x) - 2))
    if op == "QLinearAveragePool":
        return _pool_shape(shapes[0], attrs)
    if op == "QLinearConcat":
        parts = [shapes[i] for i in data_slots(node)]
        axis = attrs.get("axis", 0) % len(parts[0])
        out = list(parts[0])
        out[axis] = sum(p[axis] for p in parts)
        return tuple(out)
    return shapes[0]


def _pool_shape(x: tuple[int, ...], attrs: dict[str, Any]) -> tuple[int, ...]:
    kernel = list(attrs["kernel_shape"])
    rank = len(kernel)
    strides = list(attrs.get("strides", [1] * rank))
    pads = list(attrs.get("pads", [0] * (2 * rank)))
    rounding = math.ceil if attrs.get("ceil_mode", 0) else math.floor
    out = [rounding((n + pads[i] + pads[i + rank] - kernel[i]) / strides[i]) + 1 for i, n in enumerate(x[2:])]
    return (*x[:2], *out)


def add_shapes(model: Any, tensors: dict[str, TensorInfo]) -> bool:
    """Add value_info for contrib-op outputs whose shape is still unknown; True if any was added."""
    from onnx import helper

    added = False
    for node in model.graph.node:
        if node.domain != DOMAIN or node.op_type not in MS_KINDS or not node.output:
            continue
        out = node.output[0]
        if out in tensors and tensors[out].shape is not None:
            continue
        shapes = [tensors[t].shape if t in tensors else None for t in node.input if t]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        shape = _out_shape(node, [tensors[t].shape if t in tensors else None for t in node.input], attrs) \
            if all(s is not None for s in shapes) else None
        if shape is None:
            continue
        model.graph.value_info.append(helper.make_tensor_value_info(out, _out_type(node, tensors), list(shape)))
        added = True
    return added
