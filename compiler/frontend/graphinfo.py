"""The resolved ONNX graph the layer builders read: nodes in topological order, and per tensor its
static shape, element type, whether it is a constant, and (for small constants) its value."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# ONNX TensorProto element types -> bits (onnx.TensorProto enum values; kept here to avoid importing onnx)
DTYPE_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 16: 16,
              17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4}
DTYPE_NAMES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
               9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16",
               17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4",
               22: "int4", 23: "float4e2m1"}


@dataclass
class TensorInfo:
    """What the importer knows of one tensor."""

    shape: tuple[int, ...] | None
    dtype: int = 0
    static: bool = False
    value: np.ndarray | None = None

    @property
    def numel(self) -> int:
        if self.shape is None:
            raise ValueError("unknown shape")
        return math.prod(self.shape)

    @property
    def bits(self) -> int:
        return DTYPE_BITS.get(self.dtype, 32)

    @property
    def dtype_name(self) -> str:
        return DTYPE_NAMES.get(self.dtype, "unknown")


@dataclass
class Graph:
    """A loaded, shape-inferred, constant-folded ONNX graph."""

    name: str
    path: str
    opset: int
    nodes: list[Any]
    """Remaining NodeProtos in topological order (folded constants removed)."""
    tensors: dict[str, TensorInfo]
    inputs: list[str]
    outputs: list[str]
    static_producers: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """For every constant tensor made by a node: (node name, that node's inputs)."""
    fixed_dims: list[str] = field(default_factory=list)
    """Symbolic input dims the importer set to 1 (``x[0]=batch``), for error messages."""
    masks: set[str] = field(default_factory=set)
    """Large constants (their data dropped) that are attention masks (reading.is_mask)."""
    bits: dict[str, int] = field(default_factory=dict)
    """Effective bit width of tensors whose values came from a narrower type (see :func:`note_bits`)."""

    def info(self, name: str) -> TensorInfo:
        return self.tensors.get(name) or TensorInfo(None)

    def tensor_bits(self, name: str) -> int:
        """Bits per element as the accelerator stores it: a dequantized int8 tensor counts as 8."""
        return self.bits.get(name, self.info(name).bits)

    def is_static(self, name: str) -> bool:
        return bool(name) and self.info(name).static

    def consumers(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for node in self.nodes:
            for t in node.input:
                if t:
                    out.setdefault(t, []).append(node)
        return out


_BIT_PRESERVING = frozenset({"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity", "Gather",
                             "Slice", "Expand", "Tile", "Dropout", "Concat", "Split"})


def note_bits(node: Any, tensors: dict[str, TensorInfo], bits: dict[str, int]) -> None:
    """Record that DequantizeLinear's output is really as narrow as its input, through layout ops.

    This is how a QDQ model's Conv learns that its input and weights are int8 although ONNX hands it
    float32 tensors.
    """
    if not node.input or not node.input[0]:
        return
    src = node.input[0]
    if node.op_type == "DequantizeLinear":
        width = bits.get(src, tensors.get(src, TensorInfo(None)).bits)
    elif node.op_type in _BIT_PRESERVING and src in bits:
        width = bits[src]
    else:
        return
    for o in node.output:
        if o:
            bits[o] = width
