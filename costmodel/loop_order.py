"""Loop-order helpers over a batch of mappings, batch axis last: products and sums "over the loops
outer (or inner) to each loop in its level's order".

Each is linear in the number of dims: the values are scattered into loop order (``loop_slots``:
a level's ranks are a permutation, so level offset + rank gives each loop's slot directly), a
prefix product or suffix sum is taken row by row, and the result gathered back. Comparing every
pair of loops would be quadratic.
"""

from __future__ import annotations

import numpy as np


def running(op: np.ufunc, a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``op.accumulate(a, axis=0)`` row by row (the ufunc's own accumulate over the first axis of
    [L, B] is several times slower than L whole-row operations)."""
    out = np.empty_like(a) if out is None else out
    out[0] = a[0]
    for m in range(1, len(a)):
        op(out[m - 1], a[m], out=out[m])
    return out


def loop_slots(rank: np.ndarray, d_all: int) -> np.ndarray:
    """[L, D, B] flat index of each loop in an [L, d_all, B] array ordered by loop position."""
    n_lv, _, b = rank.shape
    flat = rank.astype(np.intp) * b
    flat += (np.arange(n_lv) * (d_all * b))[:, None, None] + np.arange(b)
    return flat


def within(t: np.ndarray, slots: np.ndarray, d_all: int) -> np.ndarray:
    """[L, D, B]: product of the factors of the loops outer to each loop in its level's order.
    Scatters the factors into loop order (the dropped dims' slots keep factor 1), takes exclusive
    prefix products and gathers them back: linear in D, where comparing every pair is quadratic."""
    n_lv, _, b = t.shape
    in_order = np.ones(n_lv * d_all * b, np.int64)
    in_order[slots.ravel()] = t.ravel()
    in_order = in_order.reshape(n_lv, d_all, b)
    prefix = np.empty_like(in_order)
    prefix[:, 0] = 1
    for r in range(1, d_all):
        np.multiply(prefix[:, r - 1], in_order[:, r - 1], out=prefix[:, r])
    return prefix.ravel().take(slots)


def inner_sum(values: list[tuple[int, np.ndarray]], slots: np.ndarray, d_all: int, at: list[int]) -> np.ndarray:
    """[L, len(at), B]: for the loops of dims ``at``, the sum of ``values`` ((dim, [L, B]) pairs)
    of the dims whose loops are inner to it at the same level (exclusive suffix sums in loop order)."""
    n_lv, _, b = slots.shape
    in_order = np.zeros(n_lv * d_all * b, np.int64)
    for e, v in values:
        in_order[slots[:, e].ravel()] = v.ravel()
    in_order = in_order.reshape(n_lv, d_all, b)
    suffix = np.empty_like(in_order)
    suffix[:, -1] = 0
    for r in range(d_all - 2, -1, -1):
        np.add(suffix[:, r + 1], in_order[:, r + 1], out=suffix[:, r])
    return suffix.ravel().take(slots[:, at])
