"""Vector, layout, quantize and host layers: counted in element operations, not mapped on the array.

``vector_ops`` follows the op's :class:`~compiler.frontend.optable.VectorRule`. Parameters of these
layers are their constant operands in data slots (LayerNorm/BatchNorm scale and shift, a PRelu
slope, a learned positional embedding added, an embedding table gathered); scalar constants
(``x / 8``, ``x + eps``) are immediates, and configuration inputs (shapes, axes, bounds, quantization
scales) and attention masks (booleans, or 0 / -inf: :func:`compiler.frontend.reading.is_mask`) are
not parameters.
"""

from __future__ import annotations

import math
from typing import Any

from compiler.frontend.context import Context
from compiler.frontend.msops import data_slots
from compiler.frontend.optable import MS_VECTOR_OPS, NON_DATA_SLOTS, NORM_OPS, VECTOR_OPS
from compiler.frontend.workload import Layer
from costmodel.errors import UserError


def build_vector(ctx: Context, node: Any) -> list[Layer]:
    layer = ctx.layer(node, "vector")
    layer.vector_ops = vector_ops(ctx, node)
    _constant_params(ctx, node, layer)
    return [layer]


def build_layout(ctx: Context, node: Any) -> list[Layer]:
    layer = ctx.layer(node, "layout")
    _constant_params(ctx, node, layer)
    if node.op_type in ("Reshape", "Flatten", "Squeeze", "Unsqueeze") and layer.input_shapes:
        before, after = math.prod(layer.input_shapes[0]), math.prod(layer.output_shapes[0])
        if before != after:
            raise UserError(f"{ctx.where(node)}: reshapes {before} elements into {list(layer.output_shapes[0])} "
                            f"({after} elements){ctx.fixed_dims_hint()}")
    return [layer]


def build_quant(ctx: Context, node: Any) -> list[Layer]:
    layer = ctx.layer(node, "quant")
    layer.vector_ops = ctx.numel(node, node.output[0])
    layer.attrs["to_bits"] = ctx.bits(node.output[0])
    for key, slot in (("scale", 1), ("zero_point", 2)):
        value = ctx.value(ctx.input(node, slot))
        if value is not None and value.size <= 16:
            layer.attrs[key] = value.tolist()
    return [layer]


def build_host(ctx: Context, node: Any) -> list[Layer]:
    layer = ctx.layer(node, "host", allow_unknown=True)
    layer.attrs["unsupported"] = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
    return [layer]


def _constant_params(ctx: Context, node: Any, layer: Layer) -> None:
    if node.op_type in NORM_OPS:
        _norm_operands_fit(ctx, node)
        layer.weights = ctx.static_numel(node, ctx.input(node, 1))
        layer.bias = ctx.static_numel(node, ctx.input(node, 2))
        return
    if node.domain == "com.microsoft":
        skip = frozenset(range(len(node.input))) - frozenset(data_slots(node))
    else:
        skip = NON_DATA_SLOTS.get(node.op_type, frozenset())
    layer.weights = sum(n for i, t in enumerate(node.input)
                        if i not in skip and (n := ctx.static_numel(node, t)) > 1 and not ctx.is_mask(t))


def _norm_operands_fit(ctx: Context, node: Any) -> None:
    """A normalization's scale and bias against its input (ONNX's shapes; onnx's shape inference
    checks BatchNormalization's, not these): a mismatch had been counted as parameters."""
    xs = ctx.shape(node, ctx.input(node, 0))
    if node.op_type == "BatchNormalization" or len(xs) < 2:
        return
    for slot, role in ((1, "scale"), (2, "bias")):
        t = ctx.input(node, slot)
        if not t:
            continue
        if node.op_type == "LayerNormalization":
            axis = int(ctx.attrs(node).get("axis", -1))
            ctx.check_broadcast(node, t, xs[axis % len(xs):], "the normalized shape",
                                f"the input's dims from axis {axis}", role=role)
            continue
        got = ctx.shape(node, t)
        groups = ctx.attrs(node).get("num_groups")  # GroupNormalization: [C] (opset 21) or [groups] (18)
        sizes = (xs[1],) if groups is None else (xs[1], int(groups))
        if len(got) != 1 or got[0] not in sizes:
            raise UserError(f"{ctx.where(node)}: {role} {t!r} has shape {list(got)}; expected "
                            f"[{' or '.join(map(str, dict.fromkeys(sizes)))}] (the input's channels)")


def vector_ops(ctx: Context, node: Any) -> int:
    """Element operations of a vector op (see optable.VECTOR_OPS for each op's rule)."""
    rule = MS_VECTOR_OPS[node.op_type] if node.domain == "com.microsoft" else VECTOR_OPS[node.op_type]
    out = ctx.numel(node, node.output[0])
    if rule.basis == "output":
        return out * rule.per_element
    if rule.basis == "input":
        return ctx.numel(node, node.input[0]) * rule.per_element
    if rule.basis == "variadic":
        return out * max(1, len([t for t in node.input if t]) - 1) * rule.per_element
    attrs = ctx.attrs(node)
    if rule.basis == "window":
        return out * math.prod(attrs.get("kernel_shape", [1])) * rule.per_element
    if rule.basis == "lrn":
        return out * (int(attrs.get("size", 1)) + 2)
    # resize: taps per output element from the interpolation mode and the number of resized axes
    mode = attrs.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ins, outs = ctx.shape(node, node.input[0]), ctx.shape(node, node.output[0])
    resized = sum(1 for i, o in zip(ins, outs) if i != o)
    taps = {"nearest": 1, "linear": 2, "bilinear": 2, "cubic": 4}.get(mode, 1) ** resized
    return out * taps
