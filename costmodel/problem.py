"""One layer as an einsum loop nest (Timeloop's generic problem).

A Problem is pure shape: named loop dimensions with sizes, and data spaces (tensors) whose every
axis is an affine sum of dimensions (``H = stride*P + dilation*R``). Names of layers live in the
workload graph, not here, so two layers of the same shape compare and hash equal and are mapped once.

Tensor names are roles shared by every constructor, so hardware configs can say which level holds
which tensor without knowing the layer type: ``I`` (input activations), ``W`` (weights, or the second
operand of an activation-activation matmul) and ``O`` (the output, read-modify-write).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from costmodel.errors import UserError

TENSOR_ROLES = ("I", "W", "O")

Term = tuple[int, str]
"""``(coefficient, dimension)``: one addend of an affine index expression."""


@dataclass(frozen=True)
class Tensor:
    """A data space: each axis is an affine sum of loop dimensions."""

    name: str
    axes: tuple[tuple[Term, ...], ...]
    bits: int = 8
    is_output: bool = False

    def dims(self) -> frozenset[str]:
        """Loop dimensions that index this tensor (the others are its reuse dimensions)."""
        return frozenset(d for axis in self.axes for _, d in axis)

    def extent(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """Size of each axis when every dimension ``d`` runs over ``range(sizes[d])``."""
        return tuple(1 + sum(c * (sizes[d] - 1) for c, d in axis) for axis in self.axes)


@dataclass(frozen=True)
class Problem:
    """A layer's loop nest: dimensions (ordered, outer to inner by convention) and tensors."""

    kind: str
    dims: tuple[tuple[str, int], ...]
    tensors: tuple[Tensor, ...]
    psum_bits: int = 32
    params: tuple[tuple[str, Any], ...] = field(default=(), compare=False)
    """Constructor arguments, kept for printing and rebuilding; not part of identity."""

    def __post_init__(self) -> None:
        names = [d for d, _ in self.dims]
        if len(set(names)) != len(names):
            raise UserError(f"problem {self.kind}: repeated dimension in {names}")
        for d, n in self.dims:
            if not isinstance(n, int) or n < 1:
                raise UserError(f"problem {self.kind}: dimension {d} must be a positive integer, got {n!r}")
        for t in self.tensors:
            unknown = t.dims() - set(names)
            if unknown:
                raise UserError(f"problem {self.kind}: tensor {t.name} uses unknown dimensions {sorted(unknown)}")
        if sum(t.is_output for t in self.tensors) != 1:
            raise UserError(f"problem {self.kind}: exactly one tensor must be the output")

    # ---- sizes ---------------------------------------------------------------------------------
    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d for d, _ in self.dims)

    @property
    def macs(self) -> int:
        return math.prod(n for _, n in self.dims)

    @property
    def output(self) -> Tensor:
        return next(t for t in self.tensors if t.is_output)

    def tensor(self, name: str) -> Tensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def tensor_shape(self, name: str) -> tuple[int, ...]:
        return self.tensor(name).extent(self.sizes)

    def tensor_elements(self, name: str) -> int:
        return math.prod(self.tensor_shape(name))

    def tensor_bits(self, name: str) -> int:
        return self.tensor_elements(name) * self.tensor(name).bits

    # ---- serialization ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON/YAML): the general einsum form plus the constructor's arguments."""
        return {
            "kind": self.kind,
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params},
            "dims": dict(self.dims),
            "tensors": [
                {
                    "name": t.name,
                    "axes": [[[c, d] for c, d in axis] for axis in t.axes],
                    "bits": t.bits,
                    "is_output": t.is_output,
                }
                for t in self.tensors
            ],
            "psum_bits": self.psum_bits,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "layer") -> Problem:
        """Inverse of :meth:`to_dict`; also accepts the short form ``{kind: conv2d, <constructor args>}``.

        ``where`` names the file for error messages.
        """
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected a mapping with 'kind', got {type(data).__name__}")
        if "dims" in data and "tensors" in data:
            try:
                tensors = tuple(
                    Tensor(
                        name=str(t["name"]),
                        axes=tuple(tuple((int(c), str(d)) for c, d in axis) for axis in t["axes"]),
                        bits=int(t.get("bits", 8)),
                        is_output=bool(t.get("is_output", False)),
                    )
                    for t in data["tensors"]
                )
                dims = tuple((str(d), n) for d, n in dict(data["dims"]).items())
            except (KeyError, TypeError, ValueError) as exc:
                raise UserError(f"{where}: malformed einsum problem ({exc!r})") from None
            params = data.get("params") or {}
            return cls(
                kind=str(data.get("kind", "einsum")),
                dims=dims,
                tensors=tensors,
                psum_bits=int(data.get("psum_bits", 32)),
                params=tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()),
            )
        kind = data.get("kind")
        ctor = CONSTRUCTORS.get(kind)  # type: ignore[arg-type]
        if ctor is None:
            raise UserError(f"{where}: field 'kind': expected one of {sorted(CONSTRUCTORS)}, got {kind!r}")
        args = {k: v for k, v in data.items() if k != "kind"}
        args.update(data.get("params") or {})
        args.pop("params", None)
        try:
            return ctor(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in args.items()})
        except TypeError as exc:
            raise UserError(f"{where}: bad arguments for {kind}: {exc}") from None

    def describe(self) -> str:
        """Short human-readable signature, e.g. ``conv2d N1 G1 K64 C64 P56 Q56 R3 S3``."""
        return f"{self.kind} " + " ".join(f"{d}{n}" for d, n in self.dims)


