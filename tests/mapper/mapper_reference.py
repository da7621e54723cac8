"""Plain, unpruned enumeration: the reference the exhaustive mapper must match.

Written independently of dse.mapspace: every way to give each prime factor of each dimension to a
slot (deduplicated into factor tuples by a set), every permutation, at every level, of that level's loops of bound above 1 (a loop of
bound 1 executes once wherever it is written, so those are placed outermost), every keep choice the config's ``holds`` allow; validity by the rules of
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
    choices = [[True] if li == 0 else ([True, False] if t.name in lv.holds else [False])
               for li, lv in enumerate(arch.levels) for t in problem.tensors]
    keeps = np.array(list(itertools.product(*choices)), bool).reshape(-1, n_lv, len(problem.tensors))
    usable = np.array([np.iinfo(np.int64).max if lv.capacity_words is None else
                       (lv.capacity_words // 2 if lv.double_buffered else lv.capacity_words)
                       for lv in arch.levels])
    pending: list[np.ndarray] = []
    count = 0
    for ti in range(len(tilings)):
        f = tilings[ti]
        ranks = _orders(f[0])  # [n_o, L, D]
        probe = MappingBatch(*(np.repeat(f[None, k], len(keeps), axis=0) for k in range(3)),
                             np.zeros((len(keeps), n_lv, len(dims)), np.int64), keeps)
        need = np.where(keeps, tile_words(problem, probe.temporal, probe.spatial_x, probe.spatial_y), 0).sum(axis=2)
        for ki in np.nonzero((need <= usable).all(axis=1))[0]:
            for o in ranks:
                pending.append((f, o, keeps[ki]))
                count += 1
        if count >= chunk:
            yield _eval(problem, arch, pending)
            pending, count = [], 0
    if pending:
        yield _eval(problem, arch, pending)


def _orders(temporal: np.ndarray) -> np.ndarray:
    """Every combination of per-level permutations of the loops of bound > 1, as ranks [n, L, D]."""
    n_lv, n_d = temporal.shape
    per_level = []
    for li in range(n_lv):
        big = [d for d in range(n_d) if temporal[li, d] > 1]
        ones = [d for d in range(n_d) if temporal[li, d] == 1]
        per_level.append([np.argsort(ones + list(p)) for p in itertools.permutations(big)])
    return np.array([np.stack(c) for c in itertools.product(*per_level)])


def _eval(problem, arch, pending):
    f = np.stack([p[0] for p in pending])
    batch = MappingBatch(f[:, 0], f[:, 1], f[:, 2], np.stack([p[1] for p in pending]),
                         np.stack([p[2] for p in pending]))
    return batch, evaluate_batch(problem, arch, batch)


def honours_constraints(problem, arch, batch) -> np.ndarray:
    """[B] bool: mappings that obey ``arch.constraints`` (the hwconfig's dataflow constraints), checked
    directly on the factors and keeps; dims the layer lacks are ignored, and an allowed-dims list
    naming none of the layer's constrains nothing (docs/hwconfig.md). Fixed loop orders are not
    supported here (no shipped config uses them)."""
    dims = list(problem.dim_names)
    tensors = [t.name for t in problem.tensors]
    names = [lv.name for lv in arch.levels]
    ok = np.ones(len(batch), bool)
    for c in arch.constraints or ():
        li = names.index(c.level)
        assert not c.order, "order constraints are not supported by the reference"
        for spec, f in ((c.spatial_x, batch.spatial_x), (c.spatial_y, batch.spatial_y)):
            if spec is None or (len(spec) and not any(d in dims for d in spec)):
                continue
            fixed = spec if isinstance(spec, dict) else {}
            for di, d in enumerate(dims):
                if d not in spec:
                    ok &= f[:, li, di] == 1
                elif d in fixed:
                    ok &= f[:, li, di] == fixed[d]
        for d, v in (c.temporal or {}).items():
            if d in dims:
                ok &= batch.temporal[:, li, dims.index(d)] == v
        for t in c.bypass or ():
            ok &= ~batch.keep[:, li, tensors.index(t)]
        for t in c.keep or ():
            ok &= batch.keep[:, li, tensors.index(t)]
    return ok
