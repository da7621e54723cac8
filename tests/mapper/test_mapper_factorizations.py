"""Ordered factorizations against the closed form and brute force; the prime moves connect a table."""

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.mappers.moves import PrimeMoves
from dse.mapspace.factorizations import (
    count_ordered_factorizations,
    divisors,
    ordered_factorizations,
)


@given(st.integers(1, 400), st.integers(1, 5))
@settings(max_examples=60, deadline=None)
def test_count_matches_closed_form_and_brute_force(n, k):
    table = ordered_factorizations(n, k)
    # brute force: all k-tuples of divisors with product n
    brute = [t for t in itertools.product(divisors(n), repeat=k) if math.prod(t) == n]
    assert len(table) == len(brute) == count_ordered_factorizations(n, k)
    assert list(map(tuple, table.tolist())) == brute  # the same rows in the same (lexicographic) order
    assert (table.prod(axis=1) == n).all()


def test_hand_counts():
    # 12 = 2^2 * 3 over 3 slots: C(4,2) * C(3,2) = 6 * 3 = 18
    assert count_ordered_factorizations(12, 3) == 18 == len(ordered_factorizations(12, 3))
    # 56 = 2^3 * 7 over 4 slots: C(6,3) * C(4,3) = 20 * 4 = 80
    assert count_ordered_factorizations(56, 4) == 80
    assert count_ordered_factorizations(1, 6) == 1
    assert divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36]


@given(st.integers(1, 400), st.integers(1, 4), st.lists(st.one_of(st.none(), st.integers(1, 20)), min_size=4, max_size=4))
@settings(max_examples=60, deadline=None)
def test_caps_keep_exactly_the_rows_within_them(n, k, caps):
    caps = tuple(caps[:k])
    brute = [t for t in itertools.product(divisors(n), repeat=k) if math.prod(t) == n
             and all(c is None or f <= c for f, c in zip(t, caps))]
    assert list(map(tuple, ordered_factorizations(n, k, caps).tolist())) == brute


def test_caps_bound_slots():
    t = ordered_factorizations(16, 3, caps=(None, 4, 2))
    assert (t[:, 1] <= 4).all() and (t[:, 2] <= 2).all()
    # slot 1 in {1,2,4} and slot 2 in {1,2}: every pair leaves a power of two for slot 0: 3 * 2 = 6
    assert len(t) == 6


@given(st.integers(1, 200), st.integers(2, 4), st.booleans())
@settings(max_examples=25, deadline=None)
def test_prime_moves_connect_the_table(n, k, capped):
    """Any factorization reaches any other by single prime moves (tests/mapper/test_mapper_moves.py
    holds the moves themselves to brute force), with caps on every slot but the first too: a prime
    can always move back into that one."""
    table = ordered_factorizations(n, k, caps=(None,) + (4,) * (k - 1) if capped else None)
    pm = PrimeMoves(table)
    nbrs = [pm.neighbours(i).tolist() for i in range(len(table))]
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j in nbrs[i]:
            assert len(np.nonzero(table[i] != table[j])[0]) == 2  # one prime changed two slots
            if j not in seen:
                seen.add(j)
                todo.append(j)
    assert len(seen) == len(table)
