"""Compiled loops of :class:`~dse.mapspace.space.Mapspace` over tilings given as table rows.

The fast mapper decodes and checks a few hundred tilings at a time, thousands of times per search:
in numpy that was a dozen small array operations per dimension, each costing more than its work.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit


def filled(run: Callable[..., int], make: Callable[[int], tuple[np.ndarray, ...]],
           guess: int) -> tuple[np.ndarray, ...]:
    """The arrays ``make(rows)`` as filled by ``run``, a kernel that writes as many rows as fit and
    returns how many there are (the enumerations below), cut to that count: run again with room
    for all when ``guess`` rows were too few (a cut copy frees the unused rows)."""
    arrays = make(guess)
    n = run(*arrays)
    if n > guess:
        arrays = make(n)
        run(*arrays)
    return tuple(a if len(a) == n else a[:n].copy() for a in arrays)


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


@njit(cache=True)
def spatial_combos(group_spatial: np.ndarray, group_off: np.ndarray, caps: np.ndarray, out: np.ndarray,
                   pes: np.ndarray) -> int:
    """Every combination of one spatial group per dim (dim d's groups are columns
    ``group_off[d]..group_off[d + 1]`` of ``group_spatial`` [fan-outs, groups]) whose factors fit
    every fan-out, in lexicographic order, into ``out`` [M, D] (group ids within each dim) and their
    PEs into ``pes`` [M]: a depth-first walk that abandons a prefix once a fan-out overflows (factors
    are >= 1, so no completion fits). Returns M; when ``out`` has fewer rows, only those are written."""
    n_d, n_f = len(group_off) - 1, len(caps)
    prod = np.ones((n_d + 1, n_f), np.int64)  # prod[d]: the fan-outs' products over dims < d
    pick = np.full(n_d, -1, np.int64)
    n, d = 0, 0
    while d >= 0:
        pick[d] += 1
        if pick[d] >= group_off[d + 1] - group_off[d]:
            pick[d] = -1
            d -= 1
            continue
        fits = True
        for j in range(n_f):
            prod[d + 1, j] = prod[d, j] * group_spatial[j, group_off[d] + pick[d]]
            fits = fits and prod[d + 1, j] <= caps[j]
        if not fits:
            continue
        if d < n_d - 1:
            d += 1
            continue
        if n < len(out):
            out[n] = pick
            p = 1
            for j in range(n_f):
                p *= prod[n_d, j]
            pes[n] = p
        n += 1
    return n
