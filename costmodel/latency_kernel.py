"""The latency model of costmodel.latency and costmodel.pipeline, compiled (numba).

Why compiled: the model is a few dozen operations per mapping over [level, tensor] tables. As
numpy passes over the 100-500 mappings the mappers send per call, the fixed cost of its ~60 passes
outweighed the arithmetic (0.3 ms a call). The kernel runs the same passes over blocks of 128
mappings (the batch axis innermost, as numpy does: no data-dependent branches, which random keep
choices and loop orders would make mispredict), so the temporaries stay in L1 cache. It reads the
mapping arrays as [L, X, B] views (C-contiguous for MappingBatch's batch-last arrays) with unsigned
block indices, so those loops load contiguous vectors: no gathers, and no prefetch hints needed (the
rows are sequential streams the hardware prefetchers follow; hints were 20 % slower). It takes the
same float operations in the same order as the formulas of those modules' docstrings, so its
results equal theirs bit for bit.

The per-(problem, config) constants are packed by :class:`costmodel.latency.LatencyPlan`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

NONE, SCALESIM, OVERLAPPED = 0, 1, 2  # systolic modes (NONE: a plain PE array)
BLOCK = 128
LIMIT = 2.0**58
"""The most cycles any one term of a mapping's latency may reach (about 3e17: nine years at 1 GHz).
Why: the kernel adds up to L + 2 terms in int64; past 2**63 (a bandwidth of 1e-15 words per
cycle, or a systolic array of 10^5 rows) the cycles wrapped around silently into a small or
negative latency. A mapping with a larger term is reported, not costed. (Above 2**53 the
pipeline's float terms round to a relative 1e-16; no mapper's choice turns on that.)"""


@njit(cache=True, inline="always", error_model="numpy")
def _stream_lengths(tem, rank, b0, nb, st_dims, free_dims, block, out):
    """Into ``out[:nb]``: ``T`` of mappings b0.. (costmodel.latency.stream_length): the product of
    the loops inner to the innermost loop of factor > 1 over a stationary dim (nest position
    ``level * D + rank``); ``block`` is scratch. ``st_dims`` / ``free_dims``: the problem's dims
    of size > 1 that index the stationary tensor / do not (a size-1 dim's loops have factor 1 in
    a valid mapping: they neither end a run nor lengthen it)."""
    n_lv, n_d = tem.shape[0], tem.shape[1]
    ub, unb = np.uint64(b0), np.uint64(nb)
    for j in range(unb):
        block[j] = -1
        out[j] = 1
    for m in range(n_lv):
        for d in st_dims:
            for j in range(unb):
                pos = m * n_d + rank[m, d, ub + j]
                block[j] = max(block[j], pos if tem[m, d, ub + j] > 1 else -1)
    for m in range(n_lv):
        for d in free_dims:
            for j in range(unb):
                inner = m * n_d + rank[m, d, ub + j] > block[j]
                out[j] *= tem[m, d, ub + j] if inner else 1


@njit(cache=True, inline="always", error_model="numpy")
def _compute(tem, rank, steps, b0, nb, mode, st_dims, free_dims, rows, over, block, out, big):
    """Into ``out[:nb]``: compute cycles of mappings b0..: their temporal steps, or the systolic
    fold model; ``big[j]`` set where they would pass :data:`LIMIT` (the value is then not used)."""
    ub, unb = np.uint64(b0), np.uint64(nb)
    if mode == NONE:
        for j in range(unb):
            out[j] = steps[ub + j]
        return
    _stream_lengths(tem, rank, b0, nb, st_dims, free_dims, block, out)
    for j in range(unb):
        t, s = out[j], steps[ub + j]
        folds = s // t
        out[j] = folds * (t + over) if mode == SCALESIM else s + over + (folds - 1) * max(0, rows - t)
        est = (float(folds) * float(t + over) if mode == SCALESIM
               else float(s) + float(over) + float(folds - 1) * float(max(0, rows - t)))
        big[j] |= est >= LIMIT


@njit(cache=True, error_model="numpy")
def stream_lengths(tem, rank, st_dims, free_dims, out):
    """Into ``out`` [B]: each mapping's stream length ``T``."""
    block = np.empty(BLOCK, np.int64)
    for b0 in range(0, tem.shape[2], BLOCK):
        nb = min(BLOCK, tem.shape[2] - b0)
        _stream_lengths(tem, rank, b0, nb, st_dims, free_dims, block, out[b0:b0 + nb])


@njit(cache=True, error_model="numpy")
def compute_cycles(tem, rank, steps, mode, st_dims, free_dims, rows, over, out):
    """Into ``out`` [B]: each mapping's compute cycles. Returns the first mapping whose cycles
    pass :data:`LIMIT` (not valid in ``out``), or -1."""
    block = np.empty(BLOCK, np.int64)
    big = np.zeros(BLOCK, np.bool_)
    for b0 in range(0, tem.shape[2], BLOCK):
        nb = min(BLOCK, tem.shape[2] - b0)
        _compute(tem, rank, steps, b0, nb, mode, st_dims, free_dims, rows, over, block, out[b0:b0 + nb], big)
        at = _first(big, nb)
        if at >= 0:
            return b0 + at
    return -1


