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

from dse.mapspace.factorizations import prime_factors


class PrimeMoves:
    """Moves of one table ``[rows, slots]`` (rows = ordered factorizations of one size)."""

    def __init__(self, table: np.ndarray) -> None:
        n_rows, k = table.shape
        n = int(table[0].prod()) if n_rows else 1
        primes = sorted(prime_factors(n).items())
        exps = np.zeros((n_rows, len(primes), k), dtype=np.int64)
        for j, (p, e) in enumerate(primes):
            rest = table.copy()
            for _ in range(e):
                hit = rest % p == 0
                exps[:, j] += hit
                rest = np.where(hit, rest // p, rest)
        radix = np.repeat([e + 1 for _, e in primes], k)
        weight = np.ones(len(radix), dtype=np.int64)
        weight[1:] = np.cumprod(radix[:-1])
        self.weight = weight.reshape(len(primes), k)
        self.exps = exps
        self.code = (exps * self.weight).sum(axis=(1, 2))
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
        if not len(self.j) or not len(rows):
            return np.full((len(rows), len(self.j)), -1, dtype=np.int64)
        can = self.exps[rows][:, self.j, self.a] > 0
        target = self.code[rows][:, None] - self.weight[self.j, self.a] + self.weight[self.j, self.b]
        pos = np.minimum(np.searchsorted(self.sorted_code, target), len(self.sorted_code) - 1)
        found = can & (self.sorted_code[pos] == target)
        return np.where(found, self.order[pos], -1)

    def neighbours(self, row: int) -> np.ndarray:
        """Distinct rows one move away from ``row`` (distinct moves give distinct rows); read-only."""
        nb = self._nb.get(row)
        if nb is None:
            out = self.of(np.array([row]))[0]
            nb = self._nb[row] = out[out >= 0]
            nb.flags.writeable = False
        return nb

    def random(self, rows: np.ndarray, u: np.ndarray) -> np.ndarray:
        """One random move of each row (``u`` uniform in [0, 1)); a row with none stays."""
        nb = self.of(rows)
        if not nb.shape[1]:
            return np.asarray(rows, dtype=np.int64).copy()
        count = (nb >= 0).sum(axis=1)
        pick = np.minimum((u * count).astype(np.int64), np.maximum(count - 1, 0))
        # the pick-th valid entry of each row
        rank = np.cumsum(nb >= 0, axis=1) - 1
        hit = (rank == pick[:, None]) & (nb >= 0)
        first = hit.argmax(axis=1)
        return np.where(count > 0, nb[np.arange(len(rows)), first], rows)


_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""PrimeMoves per DimTable object: mapspaces share their (cached) tables, so searches of the same
layer shape on many designs build each table's moves once."""


class MoveTables:
    """The :class:`PrimeMoves` of every dimension of a mapspace, each built on first use."""

    def __init__(self, tables: list) -> None:
        self._tables = tables

    def __getitem__(self, di: int) -> PrimeMoves:
        t = self._tables[di]
        if t not in _BUILT:
            _BUILT[t] = PrimeMoves(t.table)
        return _BUILT[t]

    def neighbours(self, di: int, row: int) -> np.ndarray:
        return self[di].neighbours(row)
