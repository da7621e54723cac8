"""Exact access counts of a batch of mappings, in closed form over the batch axis.

The semantics (docs/semantics.md) are those of the brute-force walker in
tests/costmodel/bruteforce.py, which this equals exactly. For each tensor, each pair of
consecutive levels that keep it (parent p, child c; the MACs are the last child, c = L) is a
*link*; every count is a sum over links of two quantities:

- ``entries``: over the steps of the temporal loops above c, the new elements of the child
  instances, where instances differing only in spatial digits of some networks between p and c
  (those with multicast, or with spatial reduction) are merged (needed at once: counted once);
- ``distinct``: elements each merged group ever holds (the reads skipped as never written).

Per step, with loop i the innermost one that advanced, the tiles move by a shift Δ_i per axis;
new elements = |U| - Π_axes Stab_axis(Δ_i) (U: merged tile; Stab: elements every covering child
already had). A single-term axis gives Stab = |U| if it did not move, else 0; multi-term
(sliding-window) axes use the exact tables of costmodel.tiles (and, for merged children, the
enumerations the kernel memoizes). The closed forms run in costmodel.count_kernel, one mapping at
a time; this module builds what the kernel reads of a (problem, config) pair once per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel import batch_check
from costmodel.mapping import batch_inner
from costmodel.plans import plan_for
from costmodel.problem import Problem
from costmodel.tiles import packed_tables


@dataclass
class Accesses:
    """Totals over all instances of each level, [B, L, T] int64 (see CONTRACTS.md)."""

    fills: np.ndarray
    reads: np.ndarray
    updates: np.ndarray
    hops: np.ndarray
    tile_words: np.ndarray
    macs: np.ndarray
    temporal_steps: np.ndarray

    @property
    def writes(self) -> np.ndarray:
        return self.fills + self.updates


def access_counts(problem: Problem, arch, batch, model: str = "exact", *, check: bool = True) -> Accesses:
    """Fills, reads, updates and hops of every level and tensor for every mapping of ``batch``.

    ``model="timeloop"`` applies Timeloop's two approximations instead of exact sets (see
    docs/semantics.md): windows slide only under the innermost nontrivial loop, and multicast /
    reduction merge only identical tiles. Used to reproduce Timeloop's numbers."""
    stage = CountStage(problem, arch, batch, model, check=check)
    stage.run(0, len(batch))
    return stage.acc


class CountStage:
    """The access counts of one batch, computed a range of mappings at a time: ``acc`` holds them,
    row ``i`` once a :meth:`run` has covered ``i``. Why ranges: ``evaluate_batch`` takes the batch
    in chunks through counts, latency and energy, so that the later stages read a chunk's counts
    from cache instead of memory."""

    def __init__(self, problem: Problem, arch, batch, model: str = "exact", *, check: bool = True) -> None:
        from costmodel import count_kernel

        if model not in ("exact", "timeloop"):
            raise ValueError(f"access_counts: model must be 'exact' or 'timeloop', got {model!r}")
        self.plan = plan_for(_Plan, problem, arch)
        self.batch, self.timeloop = batch, model == "timeloop"
        b, n_lv, n_d = batch.temporal.shape
        n_t = len(problem.tensors)
        if (n_lv, n_d, batch.keep.shape[2]) != (len(arch.levels), len(problem.dims), n_t):
            raise ValueError(f"MappingBatch: arrays for {n_lv} levels, {n_d} dims and {batch.keep.shape[2]} "
                             f"tensors, but {arch.name} has {len(arch.levels)} levels and the problem "
                             f"{len(problem.dims)} dims and {n_t} tensors")
        self.problem, self.arch = problem, arch
        self.check = batch_check.tables(problem, arch) if check else None
        self.out = [np.empty((n_lv, n_t, b), np.int64) for _ in range(5)]  # fills reads updates hops words
        self.steps = np.empty(b, np.int64)
        self.tags = count_kernel.shape_tags(len(self.plan.packed[0]), n_t)
        fills, reads, updates, hops, words = (a.transpose(2, 0, 1) for a in self.out)
        self.acc = Accesses(fills=fills, reads=reads, updates=updates, hops=hops, tile_words=words,
                            macs=np.full(b, problem.macs, np.int64), temporal_steps=self.steps)

    def run(self, lo: int, hi: int) -> None:
        """Counts mappings lo..hi-1 (growing the plan's memo whenever the kernel finds it full).
        Unless the stage was made with ``check=False``, they are checked first (costmodel.batch_check;
        the check also brings them into cache)."""
        from costmodel import count_kernel

        bt, pk, memo = self.batch, self.plan.packed, self.plan.memo
        views = (batch_inner(a) for a in (bt.temporal, bt.spatial_x, bt.spatial_y, bt.order, bt.keep))
        bad = batch_check.first_bad_mapping(*views, *self.check, lo, hi) if self.check is not None else -1
        if bad >= 0:
            raise ValueError(f"MappingBatch: mapping {bad}: {batch_check.why(bt, bad, self.problem, self.arch)}")
        while lo < hi:
            lo = count_kernel.count_batch(bt.temporal, bt.spatial_x, bt.spatial_y, bt.order, bt.keep, self.timeloop,
                                          *pk, *memo.arrays(), lo, hi, *self.out, self.steps, *self.tags)
            if lo < hi:
                memo.grow()


