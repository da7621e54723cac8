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
(sliding-window) axes use the exact tables of costmodel.tiles. Arrays keep the batch axis last.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.problem import Problem
from costmodel.tiles import (
    Axis,
    Geometry,
    Shape,
    merged_stats,
    shape_of,
    sumset_sizes,
    tile_words,
    window_table,
)


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


class _Batch:
    """Arrays shared by every tensor's links, [.., D, B]."""

    def __init__(self, batch, shape: Shape, arch) -> None:
        geo = Geometry.of(batch, shape)
        idx = list(shape.active)
        # loop ranks are a permutation of all dims per level (CONTRACTS.md); dropped dims have
        # factor 1, so the ranks of the active ones keep the order and the products
        rank_all = batch.order.transpose(1, 2, 0)
        d_all = rank_all.shape[1]
        # ranks in range everywhere, and a full permutation check on a sample (a full sort costs
        # as much as the rest of the setup)
        if rank_all.size and (rank_all.min() < 0 or rank_all.max() >= d_all or (
                np.sort(rank_all[:, :, :1024], axis=1) != np.arange(d_all)[None, :, None]).any()):
            raise ValueError("MappingBatch.order: ranks must be a permutation of 0..D-1 per level")
        rank = np.ascontiguousarray(rank_all[:, idx])
        t = geo.t
        n_lv, d, b = t.shape
        self.geo, self.t, self.rank, self.xy = geo, t, rank, geo.xy
        self.n_above = np.ones((n_lv + 1, b), np.int64)
        self.sp_above = np.ones((n_lv + 1, b), np.int64)
        for m in range(n_lv):
            self.n_above[m + 1] = self.n_above[m] * t[m].prod(axis=0)
            self.sp_above[m + 1] = self.sp_above[m] * geo.xy[m].prod(axis=0)
        within = np.ones_like(t)  # product of the factors of the loops outer to each, same level
        for e in range(d):
            within *= np.where(rank[:, e][:, None, :] < rank, t[:, e][:, None, :], 1)
        self.wts = self.n_above[:n_lv, None, :] * within * (t - 1)  # steps at which a loop advances
        self.pos = np.arange(n_lv)[:, None, None] * d_all + rank  # nest position of each temporal loop
        self.w_t = geo.w[0::3]  # place value of each temporal loop
        self.r_cum = np.zeros((n_lv + 1, d, b), np.int64)  # prefix of (f-1)*w over temporal loops
        for m in range(n_lv):
            self.r_cum[m + 1] = self.r_cum[m] + (t[m] - 1) * self.w_t[m]
        # networks whose fan-out is 1 merge nothing: leaving them out makes equal merge sets equal
        fan = [lv.fanout_x * lv.fanout_y > 1 for lv in arch.levels]
        self.flags = {
            "mc": [lv.multicast and f for lv, f in zip(arch.levels, fan)],
            "red": [lv.spatial_reduction and f for lv, f in zip(arch.levels, fan)],
        }
        self._xy_above: dict[int, np.ndarray] = {}

    def xy_over(self, nets: tuple[int, ...]) -> np.ndarray | None:
        """[D, B] product of the spatial factors of networks ``nets`` (None when there are none)."""
        if not nets:
            return None
        out = self.xy[nets[0]]
        for m in nets[1:]:
            out = out * self.xy[m]
        return out

    def xy_above(self, c: int) -> np.ndarray:
        if c not in self._xy_above:
            self._xy_above[c] = self.xy_over(tuple(range(c))) if c else np.ones_like(self.xy[0])
        return self._xy_above[c]


def _shifts(bt: _Batch, ax: Axis, c: int, free: list[int]) -> np.ndarray:
    """Δ of a multi-term axis when temporal loop (level m < c, dim free[k]) advances: [c, K, B]."""
    rk = bt.rank[:c]
    rk_free = rk[:, free]
    total = np.zeros((c, len(free), rk.shape[2]), np.int64)
    for coef, e in ax.terms:
        # loops of e at levels between the advancing loop's and c wrap to 0 ...
        reset_below = coef * (bt.r_cum[1:c + 1, e] - bt.r_cum[c, e])
        total += reset_below[:, None, :]
        # ... and so does e's loop at the same level when it is inner to the advancing loop
        reset_here = coef * (bt.t[:c, e] - 1) * bt.w_t[:c, e]
        total -= np.where(rk[:, e][:, None, :] > rk_free, reset_here[:, None, :], 0)
        if e in free:
            total[:, free.index(e)] += coef * bt.w_t[:c, e]  # the advancing loop itself
    return total


