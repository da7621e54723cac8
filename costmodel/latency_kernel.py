"""The latency model of costmodel.latency and costmodel.pipeline, compiled (numba).

Why compiled: the model is a few dozen operations per mapping over [level, tensor] tables. As
numpy passes over the 100-500 mappings the mappers send per call, the fixed cost of its ~60 passes
outweighed the arithmetic (0.3 ms a call). The kernel runs the same passes over blocks of 128
mappings (the batch axis innermost, as numpy does: no data-dependent branches, which random keep
choices and loop orders would make mispredict), so the temporaries stay in L1 cache. It takes the
same float operations in the same order as the formulas of those modules' docstrings, so its
results equal theirs bit for bit.

The per-(problem, config) constants are packed by :class:`costmodel.latency.LatencyPlan`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from costmodel.prefetch import prefetch_rows

NONE, SCALESIM, OVERLAPPED = 0, 1, 2  # systolic modes (NONE: a plain PE array)
BLOCK = 128


@njit(cache=True, inline='always')
def _stream_lengths(tem, rank, b0, nb, stationary, block, out):
    """Into ``out[:nb]``: ``T`` of mappings b0.. (costmodel.latency.stream_length): the product of
    the loops inner to the innermost loop of factor > 1 over a stationary dim (nest position
    ``level * D + rank``); ``block`` is scratch."""
    n_lv, n_d = tem.shape[1], tem.shape[2]
    for j in range(nb):
        block[j] = -1
        out[j] = 1
    for m in range(n_lv):
        for d in range(n_d):
            if stationary[d]:
                for j in range(nb):
                    pos = m * n_d + rank[b0 + j, m, d]
                    block[j] = max(block[j], pos if tem[b0 + j, m, d] > 1 else -1)
    for m in range(n_lv):
        for d in range(n_d):
            if not stationary[d]:
                for j in range(nb):
                    inner = m * n_d + rank[b0 + j, m, d] > block[j]
                    out[j] *= tem[b0 + j, m, d] if inner else 1


@njit(cache=True, inline='always')
def _compute(tem, rank, steps, b0, nb, mode, stationary, rows, over, block, out):
    """Into ``out[:nb]``: compute cycles of mappings b0..: their temporal steps, or the systolic
    fold model."""
    if mode == NONE:
        for j in range(nb):
            out[j] = steps[b0 + j]
        return
    _stream_lengths(tem, rank, b0, nb, stationary, block, out)
    for j in range(nb):
        t, s = out[j], steps[b0 + j]
        folds = s // t
        out[j] = folds * (t + over) if mode == SCALESIM else s + over + (folds - 1) * max(0, rows - t)


@njit(cache=True)
def stream_lengths(tem, rank, stationary, out):
    """Into ``out`` [B]: each mapping's stream length ``T``."""
    block = np.empty(BLOCK, np.int64)
    for b0 in range(0, tem.shape[0], BLOCK):
        nb = min(BLOCK, tem.shape[0] - b0)
        _stream_lengths(tem, rank, b0, nb, stationary, block, out[b0:b0 + nb])


@njit(cache=True)
def compute_cycles(tem, rank, steps, mode, stationary, rows, over, out):
    """Into ``out`` [B]: each mapping's compute cycles."""
    block = np.empty(BLOCK, np.int64)
    for b0 in range(0, tem.shape[0], BLOCK):
        nb = min(BLOCK, tem.shape[0] - b0)
        _compute(tem, rank, steps, b0, nb, mode, stationary, rows, over, block, out[b0:b0 + nb])


