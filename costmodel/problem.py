"""One layer as an einsum loop nest (Timeloop's generic problem).

A Problem is pure shape: named loop dimensions with sizes, and data spaces (tensors) whose every
axis is an affine sum of dimensions (``H = stride*P + dilation*R``). Names of layers live in the
workload graph, not here, so two layers of the same shape compare and hash equal and are mapped once.

Tensor names are roles shared by every constructor, so hardware configs can say which level holds
which tensor without knowing the layer type: ``I`` (input activations), ``W`` (weights, or the second
operand of an activation-activation matmul) and ``O`` (the output, read-modify-write).
"""

from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from costmodel.errors import FieldError, UserError

if TYPE_CHECKING:
    from costmodel.yamlio import LineMap, PathKey

TENSOR_ROLES = ("I", "W", "O")

MAX_COUNT = 2**48
"""Most MACs, and most elements of one tensor, in a layer: the cost model counts accesses exactly in
int64, and counts times tile sizes and word widths must stay below 2**63."""

MAX_DIM = 2**31 - 1
"""Largest size of one dimension (padded or not): a MappingBatch holds loop factors as int32
(``costmodel.mapping.FACTOR_DTYPE``, half the memory the count kernel streams)."""

MAX_DIMS = 32
"""Most dimensions of a layer: a MappingBatch holds loop ranks as int8, and the mapspace marks a
level's active dims as bits of one int64."""


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
            raise FieldError("dims", f"problem {self.kind}: repeated dimension in {names}")
        for d, n in self.dims:
            if as_int(n) is None or n < 1:
                raise FieldError(("dims", d), f"problem {self.kind}: dimension {d} must be a positive integer, got {n!r}")
        object.__setattr__(self, "dims", tuple((d, int(n)) for d, n in self.dims))  # (numpy ints: plain ints)
        if not names:
            raise FieldError("dims", f"problem {self.kind}: no dimensions")
        if len(names) > MAX_DIMS:
            raise FieldError("dims", f"problem {self.kind}: {len(names)} dimensions, more than the {MAX_DIMS} the cost model "
                            "holds")
        # the configs hold tensors by these roles (a level's `holds`), and so does the cost model
        roles = sorted(t.name for t in self.tensors)
        outputs = [t.name for t in self.tensors if t.is_output]
        if roles != sorted(TENSOR_ROLES) or outputs != ["O"]:
            got = ", ".join(t.name + (" (output)" if t.is_output else "") for t in self.tensors) or "none"
            raise FieldError("tensors", f"problem {self.kind}: expected the tensors I, W and O (the output), each once; "
                            f"got {got}")
        object.__setattr__(self, "psum_bits", _ints(self.psum_bits, "psum_bits")[0])
        # numpy numbers as Python's: the layer's JSON, YAML and database signature (an np.int64 of 32
        # was no 32 to json.dumps, and gave an equal layer another signature)
        object.__setattr__(self, "params", tuple((k, _plain(v)) for k, v in self.params))
        for t in self.tensors:
            unknown = t.dims() - set(names)
            if unknown:
                raise FieldError("tensors", f"problem {self.kind}: tensor {t.name} uses unknown dimensions {sorted(unknown)}")
        if sum(t.is_output for t in self.tensors) != 1:
            raise FieldError("tensors", f"problem {self.kind}: exactly one tensor must be the output")
        for d, n in self.dims:  # (first: a dimension too large makes the counts too large too)
            if n > MAX_DIM:
                raise FieldError(("dims", d), f"problem {self.describe()}: dimension {d} = {n:,} exceeds {MAX_DIM:,} (2**31 - 1), "
                                "the largest loop bound the cost model holds")
        counts = {"MACs": self.macs, **{f"elements of tensor {t.name}": self.tensor_elements(t.name)
                                        for t in self.tensors}}
        for what, count in counts.items():
            if count > MAX_COUNT:
                raise UserError(f"problem {self.describe()}: {count:,} {what} exceed 2**48, the limit that "
                                "keeps the cost model's exact counts inside int64")

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
    def from_dict(cls, data: dict[str, Any], where: str = "layer", lines: LineMap | None = None) -> Problem:
        """Inverse of :meth:`to_dict`; also accepts the short form ``{kind: conv2d, <constructor args>}``.

        ``where`` names the file and ``lines`` (from :func:`costmodel.yamlio.load_yaml`) the line of each
        field, so a mistake reads ``file:4: field 'stride': expected ...`` in the user's own terms.
        """
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected a mapping with 'kind', got {type(data).__name__}")
        try:
            return _einsum_form(data) if "dims" in data and "tensors" in data else _short_form(data)
        except FieldError as exc:
            line = lines.lines.get(exc.path) if lines is not None else None  # none for a defaulted field
            raise UserError(f"{where}:{line}: {exc}" if line else f"{where}: {exc}") from None
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None

    def describe(self) -> str:
        """Short human-readable signature, e.g. ``conv2d N1 G1 K64 C64 P56 Q56 R3 S3``."""
        return f"{self.kind} " + " ".join(f"{d}{n}" for d, n in self.dims)