@njit(cache=True, error_model="numpy")
def latency(tem, spx, spy, rank, keep, reads, fills, updates, words, steps,
            read_bw, write_bw, db, staged, fan, holds, is_out, copies_mask,
            mode, st_dims, free_dims, active, rows, over, vec, vec_total, overlap, lo, hi,
            compute, traffic, total, fill, drain, vector):
    """Cycles of mappings lo..hi-1 (inputs [L, D, B] and [L, T, B], counts [L, T, B]: the batch
    innermost, so that the loops over a block vectorize when these are C-contiguous; ``traffic``
    [2, L, B]). ``staged`` [L] marks the staged levels, ``fan`` [L] those with a fan-out (the
    others' spatial factors are 1 in a valid mapping and are not read), ``holds`` [L, T] which
    tensors a level holds, ``copies_mask`` [L, T, D] the dims whose spatial factors give distinct
    tiles below a level (none where its fan-out is 1); ``active`` the dims of size > 1 (the
    others' factors are all 1 in a valid mapping); ``st_dims`` / ``free_dims`` those of them that
    index the stationary tensor of a systolic config / do not; ``vec`` = (lanes, level, output
    tensor, elements, passes per element), lanes 0 without a vector unit, whose total cycles are
    ``vec_total``.
    Returns the first mapping one of whose terms passes :data:`LIMIT` (its cycles and those after
    it are not computed), or -1."""
    n_lv, n_d, _ = tem.shape
    n_t = is_out.shape[0]
    s0 = n_lv  # the outermost staged level (n_lv: none)
    for m in range(n_lv - 1, -1, -1):
        if staged[m]:
            s0 = m
    lanes, vl, vo, elements, passes = vec[0], vec[1], vec[2], vec[3], vec[4]
    v_ceil = np.int64(math.ceil(vec_total))
    busy = np.ones((n_lv, BLOCK), np.int64)
    per = np.zeros((n_lv, BLOCK), np.int64)
    comp = np.zeros(BLOCK, np.int64)
    tiles = np.ones(BLOCK, np.int64)
    scratch = np.zeros(BLOCK, np.int64)
    rsum = np.zeros(BLOCK, np.int64)  # a level's words read / written, per mapping of the block
    wsum = np.zeros(BLOCK, np.int64)
    copies = np.ones(BLOCK)  # (float64: exact, and AVX2 has no 64-bit integer product)
    walking = np.zeros(BLOCK, np.bool_)
    at_copies = np.ones(BLOCK)  # the copies and parent port of the level a tile comes from
    at_port = np.ones(BLOCK)
    v_last = np.zeros(BLOCK)
    inside = np.zeros(BLOCK, np.int64)  # the busiest port of the double-buffered levels inside a tile,
    rd_port = np.zeros(BLOCK, np.int64)  # and above it (read, write)
    wr_port = np.zeros(BLOCK, np.int64)
    pipe = np.zeros(BLOCK)
    big = np.zeros(BLOCK, np.bool_)  # a term of the mapping passes LIMIT
    if vec_total >= LIMIT:
        return lo if hi > lo else -1
    for b0 in range(lo, hi, BLOCK):
        nb = min(BLOCK, hi - b0)
        ub, unb = np.uint64(b0), np.uint64(nb)  # unsigned indices: no negative-index fix-up, so
        # the loops over the block read contiguous vectors instead of gathering
        for j in range(unb):
            big[j] = False
        _compute(tem, rank, steps, b0, nb, mode, st_dims, free_dims, rows, over, scratch, comp, big)
        # copies of each level in use: the spatial factors of the levels above it
        for m in range(1, n_lv):
            for j in range(unb):
                busy[m, j] = busy[m - 1, j]
            if not fan[m - 1]:  # spatial factors of 1 only (a valid mapping)
                continue
            for d in active:
                for j in range(unb):
                    busy[m, j] *= spx[m - 1, d, ub + j] * spy[m - 1, d, ub + j]
        # each level's read and write cycles: words / (busy copies * bandwidth), ports in parallel
        for m in range(n_lv):
            for j in range(unb):  # (innermost loops over the block: they vectorize)
                rsum[j], wsum[j] = 0, 0
            for t in range(n_t):
                for j in range(unb):
                    rsum[j] += reads[m, t, ub + j]
                    wsum[j] += fills[m, t, ub + j] + updates[m, t, ub + j]
            for j in range(unb):
                bz = float(busy[m, j])
                xr, xw = rsum[j] / bz / read_bw[m], wsum[j] / bz / write_bw[m]
                big[j] |= (xr >= LIMIT) | (xw >= LIMIT)  # (no branch: the loop vectorizes)
                tr = np.int64(math.ceil(xr))
                tw = np.int64(math.ceil(xw))
                traffic[0, m, ub + j] = tr
                traffic[1, m, ub + j] = tw
                per[m, j] = max(tr, tw)
        # tiles of the outermost staged level: the temporal steps above it
        for j in range(unb):
            tiles[j] = 1
        for m in range(s0 if s0 < n_lv else 0):
            for d in active:
                for j in range(unb):
                    tiles[j] *= tem[m, d, ub + j]
        for j in range(unb):
            v_last[j] = 0.0
            vector[ub + j] = vec_total
            served = 0
            for m in range(n_lv):
                served += per[m, j]
            total[ub + j] = comp[j] + v_ceil + served  # serial, for now
            compute[ub + j] = comp[j]
            fill[ub + j] = 0.0
            drain[ub + j] = 0.0
        if lanes > 0:  # the last output tile's vector passes (all copies)
            for j in range(unb):
                tile = min(words[vl, vo, ub + j] * busy[vl, j], elements)
                v_last[j] = float(passes * ((tile + lanes - 1) // lanes)) if tile > 0 else vec_total / tiles[j]
        at = _first(big, nb)
        if at >= 0:
            return b0 + at
        if not overlap:
            continue
        if s0 < n_lv:
            # the first tile's fill and the last output tile's drain through the staged levels
            for lv in range(n_lv):
                if not staged[lv]:
                    continue
                for ti in range(n_t):
                    if not holds[lv, ti]:
                        continue
                    out = is_out[ti]
                    child_bw = read_bw[lv] if out else write_bw[lv]
                    for j in range(unb):
                        copies[j] = 1.0
                        walking[j] = True
                    # up to the nearest level keeping the tensor (level 0 keeps all): the
                    # parent's port moves the distinct words of the busy children's tiles (the
                    # copies and port of that level are picked, then divided once)
                    for m in range(lv - 1, -1, -1):
                        parent_bw = write_bw[m] if out else read_bw[m]
                        top = m == 0
                        for d in range(n_d):
                            if copies_mask[m, ti, d]:
                                for j in range(unb):
                                    copies[j] *= float(spx[m, d, ub + j]) * float(spy[m, d, ub + j])
                        for j in range(unb):  # (bitwise &, |, ~: no branch, so the loop vectorizes)
                            hit = walking[j] & (keep[m, ti, ub + j] | top)
                            at_copies[j] = copies[j] if hit else at_copies[j]
                            at_port[j] = busy[m, j] * parent_bw if hit else at_port[j]
                            walking[j] = walking[j] & ~hit
                    for j in range(unb):
                        w = float(words[lv, ti, ub + j])
                        cyc = max(w / child_bw, w * at_copies[j] / at_port[j])
                        if out:
                            drain[ub + j] += cyc
                        else:
                            fill[ub + j] += cyc
            for j in range(unb):  # the busiest double-buffered port inside / above a tile
                inside[j], rd_port[j], wr_port[j] = 0, 0, 0
            for m in range(n_lv):  # (levels outer, the block inner: the loops vectorize)
                if db[m] and m >= s0:
                    for j in range(unb):
                        inside[j] = max(inside[j], per[m, j])
                elif db[m]:
                    for j in range(unb):
                        rd_port[j] = max(rd_port[j], traffic[0, m, ub + j])
                        wr_port[j] = max(wr_port[j], traffic[1, m, ub + j])
            for j in range(unb):
                array = max(comp[j], inside[j])
                f, dr, vla = fill[ub + j], drain[ub + j], v_last[j]
                c_tile = array / tiles[j]
                ports = max(rd_port[j] + dr, wr_port[j] + f)
                pipe[j] = max(max(f + array + vla + dr, f + c_tile + vec_total + dr), ports + c_tile + vla)
                big[j] |= pipe[j] >= LIMIT
            _finish(pipe, per, db, total, ub, unb, scratch)
            at = _first(big, nb)
            if at >= 0:
                return b0 + at
        else:
            for j in range(unb):
                inside[j] = 0
            for m in range(n_lv):
                if db[m]:
                    for j in range(unb):
                        inside[j] = max(inside[j], per[m, j])
            for j in range(unb):
                pipe[j] = max(max(float(comp[j]), vec_total), float(inside[j]))
            _finish(pipe, per, db, total, ub, unb, scratch)
    return -1


@njit(cache=True, inline="always")
def _first(big, nb):
    """The first j < nb with ``big[j]``, or -1."""
    for j in range(nb):
        if big[j]:
            return j
    return -1


@njit(cache=True, inline="always", error_model="numpy")
def _finish(pipe, per, db, total, ub, unb, t_all):
    """The overlapped totals of the block's mappings (from ub): whole cycles of the pipeline, plus
    the transfers of the single-buffered levels, capped by the serial time already in ``total``
    (``t_all``: scratch)."""
    for j in range(unb):
        t_all[j] = np.int64(math.ceil(pipe[j] - 1e-9))
    for m in range(per.shape[0]):
        if not db[m]:
            for j in range(unb):
                t_all[j] += per[m, j]
    for j in range(unb):
        total[ub + j] = min(t_all[j], total[ub + j])
