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
import math
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


TABLE_MAX = 2**27
"""Entries of one window axis's overlap table at most (1 GiB of int64): a long 1-D sequence whose
length has many divisors (56,159 samples, a 720-tap window) asked for 3 GiB."""


class WindowTable:
    """Unmerged tiles of a multi-term axis: sum-set size and self-overlap at every shift.

    Tile extents of each term's dimension are divisors of its size, so the table is small:
    rows = combinations of divisors, columns = shifts -E..E (larger shifts overlap nothing)."""

    def __init__(self, axis: Axis, sizes: tuple[int, ...]) -> None:
        from costmodel.count_kernel import sumset

        self.axis = axis
        self.span = axis.extent
        divs = [[n for n in range(1, sizes[d] + 1) if sizes[d] % n == 0] for _, d in axis.terms]
        self.lookup = []
        for (_, d), dv in zip(axis.terms, divs):
            lk = np.zeros(sizes[d] + 1, np.uint64)
            lk[dv] = np.arange(len(dv))
            self.lookup.append(lk)
        self.radix = [len(dv) for dv in divs]
        e = self.span
        n_rows = math.prod(len(dv) for dv in divs)
        if n_rows * (2 * e + 1) > TABLE_MAX:
            dims = " and ".join(str(sizes[d]) for _, d in axis.terms)
            raise UserError(f"a window axis over dims of sizes {dims}: its overlap table would take {n_rows} tile shapes x "
                            f"{2 * e + 1} shifts = {n_rows * (2 * e + 1) * 8 / 2**30:.1f} GiB (at most "
                            f"{TABLE_MAX * 8 / 2**30:.0f} GiB); split the layer along this axis")
        rows = list(itertools.product(*divs))
        self.size = np.zeros(len(rows), np.int64)
        self.overlap = np.zeros((len(rows), 2 * e + 1), np.int64)
        for r, ns in enumerate(rows):
            vals = np.zeros(1, np.int64)
            for (c, _), n in zip(axis.terms, ns):
                vals = sumset(vals, c * np.arange(n, dtype=np.int64))
            ind = np.zeros(e, np.int64)
            ind[vals] = 1
            self.size[r] = len(vals)
            # overlap[k] = |X ∩ (X + (k - e))|  (full correlation has length 2e-1; pad to 2e+1)
            self.overlap[r, 1:-1] = autocorrelation(ind)


@functools.cache
def window_table(axis: Axis, sizes: tuple[int, ...]) -> WindowTable:
    return WindowTable(axis, sizes)


@dataclass(frozen=True)
class PackedTables:
    """A problem's tensors, axes and window tables packed into the flat arrays the counting kernel
    (costmodel.count_kernel) reads: ``idx`` the active dims; per tensor ``tinfo`` [T, 6]
    (is output, elements, #single-term dims, #free dims, #window axes, whether it uses any dim)
    and ``tdims`` [T, 4, D] (its single-term dims, the other ("free") dims, a used-dim mask, a
    window-dim mask); per window axis k its terms (``ax_n``, ``ax_coef``, ``ax_dim``), ``ax_span``
    and WindowTable: sizes and overlaps flattened (``tsize``/``tover`` from ``*_off``) and the
    divisor lookups of each term (``lk`` from ``lk_off``, with ``radix``). Indices and counts are
    uint64: numba indexes with an unsigned value without the negative-index fix-up (about 5 % of the
    kernel's time)."""

    idx: np.ndarray
    tinfo: np.ndarray
    tdims: np.ndarray
    ax_n: np.ndarray
    ax_coef: np.ndarray
    ax_dim: np.ndarray
    ax_span: np.ndarray
    tsize: np.ndarray
    tsize_off: np.ndarray
    tover: np.ndarray
    tover_off: np.ndarray
    lk: np.ndarray
    lk_off: np.ndarray
    radix: np.ndarray


@functools.cache
def packed_tables(problem: Problem) -> PackedTables:
    shape = shape_of(problem)
    n_d, n_t = len(shape.sizes), len(shape.axes)
    windows = [[ax for ax in axes if not ax.single] for axes in shape.axes]
    n_k = max([len(w) for w in windows] + [1])
    n_terms = max([len(ax.terms) for w in windows for ax in w] + [1])
    u = np.uint64  # indices and counts (see PackedTables)
    tinfo, tdims = np.zeros((n_t, 6), u), np.zeros((n_t, 4, n_d), u)
    ax_n, ax_span = np.zeros((n_t, n_k), u), np.zeros((n_t, n_k), np.int64)
    ax_coef, ax_dim = np.zeros((n_t, n_k, n_terms), np.int64), np.zeros((n_t, n_k, n_terms), u)
    tsize_off, tover_off = np.zeros((n_t, n_k), u), np.zeros((n_t, n_k), u)
    lk_off, radix = np.zeros((n_t, n_k, n_terms), u), np.ones((n_t, n_k, n_terms), u)
    tsize, tover, lookups = [np.zeros(1, np.int64)], [np.zeros(1, np.int64)], [np.zeros(1, u)]
    n_size = n_over = n_lk = 1
    for ti, axes in enumerate(shape.axes):
        t = problem.tensors[ti]
        st = [ax.terms[0][1] for ax in axes if ax.single]
        free = [e for e in range(n_d) if e not in st]
        used = sorted({e for ax in axes for _, e in ax.terms})
        tinfo[ti] = [t.is_output, problem.tensor_elements(t.name), len(st), len(free), len(windows[ti]), bool(used)]
        tdims[ti, 0, :len(st)], tdims[ti, 1, :len(free)] = st, free
        tdims[ti, 2, used] = 1
        for k, ax in enumerate(windows[ti]):
            tab = window_table(ax, shape.sizes)
            ax_n[ti, k], ax_span[ti, k] = len(ax.terms), tab.span
            tdims[ti, 3, [e for _, e in ax.terms]] = 1
            for j, (cf, e) in enumerate(ax.terms):
                ax_coef[ti, k, j], ax_dim[ti, k, j] = cf, e
                lk_off[ti, k, j], radix[ti, k, j] = n_lk, tab.radix[j]
                lookups.append(tab.lookup[j])
                n_lk += len(tab.lookup[j])
            tsize_off[ti, k], tover_off[ti, k] = n_size, n_over
            tsize.append(tab.size)
            tover.append(tab.overlap.ravel())
            n_size, n_over = n_size + tab.size.size, n_over + tab.overlap.size
    return PackedTables(np.array(shape.active, u), tinfo, tdims, ax_n,
                        ax_coef, ax_dim, ax_span, np.concatenate(tsize), tsize_off, np.concatenate(tover), tover_off,
                        np.concatenate(lookups), lk_off, radix)


def tile_words(problem: Problem, temporal: np.ndarray, spatial_x: np.ndarray, spatial_y: np.ndarray) -> np.ndarray:
    """[B, L, T] words of each tensor's tile at each level (per instance), kept or not; level 0
    holds the whole tensor. Takes the factors [B, L, D] of a MappingBatch (the tiles need no
    orders or keeps)."""
    from costmodel import count_kernel

    pk = packed_tables(problem)
    b, n_lv, _ = temporal.shape
    out = np.empty((n_lv, len(problem.tensors), b), np.int64)
    count_kernel.tile_words(temporal, spatial_x, spatial_y, pk.idx, pk.tinfo, pk.tdims,
                            pk.ax_n, pk.ax_dim, pk.tsize, pk.tsize_off, pk.lk, pk.lk_off, pk.radix, out)
    return out.transpose(2, 0, 1)