# ---- constructors ---------------------------------------------------------------------------------
# Each constructor checks its own arguments under the names it takes them by, so a layer file's
# mistake is reported in the file's terms (``c_out``, ``length``), never as an internal dimension.


def _label(path: str | PathKey) -> str:
    """The field as the user wrote it: ``stride``, ``tensors[0].bits``."""
    from costmodel.yamlio import format_path  # here, not at the top: importing this module needs no yaml

    return path if isinstance(path, str) else format_path(path)


def _bad(path: str | PathKey, problem: str) -> FieldError:
    """The usual complaint about one field: ``field 'stride': <problem>``."""
    return FieldError(path, f"field '{_label(path)}': {problem}")


def expect_problem(problem: Any) -> Problem:
    """An API argument that must be a Problem: a TypeError that says so, not one from deep inside."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem: expected a costmodel.problem.Problem (conv2d(...), matmul(...), "
                        f"Problem.from_dict(...)), got {type(problem).__name__}")
    return problem


def as_int(x: Any) -> int | None:
    """``x`` as a Python int when it is an integer of any kind (numpy's too: sizes and factors taken
    from arrays), else None: YAML's ``true`` (a bool is an int to Python) and a float are not."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        return None
    return int(x)


def _plain(v: Any) -> Any:
    """``v`` with numpy integers and floats (also inside tuples and lists) as Python's."""
    if isinstance(v, (list, tuple)):
        return tuple(_plain(x) for x in v)
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Real) and not isinstance(v, float):
        return float(v)
    return v


def _ints(v: Any, path: str | PathKey, lengths: tuple[int, ...] = (), least: int = 1) -> tuple[int, ...]:
    """``v`` as ints >= ``least``: one int, or a list of one of the allowed ``lengths``.

    A bool is an int to Python, but YAML's ``true`` is no size; a float is rejected, not rounded.
    """
    items = tuple(v) if isinstance(v, (list, tuple)) and len(v) in lengths else (v,)
    if all(as_int(x) is not None and x >= least for x in items):
        return tuple(int(x) for x in items)
    one = "a positive integer" if least == 1 else f"an integer >= {least}"
    alternatives = f" or a list of {' or '.join(map(str, lengths))} of them" if lengths else ""
    raise _bad(path, f"expected {one}{alternatives}, got {v!r}")


def _counts(**fields: Any) -> None:
    """Each of these constructor arguments must be a positive int, checked under the user's name for it."""
    for name, v in fields.items():
        _ints(v, name)


def _pair(v: int | tuple[int, ...], name: str, least: int = 1) -> tuple[int, int]:
    """(rows, cols) from an int or a pair."""
    a = _ints(v, name, (2,), least)
    return (a[0], a[-1])


def _pads(p: int | tuple[int, ...]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right); accepts an int, (h, w) or ONNX's (t, l, b, r)."""
    a = _ints(p, "padding", (2, 4), least=0)
    return (a * 4 if len(a) == 1 else a * 2 if len(a) == 2 else a)  # type: ignore[return-value]


def _bits(bits: int | tuple[int, ...]) -> tuple[int, int, int]:
    """(input, weight, output) bit widths from one width or three."""
    a = _ints(bits, "bits", (3,))
    return (a * 3 if len(a) == 1 else a)  # type: ignore[return-value]


