"""MAC layers: Conv, ConvTranspose, Gemm, MatMul and their integer / QLinear forms, as Problems.

Bit widths come from the tensors as the accelerator stores them (:meth:`Context.bits`): a float
layer is 32-bit (16 for fp16), a layer fed by DequantizeLinear of int8 is 8-bit, QLinear* take the
widths of their integer operands, ConvInteger/MatMulInteger write int32. Partial sums are 32-bit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from compiler.frontend.context import Context, UnsupportedVariant
from compiler.frontend.workload import Layer
from costmodel import problem as P
from costmodel.errors import UserError

# operand positions: (x, w, bias) for convs, (a, b) for matmuls
_CONV_SLOTS = {"Conv": (0, 1, 2), "QLinearConv": (0, 3, 8), "ConvInteger": (0, 1, None)}
_MATMUL_SLOTS = {"MatMul": (0, 1), "QLinearMatMul": (0, 3), "MatMulInteger": (0, 1)}
_GEMM_SLOTS = {"Gemm": (0, 1, 2), "QGemm": (0, 3, 6)}  # QGemm: onnxruntime's com.microsoft contrib op


def build_mac(ctx: Context, node: Any) -> list[Layer]:
    op = node.op_type
    if op in _CONV_SLOTS:
        return [_conv(ctx, node, *_CONV_SLOTS[op])]
    if op == "ConvTranspose":
        return [_conv_transpose(ctx, node)]
    if op in _GEMM_SLOTS:
        return [_gemm(ctx, node, *_GEMM_SLOTS[op])]
    if op in _MATMUL_SLOTS:
        return [_matmul(ctx, node, *_MATMUL_SLOTS[op])]
    if op == "Einsum":
        from compiler.frontend.einsum import build_einsum

        return [build_einsum(ctx, node)]
    from compiler.frontend.rnn_layers import build_rnn

    return build_rnn(ctx, node)


def _widths(ctx: Context, x: str, w: str, y: str) -> tuple[int, int, int]:
    return (ctx.bits(x), ctx.bits(w), ctx.output_bits(y))


def _finish(ctx: Context, node: Any, problem: P.Problem, weights: int, bias: int, inputs: list[str],
            **attrs: Any) -> Layer:
    layer = ctx.layer(node, "mac", inputs=inputs)
    layer.problem, layer.macs, layer.weights, layer.bias = problem, problem.macs, weights, bias
    layer.attrs.update(attrs)
    return layer


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _auto_pad(ctx: Context, node: Any) -> str:
    """The auto_pad attribute, one of ONNX's four values: TensorFlow's "SAME", or an integer, had
    been read as no padding (onnxruntime refuses the model)."""
    auto = ctx.attrs(node).get("auto_pad", b"NOTSET")
    auto = auto.decode(errors="replace") if isinstance(auto, bytes) else auto
    if auto not in _AUTO_PADS:
        raise UserError(f"{ctx.where(node)}: auto_pad {auto!r}: expected one of {', '.join(_AUTO_PADS)}")
    return auto


def _group(ctx: Context, node: Any) -> int:
    """The group attribute: a positive integer (2.5 and "2" had been read as 2)."""
    group = ctx.attrs(node).get("group", 1)
    if not isinstance(group, int) or group < 1:
        raise UserError(f"{ctx.where(node)}: group {group!r}: expected a positive integer")
    return group


def _spatial_attrs(ctx: Context, node: Any, in_sizes: tuple[int, ...], kernel: tuple[int, ...]
                   ) -> tuple[tuple[int, ...], tuple[int, ...], list[tuple[int, int]]]:
    """strides, dilations and (begin, end) padding per spatial axis, with auto_pad resolved."""
    a = ctx.attrs(node)
    rank = len(in_sizes)
    strides = tuple(a.get("strides", [1] * rank))
    dil = tuple(a.get("dilations", [1] * rank))
    pads = auto_pads(_auto_pad(ctx, node), in_sizes, kernel, strides, dil)
    if pads is None:
        flat = list(a.get("pads", [0] * (2 * rank)))
        pads = [(flat[i], flat[i + rank]) for i in range(rank)]
    return strides, dil, pads


def auto_pads(auto: str, in_sizes: Iterable[int], kernel: Iterable[int], strides: Iterable[int],
              dil: Iterable[int]) -> list[tuple[int, int]] | None:
    """(begin, end) padding per spatial axis that ``auto_pad`` implies (None for NOTSET: the ``pads``
    attribute holds it): SAME_UPPER / SAME_LOWER pad ``max(0, (ceil(n/s) - 1) s + (k - 1) d + 1 - n)``
    with the odd element at the end / the beginning; VALID pads nothing. (The compiler lowers with it too.)"""
    if auto == "NOTSET":
        return None
    pads = []
    for n, k, s, d in zip(in_sizes, kernel, strides, dil):
        total = max(0, (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n) if auto != "VALID" else 0
        small, big = total // 2, total - total // 2
        pads.append((small, big) if auto != "SAME_LOWER" else (big, small))
    return pads


def _transposed_output_fits(ctx: Context, node: Any, in_sizes: tuple[int, ...], kernel: tuple[int, ...],
                            strides: tuple[int, ...], dil: tuple[int, ...]) -> None:
    """A transposed conv's output (ONNX's formula: the full scatter ``s (n - 1) + output_padding +
    (k - 1) d + 1``, less the pads, or the given ``output_shape``) must be non-empty, no larger than
    the scatter, and what shape inference says: an empty one, and an output_shape the scatter
    cannot reach, had been costed (onnxruntime refuses both)."""
    a = ctx.attrs(node)
    rank = len(in_sizes)
    extra = list(a.get("output_padding", [0] * rank))
    full = [s * (n - 1) + p + (k - 1) * d + 1 for n, k, s, d, p in zip(in_sizes, kernel, strides, dil, extra)]
    auto = _auto_pad(ctx, node)
    if "output_shape" in a:
        out = list(a["output_shape"])[-rank:]
        if any(o > f for o, f in zip(out, full)):
            raise UserError(f"{ctx.where(node)}: output_shape {out} exceeds the transposed convolution's full "
                            f"output {full}")
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [n * s for n, s in zip(in_sizes, strides)]
    elif auto == "VALID":
        out = full
    else:
        flat = list(a.get("pads", [0] * (2 * rank)))
        out = [f - flat[i] - flat[i + rank] for i, f in enumerate(full)]
    if any(o < 1 for o in out):
        raise UserError(f"{ctx.where(node)}: the pads leave an empty output {out} (full output {full})")
    got = list(ctx.shape(node, node.output[0])[2:])
    if got != out:
        raise UserError(f"{ctx.where(node)}: output shape {got} disagrees with the transposed convolution's "
                        f"arithmetic {out}")


def _conv(ctx: Context, node: Any, xi: int, wi: int, bi: int | None) -> Layer:
    x, w = ctx.input(node, xi), ctx.input(node, wi)
    b = ctx.input(node, bi) if bi is not None else ""
    xs, ws, ys = ctx.shape(node, x), ctx.shape(node, w), ctx.shape(node, node.output[0])
    rank = len(xs) - 2
    if rank not in (1, 2):
        raise UnsupportedVariant(f"{ctx.where(node)}: {rank}-D convolution is not supported (1-D and 2-D are)")
    group = _group(ctx, node)
    kernel = tuple(ctx.attrs(node).get("kernel_shape", ws[2:]))
    if xs[1] % group or ws[0] % group:
        raise UserError(f"{ctx.where(node)}: group {group} does not divide the {xs[1]} input channels and the "
                        f"{ws[0]} output channels")
    ctx.check_shape(node, w, (None, xs[1] // group, *kernel), "output channels, input channels / group, kernel")
    if b:
        ctx.check_shape(node, b, (ws[0],), "output channels", role="bias")
    strides, dil, pads = _spatial_attrs(ctx, node, xs[2:], kernel)
    bits = _widths(ctx, x, w, node.output[0])
    if rank == 1:
        prob = P.conv1d(xs[1], ws[0], xs[2], kernel[0], strides[0], pads[0], dil[0], group, xs[0], bits)
    else:
        padding = (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
        prob = P.conv2d(xs[1], ws[0], xs[2], xs[3], kernel, strides, padding, dil, group, xs[0], bits)
    sizes = prob.sizes
    got = (sizes["N"], sizes["G"] * sizes["K"], *([sizes["P"], sizes["Q"]] if rank == 2 else [sizes["Q"]]))
    if got != ys:
        raise UserError(f"{ctx.where(node)}: output shape {list(ys)} disagrees with the convolution arithmetic "
                        f"{list(got)}")
    return _finish(ctx, node, prob, ctx.static_numel(node, w), ctx.static_numel(node, b), [x, w, b],
                   groups=group, depthwise=group > 1 and group == xs[1])


def _conv_transpose(ctx: Context, node: Any) -> Layer:
    x, w, b = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    xs, ws = ctx.shape(node, x), ctx.shape(node, w)
    rank = len(xs) - 2
    if rank not in (1, 2):
        raise UnsupportedVariant(f"{ctx.where(node)}: {rank}-D transposed convolution is not supported (1-D and 2-D are)")
    a = ctx.attrs(node)
    group = _group(ctx, node)
    kernel = tuple(a.get("kernel_shape", ws[2:]))
    ctx.check_shape(node, w, (xs[1], None, *kernel), "input channels, output channels / group, kernel")
    if b:
        ctx.check_shape(node, b, (ws[1] * group,), "output channels", role="bias")
    strides = tuple(a.get("strides", [1] * rank))
    dil = tuple(a.get("dilations", [1] * rank))
    _transposed_output_fits(ctx, node, xs[2:], kernel, strides, dil)
    h, wd = (1, xs[2]) if rank == 1 else (xs[2], xs[3])
    if rank == 1:
        kernel, strides, dil = (1, kernel[0]), (1, strides[0]), (1, dil[0])
    bits = _widths(ctx, x, w, node.output[0])
    prob = P.conv_transpose2d(xs[1], ws[1] * group, h, wd, kernel, strides, dil, group, xs[0], bits)
    return _finish(ctx, node, prob, ctx.static_numel(node, w), ctx.static_numel(node, b), [x, w, b],
                   groups=group, spatial_rank=rank)


def _gemm(ctx: Context, node: Any, ai: int, bi: int, ci: int) -> Layer:
    a_name, b_name, c_name = ctx.input(node, ai), ctx.input(node, bi), ctx.input(node, ci)
    at = ctx.attrs(node)
    a, b = ctx.shape(node, a_name), ctx.shape(node, b_name)
    m, k = (a[1], a[0]) if at.get("transA", 0) else a
    n, kb = (b[0], b[1]) if at.get("transB", 0) else (b[1], b[0])
    if kb != k:
        raise UserError(f"{ctx.where(node)}: A {list(a)} and B {list(b)} disagree on the summed dim ({k} vs {kb}, "
                        f"transA={at.get('transA', 0)}, transB={at.get('transB', 0)})")
    if c_name:
        ctx.check_broadcast(node, c_name, (m, n), "the output", "M, N", role="C")
    bits = _widths(ctx, a_name, b_name, node.output[0])
    if ctx.is_static(b_name):
        prob = P.fully_connected(k, n, rows=m, bits=bits)
    else:
        prob = P.matmul(m, k, n, 1, bits)
    return _finish(ctx, node, prob, ctx.static_numel(node, b_name) + ctx.static_numel(node, a_name),
                   ctx.static_numel(node, c_name), [a_name, b_name, c_name])


def _matmul(ctx: Context, node: Any, ai: int, bi: int) -> Layer:
    a_name, b_name = ctx.input(node, ai), ctx.input(node, bi)
    a, b = list(ctx.shape(node, a_name)), list(ctx.shape(node, b_name))
    if len(a) == 1:
        a = [1, a[0]]
    if len(b) == 1:
        b = [b[0], 1]
    m, k, n = a[-2], a[-1], b[-1]
    if b[-2] != k:
        raise UserError(f"{ctx.where(node)}: A {a} and B {b} disagree on the summed dim ({k} vs {b[-2]})")
    batch_a, batch_b = math.prod(a[:-2]), math.prod(b[:-2])
    bits = _widths(ctx, a_name, b_name, node.output[0])
    if batch_b == 1:
        # one shared right operand (a weight matrix, or K^T broadcast): fold A's batch into the rows
        prob = (P.fully_connected(k, n, rows=batch_a * m, bits=bits) if ctx.is_static(b_name)
                else P.matmul(batch_a * m, k, n, 1, bits))
    else:
        try:
            batch = math.prod(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
        except ValueError:
            raise UserError(f"{ctx.where(node)}: the batch dims of A {a} and B {b} do not broadcast") from None
        prob = P.matmul(m, k, n, batch, bits)
    weights = ctx.static_numel(node, a_name) + ctx.static_numel(node, b_name)
    return _finish(ctx, node, prob, weights, 0, [a_name, b_name], batch=prob.sizes["B"])
