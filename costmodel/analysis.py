"""Exact access counts of a batch of mappings, in closed form over the batch axis.

The semantics (docs/semantics.md) are those of the brute-force walker in
tests/costmodel/bruteforce.py, which this must equal exactly. For each tensor, each pair of
consecutive levels that keep it (parent p, child c; the MACs are the last child, c = L) is a
*link*; everything is a sum over links of two counts:

- ``entries(q)``: over the steps of the temporal loops above c, the new elements of the child
  instances, where instances differing only in the spatial digits of networks q..c-1 that have
  the flag (multicast, or spatial reduction) are merged (needed at once → counted once);
- ``distinct(q)``: elements each merged group ever holds (the reads skipped as never written).

Per step, with loop i the innermost one that advanced, the tile moves by a shift Δ_i per axis;
new elements = |U| - Π_axes Stab_axis(Δ_i) (U: merged tile; Stab: elements every covering child
already had). Single-term axes give Stab = |U| if the axis did not move, else 0; multi-term
(sliding-window) axes use the exact tables of costmodel.tiles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.problem import Problem
from costmodel.tiles import Axis, Geometry, merged_stats, sumset_sizes, tensor_axes, tile_words, window_table


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


@dataclass
class _Batch:
    """Arrays shared by every tensor's links."""

    t: np.ndarray  # temporal factors [B, L, D]
    xy: np.ndarray  # spatial X*Y per level and dim [B, L, D]
    geo: Geometry
    wts: np.ndarray  # steps at which each temporal loop advances [B, L, D]
    pos: np.ndarray  # nest position of each temporal loop [B, L, D]
    w_t: np.ndarray  # place value of each temporal loop [B, L, D]
    r_cum: np.ndarray  # prefix over levels of (f-1)*w of temporal loops [B, L+1, D]
    rank: np.ndarray
    n_above: np.ndarray  # product of temporal factors of levels < c [B, L+1]
    sp_above: np.ndarray  # product of spatial factors of networks < c [B, L+1]


def _prepare(batch) -> _Batch:
    t, rank = batch.temporal, batch.order
    b, n_lv, d = t.shape
    geo = Geometry.of(t, batch.spatial_x, batch.spatial_y)
    lvl = t.prod(axis=2)
    n_above = np.ones((b, n_lv + 1), np.int64)
    n_above[:, 1:] = np.cumprod(lvl, axis=1)
    perm = np.argsort(rank, axis=2, kind="stable")
    ts = np.take_along_axis(t, perm, axis=2)
    cum = np.ones_like(ts)
    cum[:, :, 1:] = np.cumprod(ts[:, :, :-1], axis=2)
    within = np.take_along_axis(cum, rank, axis=2)
    wts = n_above[:, :n_lv, None] * within * (t - 1)
    pos = np.arange(n_lv)[None, :, None] * d + rank
    w_t = geo.w[:, :, 0::3].transpose(0, 2, 1)
    r_cum = np.zeros((b, n_lv + 1, d), np.int64)
    r_cum[:, 1:] = np.cumsum((t - 1) * w_t, axis=1)
    xy = batch.spatial_x * batch.spatial_y
    sp_above = np.ones((b, n_lv + 1), np.int64)
    sp_above[:, 1:] = np.cumprod(xy.prod(axis=2), axis=1)
    return _Batch(t, xy, geo, wts, pos, w_t, r_cum, rank, n_above, sp_above)


def _shifts(bt: _Batch, ax: Axis, c: int) -> np.ndarray:
    """Δ of a multi-term axis when temporal loop (m < c, dim e0) advances: [B, c, D]."""
    d = bt.t.shape[2]
    eye = np.eye(d, dtype=bool)
    total = np.zeros(bt.t[:, :c].shape, np.int64)
    for coef, e in ax.terms:
        rk = bt.rank[:, :c]
        own = np.where(eye[e][None, None, :], bt.w_t[:, :c, e][:, :, None], 0)
        later = (rk[:, :, e][:, :, None] > rk) & ~eye[e][None, None, :]
        reset_here = np.where(later, ((bt.t[:, :c, e] - 1) * bt.w_t[:, :c, e])[:, :, None], 0)
        reset_below = (bt.r_cum[:, c, e][:, None] - bt.r_cum[:, 1:c + 1, e])[:, :, None]
        total += coef * (own - reset_here - reset_below)
    return total