class _Link:
    """Counts for one tensor and one child level c (c = L: the MACs), for every parent."""

    def __init__(self, shape: Shape, bt: _Batch, axes: tuple[Axis, ...], c: int, timeloop: bool) -> None:
        self.bt, self.c, self.sizes, self.timeloop = bt, c, shape.sizes, timeloop
        self.used = sorted({e for ax in axes for _, e in ax.terms})
        self.mac = c == bt.t.shape[0]
        self.st = [ax.terms[0][1] for ax in axes if ax.single]
        self.mt = [ax for ax in axes if not ax.single]
        self.ext = bt.geo.extent(c)
        self.tables = [window_table(ax, self.sizes) for ax in self.mt]
        self.rows0 = [tab.row(self.ext) for tab in self.tables]
        b = self.ext.shape[1]
        self.u_tile = np.ones(b, np.int64)  # |tile| of the child, multi-term axes
        for tab, row in zip(self.tables, self.rows0):
            self.u_tile = self.u_tile * tab.size[row]
        self._cache: dict[tuple, np.ndarray] = {}
        if self.mac:
            return
        st_mask = np.zeros(bt.t.shape[1], bool)
        st_mask[self.st] = True
        js = np.where((bt.t[:c] > 1) & st_mask[None, :, None], bt.pos[:c], -1).max(axis=(0, 1), initial=-1)
        # only steps after the innermost advancing loop of a single-term dimension can reuse, and
        # those loops are on the other dimensions
        free = [e for e in range(bt.t.shape[1]) if e not in self.st]
        self.after = np.where(bt.pos[:c, free] > js[None, None, :], bt.wts[:c, free], 0)
        self.shift = [_shifts(bt, ax, c, free) for ax in self.mt]
        if timeloop and self.mt:
            # Timeloop slides a window only under the innermost nontrivial loop; elsewhere a
            # moved tile is refetched whole
            last = np.where(bt.t[:c] > 1, bt.pos[:c], -1).max(axis=(0, 1), initial=-1)
            still = np.ones(self.after.shape, bool)
            for sh in self.shift:
                still &= sh == 0
            self.after = np.where(still | (bt.pos[:c, free] == last[None, None, :]), self.after, 0)
        self.s0 = self._reused(None, {}) if self.mt else self.after.sum(axis=(0, 1))

    def _reused(self, rows: np.ndarray | None, over: dict) -> np.ndarray:
        """Σ over steps of Π over multi-term axes of Stab(Δ), for ``rows`` (None: all); ``over[k]``
        = (distinct Stab rows, index per row) replaces axis k's unmerged table."""
        sel = slice(None) if rows is None else rows
        prod = self.after[:, :, sel]
        for k, (tab, row0, sh) in enumerate(zip(self.tables, self.rows0, self.shift)):
            idx = np.clip(sh[:, :, sel], -tab.span, tab.span)
            width = 2 * tab.span + 1
            if k in over:
                srows, inv = over[k]
                idx += (inv * width + tab.span)[None, None, :]
                prod = prod * srows.ravel().take(idx)
            else:
                idx += (row0[sel] * width + tab.span)[None, None, :]
                prod = prod * tab.overlap.ravel().take(idx)
        return prod.sum(axis=(0, 1))

    def entries(self, kind: str, q: int) -> np.ndarray:
        """entries for merging over the ``kind``-flagged networks q..c-1."""
        nets = tuple(m for m in range(q, self.c) if self.bt.flags[kind][m])
        key = ("e", nets)
        if key in self._cache:
            return self._cache[key]
        bt, c = self.bt, self.c
        mf = self._merge_factors(nets)
        groups = bt.sp_above[c] if mf is None else bt.sp_above[c] // mf.prod(axis=0)
        u_st = np.ones_like(groups)
        for e in self.st:
            u_st = u_st * self.ext[e] if mf is None else u_st * self.ext[e] * mf[e]
        u_mt = self.u_tile
        s = None if self.mac else self.s0
        if mf is not None and self.mt:
            u_mt = u_mt.copy()
            over: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            # rows whose merged children split a window dimension: exact tables per digit pattern
            window_dims = sorted({e for ax in self.mt for _, e in ax.terms})
            rows = np.nonzero((mf[window_dims] > 1).any(axis=0))[0]
            if rows.size:
                for k, ax in enumerate(self.mt):
                    usz, srows, inv = merged_stats(tuple(cf for cf, _ in ax.terms), ax.extent,
                                                   self._key(ax, nets, rows))
                    u_mt[rows] = u_mt[rows] // self.tables[k].size[self.rows0[k][rows]] * usz
                    over[k] = (srows, inv)
                if not self.mac:
                    s = s.copy()
                    s[rows] = self._reused(rows, over)
        if self.mac:
            out = groups * bt.n_above[c] * u_st * u_mt
        else:
            out = groups * u_st * (bt.n_above[c] * u_mt - s)
        self._cache[key] = out
        return out

    def _merge_factors(self, nets: tuple[int, ...]) -> np.ndarray | None:
        """[D, B] spatial factors merged per dim; Timeloop's model merges only identical tiles,
        i.e. digits of dimensions this tensor does not use."""
        mf = self.bt.xy_over(nets)
        if mf is not None and self.timeloop and self.used:
            mf = mf.copy()
            mf[self.used] = 1
        return mf

    def _key(self, ax: Axis, nets: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
        """Per row: for each term its tile extent and (w, f) of its merged spatial digits."""
        geo, cols = self.bt.geo, []
        for _, e in ax.terms:
            cols.append(self.ext[e, rows])
            for m in nets:
                for s in (3 * m + 1, 3 * m + 2):
                    f = geo.f[s, e, rows]
                    cols += [np.where(f > 1, geo.w[s, e, rows], 0), f]
        return np.stack(cols, axis=1)

    def distinct(self, kind: str, q: int) -> np.ndarray:
        """Elements ever held per merged group, summed over groups."""
        nets = tuple(m for m in range(q, self.c) if self.bt.flags[kind][m])
        key = ("d", nets)
        if key in self._cache:
            return self._cache[key]
        bt, c = self.bt, self.c
        mf = self._merge_factors(nets)
        mf = np.ones_like(bt.xy[0]) if mf is None else mf
        out = bt.sp_above[c] // mf.prod(axis=0)
        above = bt.xy_above(c)
        for e in self.st:
            out = out * (self.sizes[e] // (above[e] // mf[e]))
        geo = bt.geo
        for ax in self.mt:
            cols = []
            for _, e in ax.terms:
                for s in range(geo.f.shape[0]):
                    m, kind_s = divmod(s, 3)
                    if kind_s == 0 or m >= c or (m in nets and not self.timeloop):
                        f = geo.f[s, e]
                        cols += [np.where(f > 1, geo.w[s, e], 0), f]
            out = out * sumset_sizes(tuple(cf for cf, _ in ax.terms), np.stack(cols, axis=1))
        self._cache[key] = out
        return out


def access_counts(problem: Problem, arch, batch, model: str = "exact") -> Accesses:
    """Fills, reads, updates and hops of every level and tensor for every mapping of ``batch``.

    ``model="timeloop"`` applies Timeloop's two approximations instead of exact sets (see
    docs/semantics.md): windows slide only under the innermost nontrivial loop, and multicast /
    reduction merge only identical tiles. Used to reproduce Timeloop's numbers."""
    if model not in ("exact", "timeloop"):
        raise ValueError(f"access_counts: model must be 'exact' or 'timeloop', got {model!r}")
    shape = shape_of(problem)
    bt = _Batch(batch, shape, arch)
    n_lv, _, b = bt.t.shape
    n_t = len(problem.tensors)
    fills, reads, updates, hops = (np.zeros((n_lv, n_t, b), np.int64) for _ in range(4))
    keep_all = np.ascontiguousarray(batch.keep.transpose(1, 2, 0))
    keep_all[0] = True
    lv_idx = np.arange(n_lv)
    for ti, axes in enumerate(shape.axes):
        is_out = problem.tensors[ti].is_output
        keep = keep_all[:, ti]
        last_keep = np.maximum.accumulate(np.where(keep, lv_idx[:, None], 0), axis=0)
        for c in range(1, n_lv + 1):
            exists = keep[c] if c < n_lv else np.ones(b, bool)
            if not exists.any():
                continue
            parent = last_keep[c - 1]
            link = _Link(shape, bt, axes, c, model == "timeloop")
            q0 = int(parent[exists].min())

            def down(q: int, link: _Link = link, is_out: bool = is_out) -> np.ndarray:
                if is_out:
                    return link.entries("mc", q) - link.distinct("mc", q)
                return link.entries("mc", q)

            if c < n_lv:
                fills[c, ti] += np.where(exists, down(c), 0)
            for q in range(q0, c):
                here = exists & (parent == q)
                if here.any():
                    reads[q, ti] += np.where(here, down(q), 0)
                    if is_out:
                        updates[q, ti] += np.where(here, link.entries("red", q), 0)
                below = exists & (parent <= q)
                if below.any():
                    moved = down(q + 1) + (link.entries("red", q + 1) if is_out else 0)
                    hops[q, ti] += np.where(below, moved, 0)
    words = tile_words(problem, batch, bt.geo)
    return Accesses(
        fills=fills.transpose(2, 0, 1), reads=reads.transpose(2, 0, 1), updates=updates.transpose(2, 0, 1),
        hops=hops.transpose(2, 0, 1), tile_words=np.where(keep_all.transpose(2, 0, 1), words, 0),
        macs=np.full(b, problem.macs, np.int64), temporal_steps=bt.t.prod(axis=(0, 1)),
    )
