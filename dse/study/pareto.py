"""Pareto sets over minimize/maximize objectives (numpy, vectorized over pairs)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pareto_mask(values: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    """[N] bool: rows of ``values [N, K]`` that no other row dominates (ties: equal rows all kept)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return np.zeros(len(v), dtype=bool)
    sign = np.array([1.0 if d.lower().startswith("min") else -1.0 for d in directions])
    m = v * sign  # all minimize
    dominated = np.zeros(len(m), dtype=bool)
    for s in range(0, len(m), 512):  # blocks of candidates i, against all j: memory N * 512 * K
        c = m[None, s:s + 512, :]
        le = (m[:, None, :] <= c).all(axis=2)  # le[j, i]: j no worse than i everywhere
        lt = (m[:, None, :] < c).any(axis=2)
        dominated[s:s + 512] = (le & lt).any(axis=0)
    return ~dominated
