"""PrimeMoves (the fast mapper's on-demand prime moves) against a brute-force definition."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.mappers.moves import PrimeMoves
from dse.mapspace.factorizations import ordered_factorizations


def is_prime(p: int) -> bool:
    return p > 1 and all(p % d for d in range(2, int(p**0.5) + 1))


def brute_neighbours(table: np.ndarray, row: int) -> set[int]:
    """Rows equal to ``row`` with one slot divided by a prime p and another multiplied by p."""
    out = set()
    r = table[row]
    for j, other in enumerate(table):
        diff = np.nonzero(other != r)[0]
        if len(diff) != 2:
            continue
        a, b = diff
        for src, dst in ((a, b), (b, a)):
            p = r[src] // other[src] if other[src] and r[src] % other[src] == 0 else 0
            if is_prime(int(p)) and other[dst] == r[dst] * p:
                out.add(j)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 72), st.integers(1, 4), st.lists(st.sampled_from([None, 2, 4]), min_size=4, max_size=4))
def test_moves_match_brute_force(n, k, caps):
    # caps as a fan-out slot would have them: rows over a cap are not in the table
    table = ordered_factorizations(n, k, tuple(caps[:k]))
    if not len(table):
        return
    pm = PrimeMoves(table)
    for row in range(len(table)):
        got = pm.neighbours(row)
        assert len(set(got.tolist())) == len(got)
        assert set(got.tolist()) == brute_neighbours(table, row)
    rows = np.arange(len(table))
    moved = pm.random(rows, np.random.default_rng(n).random(len(rows)))
    for row, m in zip(rows, moved):
        nb = brute_neighbours(table, row)
        assert (m in nb) if nb else m == row