@njit(cache=True)
def latency(tem, spx, spy, rank, keep, reads, fills, updates, words, steps,
            read_bw, write_bw, db, staged, holds, is_out, copies_mask,
            mode, stationary, rows, over, vec, vec_total, overlap,
            compute, traffic, total, fill, drain, vector):
    """Cycles of every mapping (inputs [B, L, D] and [B, L, T]; counts [L, T, B]; ``traffic``
    [2, L, B]). ``staged`` [L] marks the staged levels, ``holds`` [L, T] which tensors a level
    holds, ``copies_mask`` [L, T, D] the dims whose spatial factors give distinct tiles below a
    level (none where its fan-out is 1); ``vec`` = (lanes, level, output tensor, elements,
    passes per element), lanes 0 without a vector unit, whose total cycles are ``vec_total``."""
    b_n, n_lv, n_d = tem.shape
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
    copies = np.ones(BLOCK, np.int64)
    walking = np.zeros(BLOCK, np.bool_)
    cyc = np.zeros(BLOCK)
    v_last = np.zeros(BLOCK)
    for b0 in range(0, b_n, BLOCK):
        nb = min(BLOCK, b_n - b0)
        if b0 + 2 * BLOCK <= b_n:  # the next block
            prefetch_rows(tem, b0 + BLOCK, BLOCK)
            prefetch_rows(spx, b0 + BLOCK, BLOCK)
            prefetch_rows(spy, b0 + BLOCK, BLOCK)
            prefetch_rows(rank, b0 + BLOCK, BLOCK)
            prefetch_rows(keep, b0 + BLOCK, BLOCK)
            # the counts [L, T, B] are batch-last seen as [B, T, L]
            prefetch_rows(reads.T, b0 + BLOCK, BLOCK)
            prefetch_rows(fills.T, b0 + BLOCK, BLOCK)
            prefetch_rows(updates.T, b0 + BLOCK, BLOCK)
            prefetch_rows(words.T, b0 + BLOCK, BLOCK)
        _compute(tem, rank, steps, b0, nb, mode, stationary, rows, over, scratch, comp)
        # copies of each level in use: the spatial factors of the levels above it
        for m in range(1, n_lv):
            for j in range(nb):
                busy[m, j] = busy[m - 1, j]
            for d in range(n_d):
                for j in range(nb):
                    busy[m, j] *= spx[b0 + j, m - 1, d] * spy[b0 + j, m - 1, d]
        # each level's read and write cycles: words / (busy copies * bandwidth), ports in parallel
        for m in range(n_lv):
            for j in range(nb):
                r, wr = 0, 0
                for t in range(n_t):
                    r += reads[m, t, b0 + j]
                    wr += fills[m, t, b0 + j] + updates[m, t, b0 + j]
                bz = float(busy[m, j])
                tr = np.int64(math.ceil(r / bz / read_bw[m]))
                tw = np.int64(math.ceil(wr / bz / write_bw[m]))
                traffic[0, m, b0 + j] = tr
                traffic[1, m, b0 + j] = tw
                per[m, j] = max(tr, tw)
        # tiles of the outermost staged level: the temporal steps above it
        for j in range(nb):
            tiles[j] = 1
        for m in range(s0 if s0 < n_lv else 0):
            for d in range(n_d):
                for j in range(nb):
                    tiles[j] *= tem[b0 + j, m, d]
        for j in range(nb):
            v_last[j] = 0.0
            vector[b0 + j] = vec_total
            served = 0
            for m in range(n_lv):
                served += per[m, j]
            total[b0 + j] = comp[j] + v_ceil + served  # serial, for now
            compute[b0 + j] = comp[j]
            fill[b0 + j] = 0.0
            drain[b0 + j] = 0.0
        if lanes > 0:  # the last output tile's vector passes (all copies)
            for j in range(nb):
                tile = min(words[vl, vo, b0 + j] * busy[vl, j], elements)
                v_last[j] = float(passes * ((tile + lanes - 1) // lanes)) if tile > 0 else vec_total / tiles[j]
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
                    for j in range(nb):
                        cyc[j] = float(words[lv, ti, b0 + j]) / child_bw
                        copies[j] = 1
                        walking[j] = True
                    # up to the nearest level keeping the tensor (level 0 keeps all): the
                    # parent's port moves the distinct words of the busy children's tiles
                    for m in range(lv - 1, -1, -1):
                        parent_bw = write_bw[m] if out else read_bw[m]
                        for d in range(n_d):
                            if copies_mask[m, ti, d]:
                                for j in range(nb):
                                    copies[j] *= spx[b0 + j, m, d] * spy[b0 + j, m, d]
                        for j in range(nb):
                            hit = walking[j] and (m == 0 or keep[b0 + j, m, ti])
                            parent = float(words[lv, ti, b0 + j]) * copies[j] / (busy[m, j] * parent_bw)
                            cyc[j] = max(cyc[j], parent) if hit else cyc[j]
                            walking[j] = walking[j] and not hit
                    for j in range(nb):
                        if out:
                            drain[b0 + j] += cyc[j]
                        else:
                            fill[b0 + j] += cyc[j]
            for j in range(nb):
                inside, rd_port, wr_port = 0, 0, 0  # double-buffered levels inside / above a tile
                for m in range(n_lv):
                    if db[m] and m >= s0:
                        inside = max(inside, per[m, j])
                    elif db[m]:
                        rd_port = max(rd_port, traffic[0, m, b0 + j])
                        wr_port = max(wr_port, traffic[1, m, b0 + j])
                array = max(comp[j], inside)
                f, dr, vla = fill[b0 + j], drain[b0 + j], v_last[j]
                c_tile = array / tiles[j]
                ports = max(rd_port + dr, wr_port + f)
                pipe = max(max(f + array + vla + dr, f + c_tile + vec_total + dr), ports + c_tile + vla)
                _finish(pipe, per, j, db, total, b0)
        else:
            for j in range(nb):
                moved = 0
                for m in range(n_lv):
                    if db[m]:
                        moved = max(moved, per[m, j])
                pipe = max(max(float(comp[j]), vec_total), float(moved))
                _finish(pipe, per, j, db, total, b0)


@njit(cache=True, inline='always')
def _finish(pipe, per, j, db, total, b0):
    """The overlapped total of mapping b0 + j: whole cycles of the pipeline, plus the transfers
    of the single-buffered levels, capped by the serial time already in ``total``."""
    t_all = np.int64(math.ceil(pipe - 1e-9))
    for m in range(per.shape[0]):
        if not db[m]:
            t_all += per[m, j]
    total[b0 + j] = min(t_all, total[b0 + j])