def _groups(groups: int, c_in: int, c_out: int) -> None:
    """Grouped convs split both channel counts evenly."""
    if c_in % groups or c_out % groups:
        raise _bad("groups", f"{groups} must divide c_in={c_in} and c_out={c_out}")


def _conv_out(size: int, pad: int, k: int, stride: int, dil: int, size_name: str) -> int:
    out = (size + pad - dil * (k - 1) - 1) // stride + 1
    if out < 1:
        raise _bad("kernel", f"{k} (dilation {dil}) does not fit input {size_name}={size} with padding {pad}")
    return out


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
    _counts(c_in=c_in, c_out=c_out, h=h, w=w, groups=groups, n=n)
    r, s = _pair(kernel, "kernel")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    pt, pl, pb, pr = _pads(padding)
    _groups(groups, c_in, c_out)
    p = _conv_out(h, pt + pb, r, sh, dh, "h")
    q = _conv_out(w, pl + pr, s, sw, dw, "w")
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


def depthwise_conv2d(
    channels: int,
    h: int,
    w: int,
    multiplier: int = 1,
    kernel: int | tuple[int, int] = 3,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, ...] = 0,
    dilation: int | tuple[int, int] = 1,
    n: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
) -> Problem:
    """Depthwise conv: one group per input channel (C=1 per group, K=multiplier).

    The arguments are spelled out, not ``**kw``, so a layer file's typo is named with the accepted fields.
    """
    _counts(channels=channels, multiplier=multiplier)
    return conv2d(channels, channels * multiplier, h, w, kernel, stride, padding, dilation, channels, n, bits,
                  psum_bits)


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
    _counts(length=length, kernel=kernel, stride=stride, dilation=dilation)
    pl, pr = _pair(padding, "padding", least=0)
    _conv_out(length, pl + pr, kernel, stride, dilation, "length")  # here, or conv2d would call it w
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
    _counts(c_in=c_in, c_out=c_out, h=h, w=w, groups=groups, n=n)
    r, s = _pair(kernel, "kernel")
    sh, sw = _pair(stride, "stride")
    dh, dw = _pair(dilation, "dilation")
    _groups(groups, c_in, c_out)
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
    _counts(m=m, k=k, n=n, batch=batch)
    bi, bw, bo = _bits(bits)
    dims = (("B", batch), ("M", m), ("N", n), ("K", k))
    tensors = (
        Tensor("I", (((1, "B"),), ((1, "M"),), ((1, "K"),)), bi),
        Tensor("W", (((1, "B"),), ((1, "K"),), ((1, "N"),)), bw),
        Tensor("O", (((1, "B"),), ((1, "M"),), ((1, "N"),)), bo, is_output=True),
    )
    params = (("m", m), ("k", k), ("n", n), ("batch", batch), ("bits", (bi, bw, bo)))
    return Problem(kind, dims, tensors, psum_bits, params)


def fully_connected(
    in_features: int,
    out_features: int,
    rows: int = 1,
    bits: int | tuple[int, int, int] = 8,
    psum_bits: int = 32,
) -> Problem:
    """A linear layer on ``rows`` vectors: a matmul whose W is a shared weight matrix (no batch dim)."""
    _counts(in_features=in_features, out_features=out_features, rows=rows)
    bi, bw, bo = _bits(bits)
    prob = matmul(rows, in_features, out_features, 1, (bi, bw, bo), psum_bits, kind="fc")
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


# ---- layer files (Problem.from_dict) -------------------------------------------------------------


def _known(given: dict[Any, Any], allowed: list[str], at: PathKey = ()) -> None:
    """A typo is named together with the fields that would have been accepted there."""
    for k in given:
        if k not in allowed:
            raise FieldError((*at, k), f"unknown field {_label((*at, k))!r}; expected one of {allowed}")


def _mapping(data: dict[str, Any], key: str, what: str) -> dict[Any, Any]:
    """``data[key]`` (absent or left empty: ``{}``), which must be a mapping of ``what``."""
    v = data.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _bad(key, f"expected a mapping of {what}, got {v!r}")
    return v