# ---- constructors ---------------------------------------------------------------------------------


def _pair(v: int | tuple[int, ...], name: str) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    if len(v) == 2:
        return (int(v[0]), int(v[1]))
    raise UserError(f"{name}: expected an int or a pair, got {v!r}")


def _pads(p: int | tuple[int, ...]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right); accepts an int, (h, w) or ONNX's (t, l, b, r)."""
    if isinstance(p, int):
        return (p, p, p, p)
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    if len(p) == 4:
        return (p[0], p[1], p[2], p[3])
    raise UserError(f"padding: expected an int, a pair or four values, got {p!r}")


def _conv_out(size: int, pad: int, k: int, stride: int, dil: int, what: str) -> int:
    out = (size + pad - dil * (k - 1) - 1) // stride + 1
    if out < 1:
        raise UserError(f"{what}: kernel {k} (dilation {dil}) does not fit input {size} with padding {pad}")
    return out


def _bits(bits: int | tuple[int, int, int]) -> tuple[int, int, int]:
    """(input, weight, output) bit widths."""
    if isinstance(bits, int):
        return (bits, bits, bits)
    return (int(bits[0]), int(bits[1]), int(bits[2]))


def conv2d(
    c_in: int,
    c_out: int,
    h: int,
    w: int,
    kernel: int | tuple[int, int] = 3,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, ...] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    n: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
) -> Problem:
    """2-D convolution over an ``h x w`` input (before padding); grouped and depthwise via ``groups``.

    Dimensions: N, G, K (outputs per group), C (inputs per group), P, Q (output rows, cols), R, S.
    The input tensor's extent is the padded window actually touched: ``(P-1)*stride + (R-1)*dil + 1``.
    """
    r, s = _pair(kernel, "kernel")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pt, pl, pb, pr = _pads(padding)
    if groups < 1 or c_in % groups or c_out % groups:
        raise UserError(f"conv2d: groups={groups} must divide c_in={c_in} and c_out={c_out}")
    p = _conv_out(h, pt + pb, r, sh, dh, "conv2d rows")
    q = _conv_out(w, pl + pr, s, sw, dw, "conv2d cols")
    bi, bw, bo = _bits(bits)
    dims = (("N", n), ("G", groups), ("K", c_out // groups), ("C", c_in // groups),
            ("P", p), ("Q", q), ("R", r), ("S", s))
    tensors = (
        Tensor("I", (((1, "N"),), ((1, "G"),), ((1, "C"),), ((sh, "P"), (dh, "R")), ((sw, "Q"), (dw, "S"))), bi),
        Tensor("W", (((1, "G"),), ((1, "K"),), ((1, "C"),), ((1, "R"),), ((1, "S"),)), bw),
        Tensor("O", (((1, "N"),), ((1, "G"),), ((1, "K"),), ((1, "P"),), ((1, "Q"),)), bo, is_output=True),
    )
    params = (("c_in", c_in), ("c_out", c_out), ("h", h), ("w", w), ("kernel", (r, s)), ("stride", (sh, sw)),
              ("padding", (pt, pl, pb, pr)), ("dilation", (dh, dw)), ("groups", groups), ("n", n),
              ("bits", (bi, bw, bo)))
    return Problem("conv2d", dims, tensors, psum_bits, params)


def depthwise_conv2d(channels: int, h: int, w: int, multiplier: int = 1, **kw: Any) -> Problem:
    """Depthwise conv: one group per input channel (C=1 per group, K=multiplier)."""
    return conv2d(channels, channels * multiplier, h, w, groups=channels, **kw)


def conv1d(
    c_in: int,
    c_out: int,
    length: int,
    kernel: int = 3,
    stride: int = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int = 1,
    groups: int = 1,
    n: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
) -> Problem:
    """1-D convolution, as a 2-D one with a single row (P=R=1); the time axis is Q/S."""
    pl, pr = (padding, padding) if isinstance(padding, int) else (int(padding[0]), int(padding[1]))
    prob = conv2d(c_in, c_out, 1, length, (1, kernel), (1, stride), (0, pl, 0, pr), (1, dilation), groups, n,
                  bits, psum_bits)
    params = (("c_in", c_in), ("c_out", c_out), ("length", length), ("kernel", kernel), ("stride", stride),
              ("padding", (pl, pr)), ("dilation", dilation), ("groups", groups), ("n", n),
              ("bits", _bits(bits)))
    return Problem("conv1d", prob.dims, prob.tensors, psum_bits, params)


def conv_transpose2d(
    c_in: int,
    c_out: int,
    h: int,
    w: int,
    kernel: int | tuple[int, int] = 2,
    stride: int | tuple[int, int] = 2,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    n: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
) -> Problem:
    """Transposed conv in scatter form: every input pixel times every kernel tap (no inserted zeros).

    Dimensions: N, G, K, C, H, W (input rows, cols), R, S; the output axis is ``stride*H + dil*R``
    before cropping by padding, so MACs are exactly ``N*C_in*H*W*K*R*S`` per group, as a real
    implementation does them. Padding only crops the output and does not change the work.
    """
    r, s = _pair(kernel, "kernel")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    if groups < 1 or c_in % groups or c_out % groups:
        raise UserError(f"conv_transpose2d: groups={groups} must divide c_in={c_in} and c_out={c_out}")
    bi, bw, bo = _bits(bits)
    dims = (("N", n), ("G", groups), ("K", c_out // groups), ("C", c_in // groups),
            ("H", h), ("W", w), ("R", r), ("S", s))
    tensors = (
        Tensor("I", (((1, "N"),), ((1, "G"),), ((1, "C"),), ((1, "H"),), ((1, "W"),)), bi),
        Tensor("W", (((1, "G"),), ((1, "C"),), ((1, "K"),), ((1, "R"),), ((1, "S"),)), bw),
        Tensor("O", (((1, "N"),), ((1, "G"),), ((1, "K"),), ((sh, "H"), (dh, "R")), ((sw, "W"), (dw, "S"))), bo,
               is_output=True),
    )
    params = (("c_in", c_in), ("c_out", c_out), ("h", h), ("w", w), ("kernel", (r, s)), ("stride", (sh, sw)),
              ("dilation", (dh, dw)), ("groups", groups), ("n", n), ("bits", (bi, bw, bo)))
    return Problem("conv_transpose2d", dims, tensors, psum_bits, params)


def matmul(
    m: int,
    k: int,
    n: int,
    batch: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
    kind: str = "matmul",
) -> Problem:
    """``O[B,M,N] = sum_K I[B,M,K] * W[B,K,N]``; attention's QK^T and PV are batched matmuls."""
    bi, bw, bo = _bits(bits)
    dims = (("B", batch), ("M", m), ("N", n), ("K", k))
    tensors = (
        Tensor("I", (((1, "B"),), ((1, "M"),), ((1, "K"),)), bi),
        Tensor("W", (((1, "B"),), ((1, "K"),), ((1, "N"),)), bw),
        Tensor("O", (((1, "B"),), ((1, "M"),), ((1, "N"),)), bo, is_output=True),
    )
    params = (("m", m), ("k", k), ("n", n), ("batch", batch), ("bits", (bi, bw, bo)))
    return Problem(kind, dims, tensors, psum_bits, params)


def fully_connected(in_features: int, out_features: int, rows: int = 1, **kw: Any) -> Problem:
    """A linear layer on ``rows`` vectors: a matmul whose W is a shared weight matrix (no batch dim)."""
    bi, bw, bo = _bits(kw.get("bits", 8))
    prob = matmul(rows, in_features, out_features, 1, (bi, bw, bo), kw.get("psum_bits", 32), kind="fc")
    params = (("in_features", in_features), ("out_features", out_features), ("rows", rows),
              ("bits", (bi, bw, bo)))
    return Problem("fc", prob.dims, prob.tensors, prob.psum_bits, params)


CONSTRUCTORS = {
    "conv2d": conv2d,
    "depthwise_conv2d": depthwise_conv2d,
    "conv1d": conv1d,
    "conv_transpose2d": conv_transpose2d,
    "matmul": matmul,
    "fc": fully_connected,
}