def _merged_key(bt: _Batch, ax: Axis, c: int, merged_lv: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Key rows [N, terms*(1+4L)]: per term its tile extent and (w, f) of merged spatial digits."""
    n_lv = bt.t.shape[1]
    cols = []
    ext = bt.geo.extent(c)[rows]
    for _, e in ax.terms:
        cols.append(ext[:, e][:, None])
        for m in range(n_lv):
            for s in (3 * m + 1, 3 * m + 2):
                f = bt.geo.f[rows, e, s]
                on = merged_lv[m] & (f > 1)
                cols.append(np.where(on, bt.geo.w[rows, e, s], 0)[:, None])
                cols.append(np.where(on, f, 1)[:, None])
    return np.concatenate(cols, axis=1)


class _Link:
    """Counts for one tensor and one child level c, for every possible parent."""

    def __init__(self, problem: Problem, bt: _Batch, axes: list[Axis], c: int) -> None:
        self.bt, self.axes, self.c = bt, axes, c
        self.mac = c == bt.t.shape[1]
        self.sizes = tuple(n for _, n in problem.dims)
        self.st = [ax.terms[0][1] for ax in axes if ax.single]
        self.mt = [ax for ax in axes if not ax.single]
        self.ext = bt.geo.extent(c)
        self.tables = [window_table(ax, self.sizes) for ax in self.mt]
        self.rows0 = [tab.row(self.ext) for tab in self.tables]
        self.u0 = np.ones(len(bt.t), np.int64)
        for tab, row in zip(self.tables, self.rows0):
            self.u0 = self.u0 * tab.size[row]
        if self.mac:
            return
        st_mask = np.zeros(bt.t.shape[2], bool)
        st_mask[self.st] = True
        tc = bt.t[:, :c]
        js = np.where((tc > 1) & st_mask, bt.pos[:, :c], -1).max(axis=(1, 2))
        # steps after the innermost advancing loop of a single-term dimension: only these can reuse
        self.after = np.where(bt.pos[:, :c] > js[:, None, None], bt.wts[:, :c], 0)
        self.shift = [_shifts(bt, ax, c) for ax in self.mt]
        self.s0 = self._reused(np.arange(len(bt.t)), {})

    def _reused(self, rows: np.ndarray, over: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Σ over steps after j* of Π_multi-term-axes Stab(Δ), for ``rows``; ``over`` replaces an
        axis's unmerged table by per-row merged Stab rows (indexed like ``rows``)."""
        stab = np.ones(self.after[rows].shape, np.int64)
        for k, (tab, row0, sh) in enumerate(zip(self.tables, self.rows0, self.shift)):
            shk = np.clip(sh[rows], -tab.span, tab.span) + tab.span
            if k in over:
                srow = over[k]
                part = np.take_along_axis(srow, shk.reshape(len(rows), -1), axis=1).reshape(shk.shape)
            else:
                part = tab.overlap[row0[rows][:, None, None], shk]
            stab = stab * part
        return (self.after[rows] * stab).sum(axis=(1, 2))

    def _merged_f(self, merged_lv: np.ndarray) -> np.ndarray:
        sel = self.bt.xy[:, : self.c][:, merged_lv[: self.c]]
        return sel.prod(axis=1)  # [B, D]

    def entries(self, merged_lv: np.ndarray) -> np.ndarray:
        """entries(q) for the networks flagged in ``merged_lv`` (a [L] bool, only levels q..c-1 set)."""
        bt, c = self.bt, self.c
        mf = self._merged_f(merged_lv)
        groups = bt.sp_above[:, c] // mf.prod(axis=1)
        u_st = np.ones(len(bt.t), np.int64)
        for e in self.st:
            u_st = u_st * self.ext[:, e] * mf[:, e]
        u_mt = self.u0.copy()
        merged_rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, ax in enumerate(self.mt):
            dims = [e for _, e in ax.terms]
            rows = np.nonzero((mf[:, dims] > 1).any(axis=1))[0]
            if rows.size == 0:
                continue
            keys = _merged_key(bt, ax, c, merged_lv, rows)
            usz, srows = merged_stats(tuple(cf for cf, _ in ax.terms), ax.extent, keys)
            u_mt[rows] = u_mt[rows] // self.tables[k].size[self.rows0[k][rows]] * usz
            merged_rows[k] = (rows, srows)
        if self.mac:
            return groups * bt.n_above[:, c] * u_st * u_mt
        s = self.s0
        if merged_rows:
            rows = np.unique(np.concatenate([r for r, _ in merged_rows.values()]))
            over = {}
            for k, (r_k, srow) in merged_rows.items():
                full = np.zeros((len(rows), srow.shape[1]), np.int64)
                idx = np.searchsorted(rows, r_k)
                full[idx] = srow
                missing = np.ones(len(rows), bool)
                missing[idx] = False
                tab = self.tables[k]
                full[missing] = tab.overlap[self.rows0[k][rows[missing]]]
                over[k] = full
            s = s.copy()
            s[rows] = self._reused(rows, over)
        return groups * (bt.n_above[:, c] * u_st * u_mt - u_st * s)

    def distinct(self, merged_lv: np.ndarray) -> np.ndarray:
        """Elements ever held per merged group, summed over groups."""
        bt, c = self.bt, self.c
        mf = self._merged_f(merged_lv)
        groups = bt.sp_above[:, c] // mf.prod(axis=1)
        above = bt.xy[:, :c].prod(axis=1)  # spatial factors of networks < c per dim
        out = groups.copy()
        for e in self.st:
            out = out * (self.sizes[e] // (above[:, e] // mf[:, e]))
        n_lv = bt.t.shape[1]
        for ax in self.mt:
            cols = []
            for _, e in ax.terms:
                for s in range(3 * n_lv):
                    m, kind = divmod(s, 3)
                    f = bt.geo.f[:, e, s]
                    incl = np.ones(len(f), bool) if (kind == 0 or m >= c or merged_lv[m]) else np.zeros(len(f), bool)
                    incl = incl & (f > 1)
                    cols.append(np.where(incl, bt.geo.w[:, e, s], 0)[:, None])
                    cols.append(np.where(incl, f, 1)[:, None])
            out = out * sumset_sizes(tuple(cf for cf, _ in ax.terms), np.concatenate(cols, axis=1))
        return out


def access_counts(problem: Problem, arch, batch) -> Accesses:
    """Fills, reads, updates and hops of every level and tensor for every mapping of ``batch``."""
    bt = _prepare(batch)
    b, n_lv, _ = bt.t.shape
    n_t = len(problem.tensors)
    mc = np.array([lv.multicast for lv in arch.levels], bool)
    red = np.array([lv.spatial_reduction for lv in arch.levels], bool)
    fills, reads, updates, hops = (np.zeros((b, n_lv, n_t), np.int64) for _ in range(4))
    ar = np.arange(b)
    lv_idx = np.arange(n_lv)
    for ti, axes in enumerate(tensor_axes(problem)):
        is_out = problem.tensors[ti].is_output
        keep = batch.keep[:, :, ti].copy()
        keep[:, 0] = True
        last_keep = np.maximum.accumulate(np.where(keep, lv_idx, 0), axis=1)
        for c in range(1, n_lv + 1):
            exists = keep[:, c] if c < n_lv else np.ones(b, bool)
            if not exists.any():
                continue
            parent = last_keep[:, c - 1]
            link = _Link(problem, bt, axes, c)
            qs = range(int(parent[exists].min()), c + 1)

            e_mc = {q: link.entries(mc & (lv_idx >= q) & (lv_idx < c)) for q in qs}
            if is_out:
                d_mc = {q: link.distinct(mc & (lv_idx >= q) & (lv_idx < c)) for q in qs}
                e_red = {q: link.entries(red & (lv_idx >= q) & (lv_idx < c)) for q in qs}
                down = {q: e_mc[q] - d_mc[q] for q in qs}
            else:
                down = e_mc
            if c < n_lv:
                fills[:, c, ti] += np.where(exists, down[c], 0)
            stack = np.zeros((b, c + 1), np.int64)
            for q in qs:
                stack[:, q] = down[q]
            reads[ar, parent, ti] += np.where(exists, stack[ar, parent], 0)
            if is_out:
                up = np.zeros((b, c + 1), np.int64)
                for q in qs:
                    up[:, q] = e_red[q]
                updates[ar, parent, ti] += np.where(exists, up[ar, parent], 0)
                stack = stack + up
            for lvl in range(int(parent[exists].min()), c):
                hops[:, lvl, ti] += np.where(exists & (parent <= lvl), stack[:, lvl + 1], 0)
    words = tile_words(problem, batch)
    keep_all = batch.keep.copy()
    keep_all[:, 0] = True
    return Accesses(
        fills=fills, reads=reads, updates=updates, hops=hops,
        tile_words=np.where(keep_all, words, 0),
        macs=np.full(b, problem.macs, np.int64),
        temporal_steps=bt.t.prod(axis=(1, 2)),
    )
