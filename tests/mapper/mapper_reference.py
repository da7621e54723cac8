"""Plain, unpruned enumeration: the reference the exhaustive mapper must match.

Written independently of dse.mapspace: every way to give each prime factor of each dimension to a
slot (deduplicated into factor tuples by a set), every permutation of the layer's dimensions of
size above 1 at every level (a dimension of size 1 is a loop of bound 1 everywhere: it executes once
wherever it is written, so it is placed outermost), every keep choice the config's ``holds`` allow; validity by the rules of
``Mapping.validate`` (fan-outs, capacity from costmodel.tiles.tile_words, half when
double-buffered). Exponential: for tiny layers and configs only.
"""

from __future__ import annotations

import itertools

import numpy as np

from costmodel.evaluate import evaluate_batch
from costmodel.mapping import MappingBatch
from costmodel.tiles import tile_words


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def _splits(n: int, slots: int) -> list[tuple[int, ...]]:
    found = set()
    ps = _primes(n)
    for assign in itertools.product(range(slots), repeat=len(ps)):
        f = [1] * slots
        for p, s in zip(ps, assign):
            f[s] *= p
        found.add(tuple(f))
    return sorted(found)


def enumerate_all(problem, arch, chunk: int = 20000):
    """Yield (MappingBatch, BatchEvaluation) over every valid mapping."""
    n_lv, dims = len(arch.levels), problem.dim_names
    slots = [(li, k) for li, lv in enumerate(arch.levels) for k, cap in ((0, 2), (1, lv.fanout_x), (2, lv.fanout_y))
             if k == 0 or cap > 1]
    per_dim = [_splits(n, len(slots)) for _, n in problem.dims]
    tilings = []
    for combo in itertools.product(*per_dim):
        f = np.ones((3, n_lv, len(dims)), np.int64)
        for di, split in enumerate(combo):
            for (li, k), v in zip(slots, split):
                f[k, li, di] = v
        if all(f[1, li].prod() <= lv.fanout_x and f[2, li].prod() <= lv.fanout_y
               for li, lv in enumerate(arch.levels)):
            tilings.append(f)
    tilings = np.array(tilings)
    big = [di for di, (_, n) in enumerate(problem.dims) if n > 1]
    ones = [di for di, (_, n) in enumerate(problem.dims) if n == 1]
    perms = np.array([ones + list(p) for p in itertools.permutations(big)])
    ranks = np.argsort(perms, axis=1)
    order_combos = np.array(list(itertools.product(range(len(perms)), repeat=n_lv)))
    choices = [[True] if li == 0 else ([True, False] if t.name in lv.holds else [False])
               for li, lv in enumerate(arch.levels) for t in problem.tensors]
    keeps = np.array(list(itertools.product(*choices)), bool).reshape(-1, n_lv, len(problem.tensors))
    usable = np.array([np.iinfo(np.int64).max if lv.capacity_words is None else
                       (lv.capacity_words // 2 if lv.double_buffered else lv.capacity_words)
                       for lv in arch.levels])
    grid = itertools.product(range(len(tilings)), range(len(keeps)))
    pending = []
    for ti, ki in grid:
        pending.append((ti, ki))
        if len(pending) * len(order_combos) >= chunk:
            yield from _eval(problem, arch, tilings, keeps, ranks, order_combos, usable, pending)
            pending = []
    if pending:
        yield from _eval(problem, arch, tilings, keeps, ranks, order_combos, usable, pending)


def _eval(problem, arch, tilings, keeps, ranks, order_combos, usable, pending):
    ti = np.array([p[0] for p in pending])
    ki = np.array([p[1] for p in pending])
    f = tilings[ti]
    probe = MappingBatch(f[:, 0], f[:, 1], f[:, 2], np.zeros_like(f[:, 0]), keeps[ki])
    need = np.where(keeps[ki], tile_words(problem, probe), 0).sum(axis=2)
    ok = (need <= usable).all(axis=1)
    ti, ki = ti[ok], ki[ok]
    if ti.size == 0:
        return
    n_o = len(order_combos)
    t_idx, k_idx = np.repeat(ti, n_o), np.repeat(ki, n_o)
    o = ranks[order_combos]  # [n_o, L, D]
    f = tilings[t_idx]
    batch = MappingBatch(f[:, 0], f[:, 1], f[:, 2], np.tile(o, (len(ti), 1, 1)), keeps[k_idx])
    yield batch, evaluate_batch(problem, arch, batch)
