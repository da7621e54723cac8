"""Ordered factorizations of a loop bound across the slots of a mapping (temporal and spatial).

A dimension of size ``n`` is split over ``k`` slots (one temporal slot per storage level plus one per
spatial fan-out that may unroll it) as an ordered tuple of divisors whose product is ``n``. The number of
such tuples is ``prod over primes p^e || n of C(e + k - 1, k - 1)`` (stars and bars per prime), which
:func:`count_ordered_factorizations` computes without enumerating; the tests hold the enumeration to it.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


def prime_factors(n: int) -> dict[int, int]:
    """``{prime: exponent}`` of ``n >= 1`` by trial division (loop bounds are small)."""
    out: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def divisors(n: int) -> list[int]:
    """All divisors of ``n`` in increasing order."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def count_ordered_factorizations(n: int, k: int) -> int:
    """Closed form: ordered ``k``-tuples of positive integers with product ``n``."""
    if k == 0:
        return 1 if n == 1 else 0
    return math.prod(math.comb(e + k - 1, k - 1) for e in prime_factors(n).values())


@lru_cache(maxsize=4096)
def _ordered(n: int, k: int) -> tuple[tuple[int, ...], ...]:
    if k == 0:
        return ((),) if n == 1 else ()
    if k == 1:
        return ((n,),)
    return tuple((d, *rest) for d in divisors(n) for rest in _ordered(n // d, k - 1))


def ordered_factorizations(n: int, k: int, caps: tuple[int | None, ...] | None = None) -> np.ndarray:
    """All ordered factorizations of ``n`` into ``k`` factors as an int64 array ``[count, k]``.

    ``caps[i]`` bounds slot ``i`` (a fan-out's size); ``None`` leaves it free. Rows are in
    lexicographic order of the factor tuples, so indices into the table are stable.
    """
    rows = _ordered(n, k)
    arr = np.array(rows, dtype=np.int64).reshape(len(rows), k)
    if caps is not None:
        for i, c in enumerate(caps):
            if c is not None:
                arr = arr[arr[:, i] <= c]
    return arr


def neighbour_table(table: np.ndarray) -> list[np.ndarray]:
    """For each row, the rows reached by moving one prime factor from one slot to another.

    These single moves connect the whole table (any factorization reaches any other by moving primes
    one at a time), which makes them the mutation and local-search step of the fast mapper.
    """
    index = {tuple(r): i for i, r in enumerate(table.tolist())}
    out: list[np.ndarray] = []
    k = table.shape[1]
    for row in table.tolist():
        nbrs: set[int] = set()
        for a in range(k):
            if row[a] == 1:
                continue
            for p in prime_factors(row[a]):
                for b in range(k):
                    if b == a:
                        continue
                    new = list(row)
                    new[a] //= p
                    new[b] *= p
                    j = index.get(tuple(new))
                    if j is not None:
                        nbrs.add(j)
        out.append(np.array(sorted(nbrs), dtype=np.int64))
    return out