class _Memo:
    """The kernel's memo of window statistics for one plan (see costmodel.count_kernel): an
    open-addressing table of ``slots`` [cap, 3] (hash, key offset or -1, entry), the keys, the
    entries [n, 2] (a size, and for merged tiles the offset of their stability row in ``rows``)
    and ``fill`` (entries, key words and row words used; then the key and row words a full table
    lacked room for)."""

    def __init__(self) -> None:
        self.slots = np.full((1024, 3), -1, np.int64)
        self.keys = np.zeros(16384, np.int64)
        self.ent = np.zeros((512, 2), np.int64)
        self.rows = np.zeros(65536, np.int64)
        self.fill = np.zeros(5, np.int64)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return self.slots, self.keys, self.ent, self.rows, self.fill

    def grow(self) -> None:
        """Grows the tables that were full when the kernel stopped: the slots and entries double
        once they hold no room for one more, the keys and rows double until they hold what was
        needed (doubling every table at each stop took gigabytes for one window's long row)."""
        from costmodel.count_kernel import rehash

        entries, need_keys, need_rows = int(self.fill[0]), int(self.fill[3]), int(self.fill[4])
        before = self.arrays()
        if 2 * (entries + 1) > len(self.slots):
            self.slots = rehash(self.slots, 2 * len(self.slots))
        if entries >= len(self.ent):
            self.ent = np.concatenate([self.ent, np.zeros_like(self.ent)])
        self.keys, self.rows = (_doubled_to(a, need) for a, need in ((self.keys, need_keys), (self.rows, need_rows)))
        self.fill[3:] = 0
        if all(a is b for a, b in zip(before, self.arrays())):  # the kernel would stop there again
            raise AssertionError("count kernel stopped for room, but no memo table was full")


def _doubled_to(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` with zeros after it, doubled until it holds ``size`` words (``a`` itself if it does)."""
    n = len(a)
    while n < size:
        n *= 2
    return a if n == len(a) else np.concatenate([a, np.zeros(n - len(a), a.dtype)])


class _Plan:
    """What counting needs of a (problem, arch) pair but not of the batch, built once per pair
    and packed into the arrays the kernel reads (``packed``, in costmodel.count_kernel.count's
    order), with the pair's memo of window statistics: the mappers evaluate one pair many times
    in small batches."""

    def __init__(self, problem: Problem, arch) -> None:
        t = packed_tables(problem)
        # networks whose fan-out is 1 merge nothing: leaving them out makes equal merge sets equal
        fan = [lv.fanout > 1 for lv in arch.levels]
        flags = np.array([[lv.multicast and f for lv, f in zip(arch.levels, fan)],
                          [lv.spatial_reduction and f for lv, f in zip(arch.levels, fan)], fan], np.int64)
        if 3 + t.ax_coef.shape[2] * (2 + 6 * len(arch.levels)) > 1024:  # the kernel's longest memo key
            raise ValueError(f"{len(arch.levels)} levels: too many for the counting kernel's memo keys")
        self.packed = (t.idx, flags, t.tinfo, t.tdims, t.ax_n, t.ax_coef, t.ax_dim, t.ax_span, t.tsize,
                       t.tsize_off, t.tover, t.tover_off, t.lk, t.lk_off, t.radix)
        self.memo = _Memo()
