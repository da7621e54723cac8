"""Compiled helpers of the fast mapper's :class:`~dse.mappers.genomes.Evaluator`: the candidates'
hashes and the table of the hashes already scored.

An evaluator call handles a few hundred to a few thousand candidates; hashing them and sorting the
hashes against the seen ones took as long as the cost model in numpy (dozens of small array passes
per call). Here each candidate is one loop, and the seen hashes live in an open-addressing table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def hashes(rows: np.ndarray, ranks: np.ndarray, keep: np.ndarray, row_levels: np.ndarray,
           row_offset: np.ndarray, salt: np.ndarray) -> np.ndarray:
    """[P] 64-bit hash of each candidate's canonical form: the dot product (wrapping) of its rows,
    canonical ranks and keep option with ``salt``. Factor-1 loops order nothing: an active loop's
    canonical rank is 1 + the number of active loops of its level ranked before it, a factor-1
    loop's 0, so equal nests hash equal. A loop is active at level ``l`` when bit ``l`` of its row's
    ``row_levels`` entry (rows of dim ``d`` numbered from ``row_offset[d]``) is set."""
    n, n_lv, n_d = ranks.shape
    out = np.empty(n, np.int64)
    bits = np.empty(n_d, np.int64)
    for p in range(n):
        h = keep[p] * salt[n_d * (n_lv + 1)]
        for d in range(n_d):
            h += rows[p, d] * salt[d]
            bits[d] = row_levels[row_offset[d] + rows[p, d]]
        for lv in range(n_lv):
            for d in range(n_d):
                if (bits[d] >> lv) & 1:
                    canon = 0
                    for e in range(n_d):
                        if (bits[e] >> lv) & 1 and ranks[p, lv, e] <= ranks[p, lv, d]:
                            canon += 1
                    h += canon * salt[n_d * (lv + 1) + d]
        out[p] = h
    return out


@njit(cache=True)
def _slot(keys: np.ndarray, used: np.ndarray, h: np.int64) -> int:
    """The slot holding ``h``, or the empty slot where it goes (linear probing)."""
    mask = len(keys) - 1
    x = np.uint64(h)
    x = (x ^ (x >> np.uint64(32))) * _MIX  # mixed, then its top bits fold into the low ones
    i = np.int64((x ^ (x >> np.uint64(32))) & np.uint64(mask))
    while used[i] and keys[i] != h:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def scan(h: np.ndarray, keys: np.ndarray, used: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each hash ``h``: the position of the first candidate with that hash, or -1 when the table
    holds it; and its value in the table (+inf if not held)."""
    n = len(h)
    first = np.empty(n, np.int64)
    known = np.full(n, np.inf)
    cap = 1
    while cap < 2 * n:
        cap *= 2
    b_keys, b_used, b_pos = np.empty(cap, np.int64), np.zeros(cap, np.bool_), np.empty(cap, np.int64)
    for i in range(n):
        s = _slot(keys, used, h[i])
        if used[s]:
            first[i], known[i] = -1, values[s]
            continue
        s = _slot(b_keys, b_used, h[i])
        if not b_used[s]:
            b_keys[s], b_used[s], b_pos[s] = h[i], True, i
        first[i] = b_pos[s]
    return first, known


@njit(cache=True)
def insert(h: np.ndarray, v: np.ndarray, keys: np.ndarray, used: np.ndarray, values: np.ndarray) -> None:
    """Puts the hashes ``h`` (not held yet) with values ``v`` into the table (which has room)."""
    for i in range(len(h)):
        s = _slot(keys, used, h[i])
        keys[s], used[s], values[s] = h[i], True, v[i]


class SeenTable:
    """Hashes with a score each, kept at most half full (the table doubles as it fills)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.count = 0
        self._alloc(capacity)

    def _alloc(self, capacity: int) -> None:
        self.keys, self.used, self.values = np.zeros(capacity, np.int64), np.zeros(capacity, bool), np.zeros(capacity)

    def scan(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """See :func:`scan`."""
        return scan(h, self.keys, self.used, self.values)

    def add(self, h: np.ndarray, v: np.ndarray) -> None:
        """Adds hashes not held yet, with their values."""
        if 2 * (self.count + len(h)) > len(self.keys):
            cap = len(self.keys)
            while 2 * (self.count + len(h)) > cap:
                cap *= 2
            old = self.keys[self.used], self.values[self.used]
            self._alloc(cap)
            insert(*old, self.keys, self.used, self.values)
        insert(h, v, self.keys, self.used, self.values)
        self.count += len(h)
