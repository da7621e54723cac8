"""Which ONNX ops the front end understands, and how each is classified and costed.

One table per layer kind. ``docs/frontend.md`` embeds :func:`markdown_table` verbatim (a test
checks it), so the documentation cannot drift from the code.

Kinds: ``mac`` (mapped on the MAC array as a costmodel Problem), ``vector`` (vector-unit work costed
by element operations), ``layout`` (data movement only, zero operations), ``quant`` (quantize /
dequantize of activations), ``host`` (an unsupported op let through with ``allow_unsupported``).
"""

from __future__ import annotations

from dataclasses import dataclass

MAC_OPS: dict[str, str] = {
    "Conv": "conv1d / conv2d (grouped, depthwise, strided, dilated; pads and auto_pad)",
    "ConvTranspose": "conv_transpose2d (1-D as one row)",
    "Gemm": "fc when B is a weight, else matmul",
    "MatMul": "fc when B is a 2-D weight, else (batched) matmul",
    "Einsum": "2 operands: (batched) matmul; shared output indices = batch, summed indices = K",
    "LSTM": "x_gates + h_gates matmuls (recurrent) + cell vector layer",
    "GRU": "x_gates + h_gates matmuls (recurrent) + cell vector layer",
    "QLinearConv": "conv, widths from the integer tensors",
    "QLinearMatMul": "matmul / fc, widths from the integer tensors",
    "ConvInteger": "conv, int32 output",
    "MatMulInteger": "matmul / fc, int32 output",
}

QUANT_OPS: dict[str, str] = {
    "QuantizeLinear": "float -> int8/uint8 (1 op per element)",
    "DequantizeLinear": "int -> float (1 op per element); on a weight it is folded into the layer",
}


@dataclass(frozen=True)
class VectorRule:
    """``vector_ops`` = (elements of ``basis``) x ``per_element`` (x window / taps where the basis says)."""

    basis: str  # "output" | "input" | "variadic" | "window" | "resize" | "lrn"
    per_element: int = 1
    note: str = ""


_EW = VectorRule("output", 1, "elementwise")
_UNARY = ("Sqrt", "Erf", "Neg", "Abs", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Sign",
          "Sin", "Cos", "Not", "IsNaN", "IsInf")
_BINARY = ("Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less", "LessOrEqual", "Greater",
           "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift")
ACTIVATIONS = ("Relu", "Clip", "Sigmoid", "HardSwish", "Gelu", "Tanh", "LeakyRelu", "HardSigmoid", "Elu",
               "Selu", "Softplus", "Softsign", "PRelu", "Mish", "Celu", "ThresholdedRelu")

VECTOR_OPS: dict[str, VectorRule] = {
    **{op: _EW for op in _UNARY + _BINARY + ACTIVATIONS},
    **{op: VectorRule("variadic", 1, "(inputs - 1) per element") for op in ("Sum", "Max", "Min", "Mean")},
    "MaxPool": VectorRule("window", 1, "kernel taps per output element"),
    "AveragePool": VectorRule("window", 1, "kernel taps per output element"),
    "LpPool": VectorRule("window", 2, "2 x kernel taps per output element"),
    "GlobalAveragePool": VectorRule("input", 1, "each input element once"),
    "GlobalMaxPool": VectorRule("input", 1, "each input element once"),
    **{op: VectorRule("input", 1, "each input element once")
       for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ArgMax", "ArgMin")},
    **{op: VectorRule("input", 2, "square + add per input element")
       for op in ("ReduceL2", "ReduceSumSquare", "ReduceL1", "ReduceLogSumExp")},
    "Softmax": VectorRule("input", 5, "max, subtract, exp, sum, divide"),
    "LogSoftmax": VectorRule("input", 6, "max, subtract, exp, sum, log, subtract"),
    "LayerNormalization": VectorRule("input", 7, "mean, subtract, square, variance sum, rsqrt-mul, scale, shift"),
    "InstanceNormalization": VectorRule("input", 7, "as LayerNormalization"),
    "GroupNormalization": VectorRule("input", 7, "as LayerNormalization"),
    "BatchNormalization": VectorRule("output", 2, "scale, shift (when not folded into a conv)"),
    "LRN": VectorRule("lrn", 1, "size taps + 2 per output element"),
    "Resize": VectorRule("resize", 1, "taps per output element: nearest 1, linear 2^d, cubic 4^d"),
    "Upsample": VectorRule("resize", 1, "as Resize"),
    "Pad": VectorRule("output", 1, "one write per output element"),
    "Gather": VectorRule("output", 1, "with non-constant indices: one indexed load per output element"),
}

MS_VECTOR_OPS: dict[str, VectorRule] = {
    "QLinearAdd": _EW, "QLinearMul": _EW, "QLinearSigmoid": _EW, "QLinearLeakyRelu": _EW,
    "QLinearSoftmax": VectorRule("input", 5, "as Softmax"),
    "QLinearGlobalAveragePool": VectorRule("input", 1, "each input element once"),
    "QLinearAveragePool": VectorRule("window", 1, "kernel taps per output element"),
}
"""Quantized contrib ops of onnxruntime (domain com.microsoft; see msops.py)."""

LAYOUT_OPS: dict[str, str] = {
    op: "data movement only"
    for op in ("Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
               "Gather", "Expand", "Tile", "Identity", "Cast", "CastLike", "Dropout", "DepthToSpace",
               "SpaceToDepth", "Shape", "Size", "ConstantOfShape", "Range")
}
LAYOUT_OPS["Gather"] = "with constant indices"

CONSTANT_OPS = frozenset({"Constant"})
"""Always folded: their value becomes a constant tensor."""

FUSIBLE = frozenset({"Relu", "Clip", "Sigmoid", "HardSwish", "Gelu", "Tanh", "LeakyRelu"})
"""Activations that become a post-op of the layer producing their input."""

NON_DATA_SLOTS: dict[str, frozenset[int]] = {
    "Reshape": frozenset({1}), "Expand": frozenset({1}), "Tile": frozenset({1}), "Split": frozenset({1}),
    "Slice": frozenset({1, 2, 3, 4}), "Pad": frozenset({1, 2, 3}), "Resize": frozenset({1, 2, 3}),
    "Upsample": frozenset({1}), "Squeeze": frozenset({1}), "Unsqueeze": frozenset({1}),
    "Clip": frozenset({1, 2}), "Gather": frozenset({1}), "QuantizeLinear": frozenset({1, 2}),
    "DequantizeLinear": frozenset({1, 2}), "BatchNormalization": frozenset({3, 4}),
    "ConstantOfShape": frozenset({0}), "Range": frozenset({0, 1, 2}),
    **{op: frozenset({1}) for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                     "ReduceL2", "ReduceSumSquare", "ReduceL1", "ReduceLogSumExp")},
}
"""Inputs that are configuration (shapes, axes, bounds, scales), never counted as parameters."""

