"""The energy totals of costmodel.energy, compiled (numba).

Why compiled: as numpy the totals are a dozen passes over [L, B] temporaries (40-50 ns per
mapping on 10^5 mappings, most of it memory traffic); this kernel takes blocks of the batch axis
(innermost, so its loops vectorize) through every level at once, over the range of mappings whose
counts ``evaluate_batch`` has just computed and left in cache.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCK = 256


@njit(cache=True, error_model="numpy")
def totals(reads, fills, updates, hops, seconds, mac, read_pj, write_pj, hop_pj, per_second, lo, hi, total):
    """Into ``total[lo:hi]`` (pJ): Σ_l read_pj[l] x reads of level l, then the same for writes
    (fills + updates) and hops (counts [L, T, B]), + ``mac`` + ``seconds`` x each of the
    leakage rates in ``per_second`` (pJ per second), added in the order of costmodel.energy's
    formula."""
    n_lv, n_t, _ = reads.shape
    e_rd, e_wr, e_hop = np.empty(BLOCK), np.empty(BLOCK), np.empty(BLOCK)
    r, w, h = np.empty(BLOCK, np.int64), np.empty(BLOCK, np.int64), np.empty(BLOCK, np.int64)
    for b0 in range(lo, hi, BLOCK):
        ub, unb = np.uint64(b0), np.uint64(min(BLOCK, hi - b0))  # unsigned: contiguous loads
        for j in range(unb):
            e_rd[j], e_wr[j], e_hop[j] = 0.0, 0.0, 0.0
        for m in range(n_lv):
            for j in range(unb):  # (innermost loops over the block: they vectorize)
                r[j], w[j], h[j] = 0, 0, 0
            for t in range(n_t):
                for j in range(unb):
                    r[j] += reads[m, t, ub + j]
                    w[j] += fills[m, t, ub + j] + updates[m, t, ub + j]
                    h[j] += hops[m, t, ub + j]
            for j in range(unb):
                e_rd[j] += read_pj[m] * r[j]
                e_wr[j] += write_pj[m] * w[j]
                e_hop[j] += hop_pj[m] * h[j]
        for j in range(unb):
            e = e_rd[j] + e_wr[j] + e_hop[j] + mac[ub + j]
            for k in range(per_second.shape[0]):
                e += seconds[ub + j] * per_second[k]
            total[ub + j] = e
