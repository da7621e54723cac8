"""Tile geometry over a batch of mappings: digit place values, tile extents, and per-axis tables.

Each dimension's index is a mixed-radix number whose digits are the mapping's loops, outer to
inner: level 0 temporal, level 0 spatial X, level 0 spatial Y, level 1 temporal, ... ("slots";
slot ``3m`` is level m's temporal loop, ``3m+1`` its X, ``3m+2`` its Y). A tensor axis is an affine
sum of dimensions. An axis with one term (``K``, ``C``...) has closed forms everywhere; an axis
with several terms (a sliding window ``stride*P + dilation*R``) has a value set that is a sum-set,
whose sizes and self-overlaps are tabulated exactly by enumeration (see docs/semantics.md):
``WindowTable`` holds, for tiles with no merged children, every (tile extents, shift)
combination, built once per problem axis (dense; looked up by array indexing). Children merged
over spatial digits (multicast, reduction) are enumerated per digit pattern by
costmodel.count_kernel, which memoizes them.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from costmodel.errors import UserError
from costmodel.problem import Problem


@dataclass(frozen=True)
class Axis:
    """One tensor axis: ``terms`` are (coefficient, index among the problem's active dimensions)."""

    terms: tuple[tuple[int, int], ...]
    extent: int  # positions the axis spans over the whole problem, plus one (shifts beyond: no overlap)

    @property
    def single(self) -> bool:
        return len(self.terms) == 1


@dataclass(frozen=True)
class Shape:
    """A problem reduced to its active dimensions (size > 1: size-1 loops change nothing)."""

    active: tuple[int, ...]  # indices into problem.dim_names
    sizes: tuple[int, ...]  # sizes of the active dimensions
    axes: tuple[tuple[Axis, ...], ...]  # per tensor, its axes that vary


@functools.cache
def shape_of(problem: Problem) -> Shape:
    """Axes per tensor over the active dimensions; rejects einsums the counting cannot treat exactly."""
    dims = problem.dim_names
    full = problem.sizes
    active = tuple(i for i, d in enumerate(dims) if full[d] > 1)
    where = {dims[i]: k for k, i in enumerate(active)}
    out = []
    for t in problem.tensors:
        seen: set[str] = set()
        axes = []
        for axis in t.axes:
            for c, d in axis:
                if d in seen or c < 1:
                    raise UserError(f"problem {problem.kind}: tensor {t.name}: each dimension must appear "
                                    f"once with a positive coefficient (got {d!r} x{c})")
                seen.add(d)
            terms = tuple((c, where[d]) for c, d in axis if full[d] > 1)
            if terms:
                axes.append(Axis(terms, 2 + sum(c * (full[d] - 1) for c, d in axis)))
        out.append(tuple(axes))
    return Shape(active, tuple(full[dims[i]] for i in active), tuple(out))


@dataclass
class Geometry:
    """Per-batch digit arrays, batch axis last: ``f``/``w`` slot factors and place values
    [3L, D, B]; ``suffix`` products of factors from a slot inward [3L+1, D, B] (``suffix[3c]`` is
    each dimension's extent in a tile at level c)."""

    t: np.ndarray  # temporal factors [L, D, B]
    xy: np.ndarray  # spatial X*Y factors [L, D, B]
    f: np.ndarray
    w: np.ndarray
    suffix: np.ndarray

    @classmethod
    def of(cls, batch, shape: Shape) -> Geometry:
        idx = list(shape.active)

        def lay(a: np.ndarray) -> np.ndarray:  # [L, D, B] contiguous; row copies when batch-last
            return np.take(a.transpose(1, 2, 0), idx, axis=1)

        t, sx, sy = lay(batch.temporal), lay(batch.spatial_x), lay(batch.spatial_y)
        n_lv, d, b = t.shape
        f = np.empty((3 * n_lv, d, b), np.int64)
        f[0::3], f[1::3], f[2::3] = t, sx, sy
        suffix = np.ones((3 * n_lv + 1, d, b), np.int64)
        for j in range(3 * n_lv - 1, -1, -1):
            np.multiply(suffix[j + 1], f[j], out=suffix[j])
        return cls(t, sx * sy, f, suffix[1:], suffix)

    def extent(self, c: int) -> np.ndarray:
        """[D, B] extent of each dimension in a tile at level c (c = L: a single MAC, 1)."""
        return self.suffix[3 * c]


def _sumset(parts: list[np.ndarray]) -> np.ndarray:
    vals = np.zeros(1, np.int64)
    for p in parts:
        vals = np.unique((vals[:, None] + p[None, :]).ravel())
    return vals


def autocorrelation(ind: np.ndarray) -> np.ndarray:
    """Overlap counts of a 0/1 vector with itself at shifts -(n-1)..n-1 (symmetric). Direct for
    short vectors; by FFT for long ones (exact after rounding: counts are far below 2**52)."""
    n = len(ind)
    if n <= 512:
        return np.correlate(ind, ind, mode="full")
    size = 1 << (2 * n - 1).bit_length()
    spec = np.fft.rfft(ind.astype(np.float64), size)
    ac = np.rint(np.fft.irfft(spec * np.conj(spec), size)).astype(np.int64)
    return np.concatenate([ac[size - n + 1:], ac[:n]])


class WindowTable:
    """Unmerged tiles of a multi-term axis: sum-set size and self-overlap at every shift.

    Tile extents of each term's dimension are divisors of its size, so the table is small:
    rows = combinations of divisors, columns = shifts -E..E (larger shifts overlap nothing)."""

    def __init__(self, axis: Axis, sizes: tuple[int, ...]) -> None:
        self.axis = axis
        self.span = axis.extent
        divs = [[n for n in range(1, sizes[d] + 1) if sizes[d] % n == 0] for _, d in axis.terms]
        self.lookup = []
        for (_, d), dv in zip(axis.terms, divs):
            lk = np.zeros(sizes[d] + 1, np.int64)
            lk[dv] = np.arange(len(dv))
            self.lookup.append(lk)
        self.radix = [len(dv) for dv in divs]
        rows = list(itertools.product(*divs))
        e = self.span
        self.size = np.zeros(len(rows), np.int64)
        self.overlap = np.zeros((len(rows), 2 * e + 1), np.int64)
        for r, ns in enumerate(rows):
            vals = _sumset([c * np.arange(n) for (c, _), n in zip(axis.terms, ns)])
            ind = np.zeros(e, np.int64)
            ind[vals] = 1
            self.size[r] = len(vals)
            # overlap[k] = |X ∩ (X + (k - e))|  (full correlation has length 2e-1; pad to 2e+1)
            self.overlap[r, 1:-1] = autocorrelation(ind)

    def row(self, extents: np.ndarray) -> np.ndarray:
        """Row index per mapping from the [D, B] dimension extents."""
        idx = np.zeros(extents.shape[1:], np.int64)
        for (_, d), lk, rad in zip(self.axis.terms, self.lookup, self.radix):
            idx = idx * rad + lk[extents[d]]
        return idx


@functools.cache
def window_table(axis: Axis, sizes: tuple[int, ...]) -> WindowTable:
    return WindowTable(axis, sizes)


@dataclass
class TensorTiles:
    """One tensor's tiles at a stack of levels, [n, B] each: the WindowTable row of each
    multi-term axis, the product of their sum-set sizes, that of the single-term extents, and
    the tile's words (per instance: their product)."""

    rows: list[np.ndarray]
    multi: np.ndarray
    single: np.ndarray
    words: np.ndarray


def tensor_tiles(axes: tuple[Axis, ...], sizes: tuple[int, ...], ext: np.ndarray) -> TensorTiles:
    """Tiles of a tensor with ``axes`` from dimension extents ``ext`` [n, D, B] (n levels at once:
    a few whole-stack operations where a loop over levels repeats them per level)."""
    by_dim = ext.transpose(1, 0, 2)  # [D, n, B]: the layout WindowTable.row reads
    rows, multi = [], np.ones((ext.shape[0], ext.shape[2]), np.int64)
    for ax in axes:
        if not ax.single:
            tab = window_table(ax, sizes)
            rows.append(tab.row(by_dim))
            multi = multi * tab.size[rows[-1]]
    single = np.ones_like(multi)
    for ax in axes:
        if ax.single:
            single = single * by_dim[ax.terms[0][1]]
    return TensorTiles(rows, multi, single, multi * single)


def tile_words(problem: Problem, batch, geo: Geometry | None = None) -> np.ndarray:
    """[B, L, T] words of each tensor's tile at each level (per instance), kept or not; level 0
    holds the whole tensor. Reads only ``batch.temporal``, ``.spatial_x`` and ``.spatial_y``."""
    shape = shape_of(problem)
    geo = geo or Geometry.of(batch, shape)
    n_lv, _, b = geo.t.shape
    out = np.ones((n_lv, len(problem.tensors), b), np.int64)
    ext = geo.suffix[3:3 * n_lv:3]  # levels 1..L-1
    for ti, axes in enumerate(shape.axes):
        out[0, ti] = problem.tensor_elements(problem.tensors[ti].name)
        out[1:, ti] = tensor_tiles(axes, shape.sizes, ext).words
    return out.transpose(2, 0, 1)
