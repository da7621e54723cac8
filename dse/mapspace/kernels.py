"""Compiled loops of :class:`~dse.mapspace.space.Mapspace` over tilings given as table rows.

The fast mapper decodes and checks a few hundred tilings at a time, thousands of times per search:
in numpy that was a dozen small array operations per dimension, each costing more than its work.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def decode_into(out: np.ndarray, rows: np.ndarray, tables: tuple, slot_level: np.ndarray,
                slot_kind: np.ndarray, fixed: np.ndarray) -> None:
    """Writes the factors of tilings ``rows`` [C, D] into ``out`` [3 kinds, C, L, D] (ones where no
    table column or fixed factor lands): column ``s`` of table ``d`` goes to level
    ``slot_level[d, s]``, kind ``slot_kind[d, s]``; ``fixed`` rows are (dim, level, kind, factor)."""
    n, n_d = rows.shape
    for c in range(n):
        for d in range(n_d):
            t = tables[d]
            r = rows[c, d]
            for s in range(t.shape[1]):
                out[slot_kind[d, s], c, slot_level[d, s], d] = t[r, s]
        for i in range(len(fixed)):
            out[fixed[i, 2], c, fixed[i, 1], fixed[i, 0]] = fixed[i, 3]


@njit(cache=True)
def spatial_ok(rows: np.ndarray, row_offset: np.ndarray, group_starts: np.ndarray, group_spatial: np.ndarray,
               caps: np.ndarray) -> np.ndarray:
    """[C]: tilings ``rows`` [C, D] fit every fan-out: the product over dims of the factor of each
    row's spatial group (groups of all tables in one array, ``group_spatial`` [fan-outs, groups])
    is within the fan-out's cap."""
    n, n_d = rows.shape
    n_f = len(caps)
    ok = np.ones(n, np.bool_)
    prod = np.empty(n_f, np.int64)
    for c in range(n):
        prod[:] = 1
        for d in range(n_d):
            g = np.searchsorted(group_starts, rows[c, d] + row_offset[d], side="right") - 1
            for j in range(n_f):
                prod[j] *= group_spatial[j, g]
        for j in range(n_f):
            if prod[j] > caps[j]:
                ok[c] = False
    return ok
