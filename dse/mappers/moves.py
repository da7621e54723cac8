"""Single prime moves in one dimension's factorization table, computed for the rows asked about.

A move takes one prime factor of the dimension from one slot to another: the step that connects the
whole table (any factorization reaches any other by moving primes one at a time). A table of a
dimension such as 5120 = 2^10 * 5 over nine slots has 393 822 rows, and building all its moves took
seconds; a search only ever asks about a few hundred rows, so here each
row is coded by its prime exponents (mixed radix) once, and a row's moves are lookups of the codes
one move away. A target missing from the table is a split that breaks a fan-out cap: no move.
"""

from __future__ import annotations

import weakref

import numpy as np
from numba import njit

from dse.mapspace.factorizations import prime_factors


class PrimeMoves:
    """Moves of one table ``[rows, slots]`` (rows = ordered factorizations of one size)."""

    def __init__(self, table: np.ndarray) -> None:
        n_rows, k = table.shape
        n = int(table[0].prod()) if n_rows else 1
        primes = sorted(prime_factors(n).items())
        # each entry is a divisor of n: its exponents are looked up, not divided out entry by entry
        divisors, self.div_exps = _divisors(primes)
        self.slot_div = np.searchsorted(divisors, table)  # [rows, slots]: index of each entry's divisor
        radix = np.repeat([e + 1 for _, e in primes], k)
        weight = np.ones(len(radix), dtype=np.int64)
        weight[1:] = np.cumprod(radix[:-1])
        self.weight = weight.reshape(len(primes), k)
        part = self.div_exps @ self.weight  # [divisors, slots]: a divisor's share of the code in each slot
        self.code = np.zeros(n_rows, dtype=np.int64)
        for a in range(k):
            self.code += part[self.slot_div[:, a], a]
        self.order = np.argsort(self.code, kind="stable")
        self.sorted_code = self.code[self.order]
        # every (prime, from, to) with from != to
        j, a, b = np.meshgrid(np.arange(len(primes)), np.arange(k), np.arange(k), indexing="ij")
        off = a != b
        self.j, self.a, self.b = j[off], a[off], b[off]
        self._nb: dict[int, np.ndarray] = {}  # neighbours by row: walkers come back to the same rows

    def of(self, rows: np.ndarray) -> np.ndarray:
        """[len(rows), moves] the rows one move away (-1 where a move is impossible)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.full((len(rows), len(self.j)), -1, dtype=np.int64)
        if len(self.j) and len(rows):
            _targets_of(rows, *self._kernel_args(), out)
        return out

    def _kernel_args(self) -> tuple[np.ndarray, ...]:
        return (self.div_exps, self.slot_div, self.weight, self.j, self.a, self.b, self.code, self.sorted_code,
                self.order)

    def neighbours(self, row: int) -> np.ndarray:
        """Distinct rows one move away from ``row`` (distinct moves give distinct rows); read-only."""
        nb = self._nb.get(row)
        if nb is None:
            out = self.of(np.array([row]))[0]
            nb = self._nb[row] = out[out >= 0]
            nb.flags.writeable = False
        return nb

    def random(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """One random move of each row (``u`` uniform in [0, 1)): the ``floor(u * count)``-th of its
        possible moves in move order; a row with none stays. Compiled: mutation asks this of a few
        hundred rows per generation, and the numpy version's fixed costs were most of it."""
        rows = np.asarray(rows, dtype=np.int64)
        out = rows.copy()
        if len(self.j):
            _random_moves(rows, np.asarray(u, dtype=np.float64), *self._kernel_args(), out)
        return out


@njit(cache=True, inline='always')
def _targets(r, div_exps, slot_div, weight, pj, pa, pb, code, sorted_code, order, out):
    """Into ``out`` [moves]: the row each move of prime ``pj`` from slot ``pa`` to slot ``pb``
    reaches from row ``r`` (looked up by its code), or -1: no such factor to move, or a split that
    breaks a fan-out cap (not in the table). Returns how many moves are possible."""
    n = 0
    for m in range(len(pj)):
        out[m] = -1
        j, a = pj[m], pa[m]
        if div_exps[slot_div[r, a], j] <= 0:
            continue
        target = code[r] - weight[j, a] + weight[j, pb[m]]
        pos = min(np.searchsorted(sorted_code, target), len(sorted_code) - 1)
        if sorted_code[pos] == target:
            out[m] = order[pos]
            n += 1
    return n


@njit(cache=True)
def _targets_of(rows, div_exps, slot_div, weight, pj, pa, pb, code, sorted_code, order, out):
    """Into ``out`` [len(rows), moves]: :func:`_targets` of each row."""
    for i in range(len(rows)):
        _targets(rows[i], div_exps, slot_div, weight, pj, pa, pb, code, sorted_code, order, out[i])


@njit(cache=True)
def _random_moves(rows, u, div_exps, slot_div, weight, pj, pa, pb, code, sorted_code, order, out):
    """Into ``out``: for each row, its ``floor(u * count)``-th possible move in move order, or the
    row itself without any."""
    reach = np.empty(len(pj), np.int64)
    for i in range(len(rows)):
        n = _targets(rows[i], div_exps, slot_div, weight, pj, pa, pb, code, sorted_code, order, reach)
        if n:
            want = min(np.int64(u[i] * n), n - 1)
            for m in range(len(pj)):
                if reach[m] >= 0:
                    if want == 0:
                        out[i] = reach[m]
                        break
                    want -= 1


def _divisors(primes: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Every divisor of the number with these (prime, exponent) pairs, sorted, and its exponents
    [divisors, primes]."""
    divs, exps = np.ones(1, dtype=np.int64), np.zeros((1, 0), dtype=np.int64)
    for p, e in primes:
        divs = (divs[:, None] * p ** np.arange(e + 1)).ravel()
        power = np.tile(np.arange(e + 1), len(exps))[:, None]  # divisor i * p^x is at i * (e + 1) + x
        exps = np.concatenate([np.repeat(exps, e + 1, axis=0), power], axis=1)
    order = np.argsort(divs)
    return divs[order], exps[order]


_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""PrimeMoves per DimTable object: mapspaces share their (cached) tables, so searches of the same
layer shape on many designs build each table's moves once."""


class MoveTables:
    """The :class:`PrimeMoves` of every dimension of a mapspace, each built on first use (and then
    held here too: the descent asks for them a hundred thousand times, a weak dictionary is slow)."""

    def __init__(self, tables: list) -> None:
        self._tables = tables
        self._moves: list[PrimeMoves | None] = [None] * len(tables)
        # per dim: the PrimeMoves' own cache of neighbours by row, read here without a call
        # (empty until the dim's moves are built)
        self._nb: list[dict[int, np.ndarray]] = [{} for _ in tables]

    def __getitem__(self, di: int) -> PrimeMoves:
        pm = self._moves[di]
        if pm is None:
            t = self._tables[di]
            if t not in _BUILT:
                _BUILT[t] = PrimeMoves(t.table)
            pm = self._moves[di] = _BUILT[t]
            self._nb[di] = pm._nb
        return pm

    def neighbours(self, di: int, row: int) -> np.ndarray:
        nb = self._nb[di].get(row)
        return self[di].neighbours(row) if nb is None else nb

    def all_neighbours(self, rows: list[int]) -> list[np.ndarray]:
        """The neighbours of each dimension's row of one tiling ``rows`` (the descent asks this at
        every step: plain dictionary lookups, no calls, once a row has been seen)."""
        out = []
        for di, r in enumerate(rows):
            nb = self._nb[di].get(r)
            out.append(self[di].neighbours(r) if nb is None else nb)
        return out