def _short_form(data: dict[str, Any]) -> Problem:
    """``{kind: conv2d, c_in: ..., ...}``, the arguments possibly under ``params`` (as :meth:`Problem.to_dict`
    writes them): checked against the constructor's signature first, so a typo or a missing field is
    reported by its name instead of as Python's TypeError."""
    kind = data.get("kind")
    ctor = CONSTRUCTORS.get(kind) if isinstance(kind, str) else None
    if "kind" not in data:  # (placed at the layer's own line)
        raise FieldError((), f"field 'kind' is missing; expected one of {sorted(CONSTRUCTORS)}")
    if ctor is None:
        raise _bad("kind", f"expected one of {sorted(CONSTRUCTORS)}, got {kind!r}")
    signature = inspect.signature(ctor).parameters
    fields = [name for name in signature if name != "kind"]
    top = {k: v for k, v in data.items() if k not in ("kind", "params")}
    params = _mapping(data, "params", f"{kind} fields")
    _known(top, fields)
    _known(params, fields, ("params",))
    both = [name for name in params if name in top]
    if both:  # (which one would win is a guess: `m: 10` beside `params: {m: 64}` took 64 silently)
        raise _bad(("params", both[0]), f"{both[0]} is given twice, here and at the top level ({top[both[0]]!r}); "
                                        "give it once")
    args = top | params
    missing = [name for name, p in signature.items() if p.default is p.empty and name not in args]
    if missing:
        raise FieldError((), f"bad arguments for {kind}: missing field(s) {', '.join(missing)}")
    try:
        return ctor(**args)
    except FieldError as exc:
        if exc.path[0] in params:  # point at the line under params
            exc.path = ("params", *exc.path)
        raise


def _einsum_form(data: dict[str, Any]) -> Problem:
    """The general form of :meth:`Problem.to_dict`, checked field by field."""
    _known(data, ["kind", "params", "dims", "tensors", "psum_bits"])
    dims = _mapping(data, "dims", "dimension names to sizes")
    tensors = data["tensors"]
    if not isinstance(tensors, list):
        raise _bad("tensors", f"expected a list of tensors, got {tensors!r}")
    return Problem(
        kind=str(data.get("kind", "einsum")),
        dims=tuple((str(d), _ints(n, ("dims", d))[0]) for d, n in dims.items()),
        tensors=tuple(_tensor(t, ("tensors", i)) for i, t in enumerate(tensors)),
        psum_bits=data.get("psum_bits", 32),
        params=tuple((k, tuple(v) if isinstance(v, list) else v)
                     for k, v in _mapping(data, "params", "constructor arguments").items()),
    )


def _tensor(t: Any, at: PathKey) -> Tensor:
    """One entry of ``tensors``: ``{name, axes: [[[coefficient, dimension], ...], ...], bits, is_output}``."""
    if not isinstance(t, dict) or not isinstance(t.get("name"), str):
        raise _bad(at, f"expected a mapping with a string 'name', got {t!r}")
    _known(t, ["name", "axes", "bits", "is_output"], at)
    axes = t.get("axes")
    if not (isinstance(axes, list) and all(isinstance(axis, list) and all(
            isinstance(term, list) and len(term) == 2 and isinstance(term[1], str) for term in axis)
            for axis in axes)):
        raise _bad((*at, "axes"), f"expected a list of axes, each a list of [coefficient, dimension] pairs, "
                   f"got {axes!r}")
    seen: set[str] = set()
    for i, axis in enumerate(axes):
        for j, (_, d) in enumerate(axis):
            if d in seen:  # (the counting's closed forms take each dimension once per tensor)
                raise _bad((*at, "axes", i, j, 1), f"dimension {d!r} appears twice in tensor {t['name']}; "
                           f"expected each dimension at most once per tensor")
            seen.add(d)
    is_output = t.get("is_output", False)
    if not isinstance(is_output, bool):
        raise _bad((*at, "is_output"), f"expected true or false, got {is_output!r}")
    return Tensor(
        t["name"],
        tuple(tuple((_ints(c, (*at, "axes", i, j, 0))[0], d) for j, (c, d) in enumerate(axis))
              for i, axis in enumerate(axes)),
        _ints(t.get("bits", 8), (*at, "bits"))[0],
        is_output,
    )
