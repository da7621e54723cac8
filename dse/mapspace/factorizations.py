"""Ordered factorizations of a loop bound across the slots of a mapping (temporal and spatial).

A dimension of size ``n`` is split over ``k`` slots (one temporal slot per storage level plus one per
spatial fan-out that may unroll it) as an ordered tuple of divisors whose product is ``n``. The number of
such tuples is ``prod over primes p^e || n of C(e + k - 1, k - 1)`` (stars and bars per prime), which
:func:`count_ordered_factorizations` computes without enumerating; the tests hold the enumeration to it.
"""

from __future__ import annotations

import itertools
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


@lru_cache(maxsize=256)
def _compositions(e: int, k: int) -> np.ndarray:
    """[C(e + k - 1, k - 1), k]: every way to spread ``e`` equal items over ``k`` slots (the
    exponents of one prime), by stars and bars."""
    combos = list(itertools.combinations(range(e + k - 1), k - 1))
    bars = np.array(combos, dtype=np.int64).reshape(len(combos), k - 1)
    edges = np.concatenate([np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), e + k - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


def ordered_factorizations(n: int, k: int, caps: tuple[int | None, ...] | None = None) -> np.ndarray:
    """All ordered factorizations of ``n`` into ``k`` factors as an int64 array ``[count, k]``.

    Built in numpy, prime by prime (a row is a product of one exponent spread per prime): a table
    such as 5120 over nine slots has 393 822 rows, which tuples took seconds to build.
    ``caps[i]`` bounds slot ``i`` (a fan-out's size); ``None`` leaves it free. Rows are in
    lexicographic order of the factor tuples, so indices into the table are stable.
    """
    if k == 0:
        return np.zeros((1 if n == 1 else 0, 0), dtype=np.int64)
    arr = np.ones((1, k), dtype=np.int64)
    for p, e in prime_factors(n).items():
        powers = p ** _compositions(e, k)  # [m, k]
        arr = (arr[:, None, :] * powers[None, :, :]).reshape(-1, k)
        for i, c in enumerate(caps or ()):  # caps only shrink the table: filter as early as possible
            if c is not None:
                arr = arr[arr[:, i] <= c]
    return arr[np.lexsort(arr.T[::-1])]
