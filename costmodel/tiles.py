"""Tile geometry over a batch of mappings: digit place values, tile extents, and per-axis tables.

Each dimension's index is a mixed-radix number whose digits are the mapping's loops, outer to
inner: level 0 temporal, level 0 spatial X, level 0 spatial Y, level 1 temporal, ... ("slots";
slot ``3m`` is level m's temporal loop, ``3m+1`` its X, ``3m+2`` its Y). A tensor axis is an affine
sum of dimensions. An axis with one term (``K``, ``C``...) has closed forms everywhere; an axis
with several terms (a sliding window ``stride*P + dilation*R``) has a value set that is a sum-set,
whose sizes and self-overlaps are tabulated exactly by enumeration (see docs/semantics.md):
- ``WindowTable``: for tiles with no merged children, every (tile extents, shift) combination,
  built once per problem axis (dense; looked up by array indexing);
- ``merged_stats``: for children merged over spatial digits (multicast, reduction), per distinct
  digit pattern (hashed, enumerated once, cached for the process).
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
    """One tensor axis: ``terms`` are (coefficient, dimension index)."""

    terms: tuple[tuple[int, int], ...]
    extent: int  # number of positions the axis spans over the whole problem (+1 margin for shifts)

    @property
    def single(self) -> bool:
        return len(self.terms) == 1


def tensor_axes(problem: Problem) -> list[list[Axis]]:
    """Axes per tensor; rejects einsums the counting cannot treat exactly."""
    dims = problem.dim_names
    sizes = problem.sizes
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
            ext = 1 + sum(c * (sizes[d] - 1) for c, d in axis)
            axes.append(Axis(tuple((c, dims.index(d)) for c, d in axis), ext + 1))
        out.append(axes)
    return out


@dataclass
class Geometry:
    """Per-batch digit arrays. ``f``/``w``: slot factors and place values [B, D, 3L];
    ``suffix``: products of factors from a slot inward [B, D, 3L+1] (``suffix[..., 3c]`` is the
    extent of each dimension in the tile at level c)."""

    f: np.ndarray
    w: np.ndarray
    suffix: np.ndarray

    @classmethod
    def of(cls, temporal: np.ndarray, spatial_x: np.ndarray, spatial_y: np.ndarray) -> Geometry:
        b, n_lv, d = temporal.shape
        f = np.stack([temporal, spatial_x, spatial_y], axis=2).reshape(b, 3 * n_lv, d).transpose(0, 2, 1)
        suffix = np.ones((b, d, 3 * n_lv + 1), np.int64)
        suffix[:, :, :-1] = np.cumprod(f[:, :, ::-1], axis=2)[:, :, ::-1]
        return cls(f, suffix[:, :, 1:], suffix)

    def extent(self, c: int) -> np.ndarray:
        """[B, D] extent of each dimension in a tile at level c (c = L: a single MAC, 1)."""
        return self.suffix[:, :, 3 * c]


def _digit_values(digits: tuple[tuple[int, int], ...]) -> np.ndarray:
    vals = np.zeros(1, np.int64)
    for w, f in digits:
        vals = (vals[:, None] + w * np.arange(f)[None, :]).ravel()
    return vals


def _sumset(parts: list[np.ndarray]) -> np.ndarray:
    vals = np.zeros(1, np.int64)
    for p in parts:
        vals = np.unique((vals[:, None] + p[None, :]).ravel())
    return vals


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
            self.overlap[r, 1:-1] = np.correlate(ind, ind, mode="full")[::-1]

    def row(self, extents: np.ndarray) -> np.ndarray:
        """Row index per mapping from the [..., D] dimension extents."""
        idx = np.zeros(extents.shape[:-1], np.int64)
        for (_, d), lk, rad in zip(self.axis.terms, self.lookup, self.radix):
            idx = idx * rad + lk[extents[..., d]]
        return idx

    def stab(self, row: np.ndarray, shift: np.ndarray) -> np.ndarray:
        e = self.span
        return self.overlap[row, np.clip(shift, -e, e) + e]


@functools.cache
def window_table(axis: Axis, sizes: tuple[int, ...]) -> WindowTable:
    return WindowTable(axis, sizes)


_MERGED: dict[tuple, tuple[int, np.ndarray]] = {}


def _merged_entry(coefs: tuple[int, ...], span: int, key: tuple[int, ...]) -> tuple[int, np.ndarray]:
    """(|U|, Stab row over shifts -span..span) for children with tiles ``X + o``, o in offsets O.

    ``key`` per term: tile extent n, then (w, f) pairs of its merged digits (f = 1: unused).
    U = X ⊕ O; Stab(Δ) = #{v in U : every child covering v also covered v - Δ ... i.e. had v before}.
    """
    cache_key = (coefs, span, key)
    hit = _MERGED.get(cache_key)
    if hit is not None:
        return hit
    per = len(key) // len(coefs)
    tiles, offs = [], []
    for ti, c in enumerate(coefs):
        part = key[ti * per:(ti + 1) * per]
        tiles.append(c * np.arange(part[0]))
        digits = tuple((part[j], part[j + 1]) for j in range(1, per, 2) if part[j + 1] > 1)
        offs.append(c * _digit_values(digits))
    x = _sumset(tiles)
    o = _sumset(offs)
    u = np.unique((x[:, None] + o[None, :]).ravel())
    e = span
    top = int(u.max()) + 1
    grid = np.arange(-e, top + e)  # v - Δ may leave [0, top)
    xind = np.zeros(top + 2 * e + 1, bool)
    xind[x] = True
    # cov[o, v] = v - o in X, for v over grid
    rel = grid[None, :] - o[:, None]
    cov = np.where((rel >= 0) & (rel < top), xind[np.clip(rel, 0, top)], False)
    vin = (grid >= 0) & (grid < top)
    stab = np.zeros(2 * e + 1, np.int64)
    vidx = np.nonzero(vin)[0]
    covered = cov[:, vidx]
    anyc = covered.any(axis=0)
    reach = int(x.max())  # shifts beyond the tile's span leave no child with its old elements
    for k, delta in enumerate(range(-e, e + 1)):
        if abs(delta) > reach:
            continue
        # child o had v at the previous step iff v + Δ - o in X (tiles moved by +Δ)
        prev = cov[:, np.clip(vidx + delta, 0, grid.size - 1)] & (vidx + delta >= 0)[None, :] & \
            (vidx + delta < grid.size)[None, :]
        stable = anyc & ~(covered & ~prev).any(axis=0)
        stab[k] = int(stable.sum())
    out = (len(u), stab)
    _MERGED[cache_key] = out
    return out


def merged_stats(coefs: tuple[int, ...], span: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows of ``keys`` [N, K]: |U| [N] and Stab rows [N, 2*span+1], via distinct rows."""
    uniq, inv = unique_rows(keys)
    sizes = np.empty(len(uniq), np.int64)
    rows = np.empty((len(uniq), 2 * span + 1), np.int64)
    for i, r in enumerate(uniq):
        sizes[i], rows[i] = _merged_entry(coefs, span, tuple(int(v) for v in r))
    return sizes[inv], rows[inv]


