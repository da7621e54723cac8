"""Random valid mappings, generated in bulk (for benchmarks and property tests; seeded).

Each prime factor of each dimension goes to one loop slot (a level's temporal loop, or its spatial
X or Y loop when that fan-out exceeds 1), so the factors of every dimension multiply to its size by
construction. Loop orders are random permutations; a tensor a level may hold is bypassed with
probability ``bypass_p`` (DRAM keeps everything). Where the kept tiles overflow a level (half of it
when double-buffered, as :meth:`costmodel.mapping.Mapping.validate` counts), the level's temporal
factors, then its spatial ones, move out to its parent's temporal loop (innermost level first;
this shrinks the tile and changes no other level's); spatial factors over a fan-out first move to
the same level's temporal loop. Candidates still invalid (a tile that cannot fit) are rejected and
more are drawn.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING

import numpy as np

from costmodel.mapping import FACTOR_DTYPE, ORDER_DTYPE, MappingBatch, batch_last
from costmodel.problem import Problem, as_int, expect_problem
from costmodel.tiles import tile_words

if TYPE_CHECKING:
    from costmodel.arch import Architecture


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out + ([n] if n > 1 else [])


def _candidates(problem: Problem, arch: Architecture, n: int, rng: np.random.Generator,
                bypass_p: float) -> MappingBatch:
    levels = arch.levels
    n_lv, n_d = len(levels), len(problem.dims)
    # slot s: level s // 3, kind s % 3 (temporal, X, Y); outer temporal loops weigh more, so that
    # inner tiles stay small and fewer candidates overflow
    weight = np.zeros(3 * n_lv)
    for li, lv in enumerate(levels):
        weight[3 * li] = 3.0 if li == 0 else 1.0
        weight[3 * li + 1] = 1.5 if lv.fanout_x > 1 else 0.0
        weight[3 * li + 2] = 1.5 if lv.fanout_y > 1 else 0.0
    weight /= weight.sum()
    slots = np.ones((n, 3 * n_lv, n_d), FACTOR_DTYPE)
    rows = np.arange(n)
    for di, (_, size) in enumerate(problem.dims):
        for p in prime_factors(size):
            s = rng.choice(3 * n_lv, size=n, p=weight)
            slots[rows, s, di] *= p
    order = np.argsort(np.argsort(rng.random((n, n_lv, n_d)), axis=2), axis=2).astype(ORDER_DTYPE)
    holds = np.array([[t.name in lv.holds for t in problem.tensors] for lv in levels])
    keep = holds[None] & (rng.random((n, n_lv, len(problem.tensors))) >= bypass_p)
    keep[:, 0, :] = True
    return MappingBatch(slots[:, 0::3], slots[:, 1::3], slots[:, 2::3], order, keep)


def _usable(arch: Architecture) -> np.ndarray:
    return np.array([np.inf if lv.capacity_words is None else
                     (lv.capacity_words // 2 if lv.double_buffered else lv.capacity_words) for lv in arch.levels])


def _kept_words(problem: Problem, cand: MappingBatch, idx: np.ndarray, level: int) -> np.ndarray:
    sub = _take(cand, idx)
    return np.where(sub.keep[:, level], tile_words(problem, sub.temporal, sub.spatial_x, sub.spatial_y)[:, level], 0).sum(axis=1)


def _repair(problem: Problem, arch: Architecture, cand: MappingBatch) -> None:
    """Fit spatial factors to the fan-outs (moving whole dims to the same level's temporal loop),
    then move factors of overflowing levels out to their parents, innermost level first (in place)."""
    for c, lv in enumerate(arch.levels):
        for spatial, limit in ((cand.spatial_x, lv.fanout_x), (cand.spatial_y, lv.fanout_y)):
            for d in range(spatial.shape[2]):
                over = spatial[:, c].prod(axis=1) > limit
                cand.temporal[over, c, d] *= spatial[over, c, d]
                spatial[over, c, d] = 1
    usable = _usable(arch)
    for c in range(len(arch.levels) - 1, 0, -1):
        if np.isinf(usable[c]):
            continue
        idx = np.arange(len(cand))
        for moved in (cand.temporal, cand.spatial_x, cand.spatial_y):
            idx = idx[_kept_words(problem, cand, idx, c) > usable[c]]
            if not idx.size:
                break
            cand.temporal[idx, c - 1] *= moved[idx, c]
            moved[idx, c] = 1


def _valid(problem: Problem, arch: Architecture, cand: MappingBatch) -> np.ndarray:
    ok = np.ones(len(cand), bool)
    for li, lv in enumerate(arch.levels):
        ok &= cand.spatial_x[:, li].prod(axis=1) <= lv.fanout_x
        ok &= cand.spatial_y[:, li].prod(axis=1) <= lv.fanout_y
    words = np.where(cand.keep, tile_words(problem, cand.temporal, cand.spatial_x, cand.spatial_y), 0).sum(axis=2)  # [B, L]
    return ok & (words <= _usable(arch)[None, :]).all(axis=1)


def _take(batch: MappingBatch, idx: np.ndarray) -> MappingBatch:
    return MappingBatch(batch.temporal[idx], batch.spatial_x[idx], batch.spatial_y[idx], batch.order[idx],
                        batch.keep[idx])


ROUND_MAX = 2**18
"""Candidates drawn per round at most: a round's temporaries take about 2 KB per candidate, so a
large ``n`` is drawn in rounds of about half a gigabyte (10^7 mappings in one round took 45 GB)."""


def random_mappings(problem: Problem, arch: Architecture, n: int, seed: int = 0, bypass_p: float = 0.2,
                    max_rounds: int = 200) -> MappingBatch:
    """``n`` random valid mappings (a MappingBatch); raises RuntimeError if too few are valid within
    ``max_rounds`` rounds per ``ROUND_MAX`` mappings asked for."""
    from costmodel.arch import as_architecture

    problem, arch = expect_problem(problem), as_architecture(arch)
    if as_int(n) is None or n < 0:
        raise ValueError(f"random_mappings: n must be an integer >= 0, got {n!r}")
    if isinstance(bypass_p, bool) or not isinstance(bypass_p, numbers.Real) or not 0 <= bypass_p <= 1:
        raise ValueError(f"random_mappings: bypass_p must be a probability in [0, 1], got {bypass_p!r}")
    if as_int(seed) is None or seed < 0:
        raise ValueError(f"random_mappings: seed must be an integer >= 0, got {seed!r}")
    if as_int(max_rounds) is None or max_rounds < 1:
        raise ValueError(f"random_mappings: max_rounds must be an integer >= 1, got {max_rounds!r}")
    rng = np.random.default_rng(seed)
    parts: list[MappingBatch] = []
    have = 0
    for _ in range(max_rounds * (1 + n // ROUND_MAX)):
        cand = _candidates(problem, arch, min(max(2 * (n - have), 256), ROUND_MAX), rng, bypass_p)
        _repair(problem, arch, cand)
        idx = np.nonzero(_valid(problem, arch, cand))[0][: n - have]
        parts.append(_take(cand, idx))  # (n = 0: one empty part, so the batch has the right shape)
        have += idx.size
        if have >= n:
            break
    else:
        raise RuntimeError(f"only {have} of {n} random mappings of {problem.describe()} on {arch.name} were valid")
    return MappingBatch(*(batch_last(np.concatenate([getattr(p, f) for p in parts]))
                          for f in ("temporal", "spatial_x", "spatial_y", "order", "keep")))