NORM_OPS = frozenset({"BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization"})
"""Input 1 is a per-channel scale (weights), input 2 a shift (bias)."""

PARAM_INPUT_SLOTS: dict[str, frozenset[int]] = {
    "Conv": frozenset({1, 2}), "ConvTranspose": frozenset({1, 2}), "BatchNormalization": frozenset({1, 2, 3, 4}),
    "LayerNormalization": frozenset({1, 2}), "InstanceNormalization": frozenset({1, 2}),
    "Gemm": frozenset({1, 2}), "LSTM": frozenset({1, 2, 3, 7}), "GRU": frozenset({1, 2, 3}), "PRelu": frozenset({1}),
}
"""Slots where a graph input without initializer is a weight (old models list weights as inputs)."""


def kind_of(op_type: str, domain: str = "", indices_static: bool = True) -> str | None:
    """The layer kind of an ONNX op, or None when the op is not supported."""
    if domain == "com.microsoft":
        from compiler.frontend.msops import MS_KINDS

        return MS_KINDS.get(op_type)
    if domain not in ("", "ai.onnx"):
        return None
    if op_type in MAC_OPS:
        return "mac"
    if op_type in QUANT_OPS:
        return "quant"
    if op_type == "Gather":
        return "layout" if indices_static else "vector"
    if op_type in VECTOR_OPS:
        return "vector"
    if op_type in LAYOUT_OPS or op_type in CONSTANT_OPS:
        return "layout"
    return None


def markdown_table() -> str:
    """The supported-ops table of docs/frontend.md, generated from the tables above."""
    rows = ["| op | kind | how it is modelled |", "|---|---|---|"]
    rows += [f"| {op} | mac | {what} |" for op, what in sorted(MAC_OPS.items())]
    rows += [f"| {op} | quant | {what} |" for op, what in sorted(QUANT_OPS.items())]
    for op, rule in sorted(VECTOR_OPS.items()):
        fused = "; fusible post-op" if op in FUSIBLE else ""
        rows.append(f"| {op} | vector | {rule.basis} x {rule.per_element}: {rule.note}{fused} |")
    rows += [f"| {op} | layout | {what} |" for op, what in sorted(LAYOUT_OPS.items())]
    rows.append("| com.microsoft::QGemm | mac | fc / matmul, widths from the integer tensors |")
    rows += [f"| com.microsoft::{op} | vector | {rule.basis} x {rule.per_element}: {rule.note} |"
             for op, rule in sorted(MS_VECTOR_OPS.items())]
    rows.append("| com.microsoft::QLinearConcat | layout | data movement only |")
    rows += [f"| {op} | (folded) | constant |" for op in sorted(CONSTANT_OPS)]
    return "\n".join(rows)
