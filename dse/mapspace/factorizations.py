"""Ordered factorizations of a loop bound across the slots of a mapping (temporal and spatial).

A dimension of size ``n`` is split over ``k`` slots (one temporal slot per storage level plus one per
spatial fan-out that may unroll it) as an ordered tuple of divisors whose product is ``n``. The number of
such tuples is ``prod over primes p^e || n of C(e + k - 1, k - 1)`` (stars and bars per prime), which
:func:`count_ordered_factorizations` computes without enumerating; the tests hold the enumeration to it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dse.mapspace.kernels import filled


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


def ordered_factorizations(n: int, k: int, caps: tuple[int | None, ...] | None = None) -> np.ndarray:
    """All ordered factorizations of ``n`` into ``k`` factors as an int64 array ``[count, k]``.

    ``caps[i]`` bounds slot ``i`` (a fan-out's size); ``None`` leaves it free. Rows are in
    lexicographic order of the factor tuples, so indices into the table are stable. Enumerated in
    that order by a compiled depth-first walk over the divisors (a table such as 5120 over nine
    slots has 393 822 rows; sorting the rows of an outer product took most of a mapspace's set-up).
    """
    if k == 0:
        return np.zeros((1 if n == 1 else 0, 0), dtype=np.int64)
    divs = np.array(divisors(n), dtype=np.int64)
    bound = np.array([n if c is None else c for c in (caps or (None,) * k)], dtype=np.int64)
    # caps only shrink the count: the uncapped one is room for all (up to a million rows)
    (out,) = filled(lambda out: _factor_rows(n, divs, bound, out), lambda rows: (np.empty((rows, k), np.int64),),
                    min(count_ordered_factorizations(n, k), 1 << 20))
    return out


@njit(cache=True)
def _factor_rows(n: int, divs: np.ndarray, bound: np.ndarray, out: np.ndarray) -> int:
    """Writes the ordered factorizations of ``n`` with factor i <= ``bound[i]`` into ``out`` in
    lexicographic order (as many as fit) and returns how many there are: slot by slot, each
    divisor of what is left in increasing order; the last slot takes the rest."""
    k = len(bound)
    rest = np.empty(k + 1, np.int64)
    pick = np.full(k, -1, np.int64)
    row = np.empty(k, np.int64)
    rest[0] = n
    count, s = 0, 0
    while s >= 0:
        if s == k - 1:  # the last factor is what is left
            if rest[s] <= bound[s]:
                row[s] = rest[s]
                if count < len(out):
                    out[count] = row
                count += 1
            s -= 1
            continue
        pick[s] += 1
        i = pick[s]
        if i >= len(divs) or divs[i] > rest[s] or divs[i] > bound[s]:
            pick[s] = -1
            s -= 1
            continue
        if rest[s] % divs[i]:
            continue
        row[s] = divs[i]
        rest[s + 1] = rest[s] // divs[i]
        s += 1
    return count
