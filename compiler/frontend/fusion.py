"""Folding and fusion on the layer list, the way an inference compiler would do them.

- BatchNormalization after a conv (or a 2-D fc) folds into its weights and bias: the layer gains a
  bias of one element per output channel if it had none; no vector work remains.
- ``Add`` of a per-output-channel constant after a MAC layer is its bias (dynamo exports a 3-D
  Linear as MatMul + Add).
- A fusible activation (optable.FUSIBLE) right after a MAC or vector layer becomes one of its
  ``post_ops``; its element operations move into the producer's ``vector_ops``.

A tensor is only fused away if its producer's sole consumer is the folded layer and it is not a
graph output.
"""

from __future__ import annotations

from typing import Any

from compiler.frontend.context import Context
from compiler.frontend.optable import FUSIBLE
from compiler.frontend.workload import Layer


def fuse(ctx: Context, layers: list[Layer], nodes: dict[str, Any]) -> list[Layer]:
    producer = {t: layer for layer in layers for t in layer.outputs}
    users: dict[str, list[Layer]] = {}
    for layer in layers:
        for t in layer.inputs:
            users.setdefault(t, []).append(layer)
    kept: list[Layer] = []
    for layer in layers:
        if len(layer.inputs) == 1 and layer.onnx_nodes[0] in nodes:
            t = layer.inputs[0]
            src = producer.get(t)
            sole = src is not None and users.get(t) == [layer] and t not in ctx.graph_outputs
            node = nodes[layer.onnx_nodes[0]]
            if sole and _try_fold(ctx, src, layer, node):
                src.outputs, src.output_shapes = layer.outputs, layer.output_shapes
                src.dtypes.pop(t, None)
                src.dtypes.update({o: layer.dtypes.get(o, "") for o in layer.outputs})
                src.onnx_nodes.extend(layer.onnx_nodes)
                for o in layer.outputs:
                    producer[o] = src
                continue
        kept.append(layer)
    return kept


def _try_fold(ctx: Context, src: Layer, layer: Layer, node: Any) -> bool:
    """Fold ``layer`` into ``src`` if the rules allow it (mutates ``src`` only then)."""
    if src.kind == "mac" and not src.attrs.get("recurrent") and not src.post_ops:
        channels = _channels(src)
        if layer.op_type == "BatchNormalization" and channels is not None and src.output_shapes:
            rank = len(src.output_shapes[0])
            if src.problem is not None and (src.problem.kind.startswith("conv") or rank == 2):
                src.bias = src.bias or channels
                src.attrs.setdefault("folded", []).append("BatchNormalization")
                return True
        if layer.op_type == "Add" and channels is not None and _is_channel_bias(ctx, src, node, channels):
            src.bias = src.bias or channels
            src.attrs.setdefault("folded", []).append("Add(bias)")
            return True
    if layer.op_type in FUSIBLE and src.kind in ("mac", "vector") and not src.attrs.get("recurrent"):
        src.post_ops.append(_post_op_name(ctx, node, src))
        src.vector_ops += layer.vector_ops
        return True
    return False


def _channels(src: Layer) -> int | None:
    """Output channels of a MAC layer, and the axis they live on."""
    if not src.output_shapes or not src.output_shapes[0]:
        return None
    shape = src.output_shapes[0]
    conv = src.problem is not None and src.problem.kind.startswith("conv")
    return shape[1] if conv else shape[-1]


def _is_channel_bias(ctx: Context, src: Layer, node: Any, channels: int) -> bool:
    consts = [t for t in node.input if t and ctx.is_static(t)]
    if len(consts) != 1:
        return False
    shape = ctx.shape(node, consts[0])
    out = src.output_shapes[0]
    if len(shape) > len(out):
        return False
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    axis = 1 if src.problem is not None and src.problem.kind.startswith("conv") else len(out) - 1
    return all(n == (channels if i == axis else 1) for i, n in enumerate(padded))


def _post_op_name(ctx: Context, node: Any, src: Layer) -> str:
    a = ctx.attrs(node)
    if node.op_type == "Clip":
        lo, hi = a.get("min"), a.get("max")
        for slot in (1, 2):
            value = ctx.value(ctx.input(node, slot))
            if value is not None:
                lo, hi = (float(value), hi) if slot == 1 else (lo, float(value))
        src.attrs["clip"] = [lo, hi]
        return "Relu6" if (lo, hi) == (0.0, 6.0) else "Clip"
    if node.op_type == "LeakyRelu":
        src.attrs["leaky_relu_alpha"] = float(a.get("alpha", 0.01))
    if node.op_type == "Gelu":
        approx = a.get("approximate", b"none")
        src.attrs["gelu_approximate"] = approx.decode() if isinstance(approx, bytes) else approx
    return node.op_type