_SUMSET: dict[tuple, int] = {}


def sumset_sizes(coefs: tuple[int, ...], keys: np.ndarray) -> np.ndarray:
    """|{Σ c_m · v_m}| where term m's values are the digit set given by its (w, f) pairs in ``keys``."""
    uniq, inv = unique_rows(keys)
    per = keys.shape[1] // len(coefs)
    out = np.empty(len(uniq), np.int64)
    for i, r in enumerate(uniq):
        k = (coefs, tuple(int(v) for v in r))
        if k not in _SUMSET:
            parts = []
            for ti, c in enumerate(coefs):
                part = r[ti * per:(ti + 1) * per]
                parts.append(c * _digit_values(tuple((int(part[j]), int(part[j + 1]))
                                                     for j in range(0, per, 2) if part[j + 1] > 1)))
            _SUMSET[k] = len(_sumset(parts))
        out[i] = _SUMSET[k]
    return out[inv]


_HASH = np.random.default_rng(20261202).integers(1, 2**62, size=4096, dtype=np.int64) | 1


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows and the inverse index; a 64-bit hash first, checked exactly (no collisions)."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    with np.errstate(over="ignore"):
        h = keys @ _HASH[: keys.shape[1]]
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    uniq = keys[first]
    if not np.array_equal(uniq[inv], keys):
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inv.reshape(-1)


def tile_words(problem: Problem, batch) -> np.ndarray:
    """[B, L, T] words of each tensor's tile at each level (per instance), kept or not; level 0
    holds the whole tensor."""
    geo = Geometry.of(batch.temporal, batch.spatial_x, batch.spatial_y)
    sizes = tuple(n for _, n in problem.dims)
    n_lv = batch.temporal.shape[1]
    out = np.ones((len(batch), n_lv, len(problem.tensors)), np.int64)
    for ti, axes in enumerate(tensor_axes(problem)):
        out[:, 0, ti] = problem.tensor_elements(problem.tensors[ti].name)
        for c in range(1, n_lv):
            ext = geo.extent(c)
            for ax in axes:
                if ax.single:
                    out[:, c, ti] *= ext[:, ax.terms[0][1]]
                else:
                    tab = window_table(ax, sizes)
                    out[:, c, ti] *= tab.size[tab.row(ext)]
    return out
