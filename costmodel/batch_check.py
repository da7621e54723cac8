"""Checks that a MappingBatch is a set of mappings of its problem on its config, before counting.

Why: the counting kernel (costmodel.count_kernel) indexes its tables by tile extents and loop ranks
without bounds checks; factors that do not multiply to the layer's dims, a rank out of 0..D-1 or a
spatial unrolling past the fan-out would make it read outside its tables (wrong numbers, or a
crash). Valid batches (every mapper's, ``MappingBatch.from_mappings`` of validated mappings) pass.

The check is a compiled pass over blocks of the batch axis (contiguous in the ``[L, X, B]`` views,
so the block loops vectorize), run on each range just before the kernel counts it, which then
finds the range in cache. It only finds the first bad mapping; :func:`why` says what is wrong with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.mapping import MappingBatch
    from costmodel.problem import Problem

_BLOCK = 256


@njit(cache=True)
def first_bad_mapping(tem, spx, spy, rank, keep, dims, fan, holds, lo, hi):
    """Index of the first of mappings lo..hi-1 that is not a mapping of the problem, or -1. Arrays
    as [L, X, B] (costmodel.mapping.batch_inner); ``dims`` [D] the problem's sizes, ``fan`` [L, 2]
    each level's fan-out (X, Y), ``holds`` [L, T] which tensors a level may keep.

    Per mapping: each level's ranks are a permutation of 0..D-1; every factor lies in 1..size of its
    dim; per dim the factors of all levels multiply to its size (in int64: exact unless the true
    product passes 2**64 and wraps onto the size, which no mistake does); per level the X and Y
    factors multiply to at most the fan-out; nothing is kept where the level cannot hold it (level 0
    keeps everything). Branch-free block loops: they vectorize."""
    n_lv, d_all, _ = rank.shape
    n_t = keep.shape[1]
    full, ud, one, over = np.uint64((1 << d_all) - 1), np.uint64(d_all), np.uint64(1), np.uint64(1 << 63)
    seen = np.zeros(_BLOCK, np.uint64)
    prod, px, py = np.zeros(_BLOCK, np.int64), np.zeros(_BLOCK, np.int64), np.zeros(_BLOCK, np.int64)
    bad = np.zeros(_BLOCK, np.bool_)
    for b0 in range(lo, hi, _BLOCK):
        ub, n = np.uint64(b0), min(_BLOCK, hi - b0)
        for j in range(n):
            bad[j] = False
        for d in range(d_all):
            size = dims[d]
            for j in range(n):
                prod[j] = 1
            for m in range(n_lv):
                for j in range(n):
                    t, x, y = tem[m, d, ub + j], spx[m, d, ub + j], spy[m, d, ub + j]
                    bad[j] |= (t < 1) | (x < 1) | (y < 1) | (t > size) | (x > size) | (y > size)
                    prod[j] *= t * x * y
            for j in range(n):
                bad[j] |= prod[j] != size
        for m in range(n_lv):
            fx, fy = fan[m, 0], fan[m, 1]
            for j in range(n):
                seen[j], px[j], py[j] = 0, 1, 1
            for d in range(d_all):
                for j in range(n):
                    u = np.uint64(rank[m, d, ub + j])  # a negative rank wraps to a large one
                    seen[j] |= (one << u) if u < ud else over  # out of range: a bit above ``full``
                    # (factors are <= the dim's size here, or the mapping is bad already: no overflow)
                    px[j] = min(px[j] * spx[m, d, ub + j], fx + 1)
                    py[j] = min(py[j] * spy[m, d, ub + j], fy + 1)
            for j in range(n):
                bad[j] |= (seen[j] != full) | (px[j] > fx) | (py[j] > fy)
            if m > 0:
                for t in range(n_t):
                    if not holds[m, t]:
                        for j in range(n):
                            bad[j] |= keep[m, t, ub + j]
        for j in range(n):
            if bad[j]:
                return b0 + j
    return -1


def tables(problem: Problem, arch: Architecture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What :func:`first_bad_mapping` checks against: dims [D], fan-outs [L, 2], holds [L, T]."""
    dims = np.array([n for _, n in problem.dims], np.int64)
    fan = np.array([[lv.fanout_x, lv.fanout_y] for lv in arch.levels], np.int64)
    holds = np.array([[t.name in lv.holds for t in problem.tensors] for lv in arch.levels], np.bool_)
    return dims, fan, holds


def why(batch: MappingBatch, i: int, problem: Problem, arch: Architecture) -> str:
    """What is wrong with mapping ``i`` (one that :func:`first_bad_mapping` found), for the error."""
    names = problem.dim_names
    dims, fan, holds = tables(problem, arch)
    t, x, y = (a[i].astype(object) for a in (batch.temporal, batch.spatial_x, batch.spatial_y))
    for li, lv in enumerate(arch.levels):
        if sorted(batch.order[i, li].tolist()) != list(range(len(names))):
            return f"the ranks of level {lv.name} must be a permutation of 0..{len(names) - 1}"
    if min(t.min(), x.min(), y.min()) < 1:
        return "every factor must be >= 1"
    for di, d in enumerate(names):
        total = int(np.prod(t[:, di] * x[:, di] * y[:, di]))
        if total != dims[di]:
            return f"the factors of dim {d} multiply to {total}, expected its size {int(dims[di])}"
    for li, lv in enumerate(arch.levels):
        for axis, a, f in (("X", x, fan[li, 0]), ("Y", y, fan[li, 1])):
            if int(np.prod(a[li])) > f:
                return f"the spatial {axis} factors at level {lv.name} multiply to {int(np.prod(a[li]))}, above its fan-out {f}"
        kept = [tn.name for ti, tn in enumerate(problem.tensors) if li > 0 and batch.keep[i, li, ti] and not holds[li, ti]]
        if kept:
            return f"level {lv.name} keeps {', '.join(kept)}, which it does not hold"
    return "it is not a mapping of this problem on this config"
