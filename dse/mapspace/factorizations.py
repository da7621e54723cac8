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


def neighbour_table(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row, the rows reached by moving one prime factor from one slot to another, as CSR:
    row ``i``'s neighbours are ``flat[offsets[i]:offsets[i + 1]]``.

    These single moves connect the whole table (any factorization reaches any other by moving primes
    one at a time), which makes them the mutation and local-search step of the fast mapper. Rows are
    coded by their prime exponents in mixed radix, so each (prime, from, to) move is one vectorized
    lookup over all rows.
    """
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
    weight = np.ones((len(primes), k), dtype=np.int64)
    flat_w = weight.reshape(-1)
    radix = np.repeat([e + 1 for _, e in primes], k)
    flat_w[1:] = np.cumprod(radix[:-1])
    code = (exps * weight).sum(axis=(1, 2))
    order = np.argsort(code)
    sorted_code = code[order]
    src, dst = [], []
    for j in range(len(primes)):
        for a in range(k):
            can = np.nonzero(exps[:, j, a] > 0)[0]
            if can.size == 0:
                continue
            for b in range(k):
                if b == a:
                    continue
                target = code[can] - weight[j, a] + weight[j, b]
                pos = np.minimum(np.searchsorted(sorted_code, target), n_rows - 1)
                ok = sorted_code[pos] == target
                src.append(can[ok])
                dst.append(order[pos[ok]])
    if not src:
        return np.zeros(n_rows + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    s_all, d_all = np.concatenate(src), np.concatenate(dst)  # distinct moves give distinct rows
    idx = np.argsort(s_all, kind="stable")
    s_all, d_all = s_all[idx], d_all[idx]
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.add.at(offsets, s_all + 1, 1)
    return np.cumsum(offsets), d_all.astype(np.int64)
