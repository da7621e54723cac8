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

from costmodel.loop_order import inner_sum, loop_slots, running, within
from costmodel.mapping import MappingBatch
from costmodel.problem import Problem
from costmodel.tiles import (
    Axis,
    Geometry,
    Shape,
    TensorTiles,
    WindowTable,
    merged_stats,
    shape_of,
    sumset_sizes,
    tensor_tiles,
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

    def __init__(self, batch, shape: Shape) -> None:
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
        # ranks and nest positions are small: int16 halves and quarters the comparisons' traffic
        rank = np.ascontiguousarray(rank_all[:, idx], dtype=np.int16)
        t = geo.t
        n_lv, d, b = t.shape
        self.geo, self.t, self.rank, self.xy = geo, t, rank, geo.xy
        self.n_above = np.ones((n_lv + 1, b), np.int64)
        self.sp_above = np.ones((n_lv + 1, b), np.int64)
        running(np.multiply, np.multiply.reduce(t, axis=1), self.n_above[1:])
        running(np.multiply, np.multiply.reduce(geo.xy, axis=1), self.sp_above[1:])
        self.slots, self.d_all = loop_slots(rank, d_all), d_all
        self.wts = within(t, self.slots, d_all)  # product of the factors of the loops outer to each, same level
        self.wts *= self.n_above[:n_lv, None, :]
        self.wts *= t - 1  # steps at which a loop advances
        self.pos = rank + (np.arange(n_lv, dtype=np.int16) * d_all)[:, None, None]  # nest position of each loop
        self.w_t = geo.w[0::3]  # place value of each temporal loop
        self.r_cum = np.zeros((n_lv + 1, d, b), np.int64)  # prefix of (f-1)*w over temporal loops
        running(np.add, (t - 1) * self.w_t, self.r_cum[1:])
        self._xy_above: dict[int, np.ndarray] = {}
        self._tensors: dict[int, _TensorLoops] = {}
        self._last: np.ndarray | None = None

    def tensor(self, tp: _TensorPlan) -> _TensorLoops:
        """The loop arrays of one tensor, shared by all its links (computed once)."""
        if tp.index not in self._tensors:
            self._tensors[tp.index] = _TensorLoops(self, tp)
        return self._tensors[tp.index]

    def last(self) -> np.ndarray:
        """[L, B]: nest position of the innermost loop with a factor > 1 at levels <= m (-1: none)."""
        if self._last is None:
            self._last = running(np.maximum, np.where(self.t > 1, self.pos, -1).max(axis=1))
        return self._last

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


class _TensorLoops:
    """Per tensor, over all levels: its single-term dims ``st``, the other dims ``free`` (the only
    loops that can reuse), ``js[m]`` the nest position of the innermost loop with a factor > 1 of
    an ``st`` dim at levels <= m, those loops' step counts and positions, and per multi-term axis
    the part of its shift Δ that does not depend on the child level (``here``, [L, K, B])."""

    def __init__(self, bt: _Batch, tp: _TensorPlan) -> None:
        self.st, self.free = tp.st, tp.free
        free = self.free
        if self.st:
            pos_st = np.where(bt.t[:, self.st] > 1, bt.pos[:, self.st], -1).max(axis=1)
            self.js = running(np.maximum, pos_st)
        else:
            self.js = np.full((bt.t.shape[0], bt.t.shape[2]), -1, bt.pos.dtype)
        self.pos, self.wts = bt.pos[:, free], bt.wts[:, free]
        self.here = []
        for ax in tp.mt:
            # e's loop at the same level wraps to 0 when it is inner to the advancing loop ...
            resets = [(e, coef * (bt.t[:, e] - 1) * bt.w_t[:, e]) for coef, e in ax.terms]
            part = np.negative(inner_sum(resets, bt.slots, bt.d_all, free))
            for coef, e in ax.terms:
                if e in free:
                    part[:, free.index(e)] += coef * bt.w_t[:, e]  # ... and the advancing loop moves
            self.here.append(part)

    def shift(self, bt: _Batch, k: int, ax: Axis, c: int) -> np.ndarray:
        """Δ of multi-term axis ``k`` when temporal loop (level m < c, dim free[j]) advances: [c, K, B]."""
        below = np.zeros((c, bt.t.shape[2]), np.int64)
        for coef, e in ax.terms:
            # loops of e at levels between the advancing loop's and c wrap to 0
            below += coef * (bt.r_cum[1:c + 1, e] - bt.r_cum[c, e])
        return self.here[k][:c] + below[:, None, :]


class _Link:
    """Counts for one tensor and one child level c (c = L: the MACs), for every parent."""

    def __init__(self, plan: _Plan, tp: _TensorPlan, bt: _Batch, tiles: TensorTiles, c: int,
                 timeloop: bool) -> None:
        self.bt, self.c, self.sizes, self.timeloop = bt, c, plan.shape.sizes, timeloop
        self.nets = {kind: nets[c] for kind, nets in plan.nets.items()}
        self.used, self.st, self.mt, self.tables = tp.used, tp.st, tp.mt, tp.tables
        self.window_dims = tp.window_dims
        self.mac = c == bt.t.shape[0]
        self.ext = bt.geo.extent(c)
        self.rows0 = [row[c - 1] for row in tiles.rows]
        self.u_tile = tiles.multi[c - 1]  # |tile| of the child, multi-term axes
        self.u_single = tiles.single[c - 1]  # and single-term ones
        self._cache: dict[tuple, np.ndarray] = {}
        if self.mac:
            return
        tl = bt.tensor(tp)
        # only steps after the innermost advancing loop of a single-term dimension can reuse, and
        # those loops are on the other dimensions
        self.after = np.where(tl.pos[:c] > tl.js[c - 1][None, None, :], tl.wts[:c], 0)
        self.shift = [tl.shift(bt, k, ax, c) for k, ax in enumerate(self.mt)]
        if timeloop and self.mt:
            # Timeloop slides a window only under the innermost nontrivial loop; elsewhere a
            # moved tile is refetched whole
            still = np.ones(self.after.shape, bool)
            for sh in self.shift:
                still &= sh == 0
            self.after = np.where(still | (tl.pos[:c] == bt.last()[c - 1][None, None, :]), self.after, 0)
        self._s0: np.ndarray | None = None

    @property
    def s0(self) -> np.ndarray:
        """Σ over steps of the unmerged reused elements (lazy: merged rows replace it)."""
        if self._s0 is None:
            self._s0 = self._reused(None, {}) if self.mt else self.after.sum(axis=(0, 1))
        return self._s0

    def _reused(self, rows: np.ndarray | slice | None, over: dict) -> np.ndarray:
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
        nets = self.nets[kind][q]
        key = ("e", nets)
        if key in self._cache:
            return self._cache[key]
        bt, c = self.bt, self.c
        mf = self._merge_factors(nets)
        groups = bt.sp_above[c] if mf is None else bt.sp_above[c] // mf.prod(axis=0)
        u_st = self.u_single if mf is None else self.u_single * mf[self.st].prod(axis=0)
        u_mt = self.u_tile
        s = None
        if mf is not None and self.mt:
            u_mt = u_mt.copy()
            over: dict[int, tuple[np.ndarray, np.ndarray]] = {}
            # rows whose merged children split a window dimension: exact tables per digit pattern
            split = (mf[self.window_dims] > 1).any(axis=0)
            rows = slice(None) if split.all() else np.nonzero(split)[0]
            if split.any():
                for k, ax in enumerate(self.mt):
                    usz, srows, inv = merged_stats(tuple(cf for cf, _ in ax.terms), ax.extent,
                                                   self._key(ax, nets, rows))
                    u_mt[rows] = u_mt[rows] // self.tables[k].size[self.rows0[k][rows]] * usz
                    over[k] = (srows, inv)
                if not self.mac:
                    s = self._reused(rows, over) if isinstance(rows, slice) else self.s0.copy()
                    if not isinstance(rows, slice):
                        s[rows] = self._reused(rows, over)
        if self.mac:
            out = groups * bt.n_above[c] * u_st * u_mt
        else:
            s = self.s0 if s is None else s
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

    def _key(self, ax: Axis, nets: tuple[int, ...], rows: np.ndarray | slice) -> np.ndarray:
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
        nets = self.nets[kind][q]
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


CHUNK = 16384  # mappings per pass: the temporaries of one pass stay small (measured fastest, 2026-12-02)


def access_counts(problem: Problem, arch, batch, model: str = "exact") -> Accesses:
    """Fills, reads, updates and hops of every level and tensor for every mapping of ``batch``.

    ``model="timeloop"`` applies Timeloop's two approximations instead of exact sets (see
    docs/semantics.md): windows slide only under the innermost nontrivial loop, and multicast /
    reduction merge only identical tiles. Used to reproduce Timeloop's numbers. Large batches
    are counted ``CHUNK`` mappings at a time (rows are independent)."""
    if model not in ("exact", "timeloop"):
        raise ValueError(f"access_counts: model must be 'exact' or 'timeloop', got {model!r}")
    plan = _plan(problem, arch)
    b, n_lv = batch.temporal.shape[:2]
    n_t = len(problem.tensors)
    out = [np.zeros((n_lv, n_t, b), np.int64) for _ in range(5)]  # fills reads updates hops words
    steps = np.empty(b, np.int64)
    size = -(-b // -(-b // CHUNK)) if b else 1  # equal chunks of at most CHUNK
    for lo in range(0, b, size):
        sl = slice(lo, lo + size)
        part = batch if b <= size else MappingBatch(*(getattr(batch, f)[sl] for f in _FIELDS))
        steps[sl] = _count(plan, part, model == "timeloop", [a[:, :, sl] for a in out])
    fills, reads, updates, hops, words = (a.transpose(2, 0, 1) for a in out)
    return Accesses(fills=fills, reads=reads, updates=updates, hops=hops, tile_words=words,
                    macs=np.full(b, problem.macs, np.int64), temporal_steps=steps)


_FIELDS = ("temporal", "spatial_x", "spatial_y", "order", "keep")


def _add(acc: np.ndarray, v: np.ndarray, where: np.ndarray) -> None:
    """``acc[where] += v[where]`` in place, without a temporary."""
    np.add(acc, v, out=acc, where=where)


def _count(plan: _Plan, batch, timeloop: bool, out: list[np.ndarray]) -> np.ndarray:
    """Adds the counts of ``batch`` into ``out`` ([L, T, B] fills, reads, updates, hops, and the
    kept tile words); returns the temporal steps [B]."""
    fills, reads, updates, hops, kept_words = out
    shape = plan.shape
    bt = _Batch(batch, shape)
    n_lv, _, b = bt.t.shape
    keep_all = np.ascontiguousarray(batch.keep.transpose(1, 2, 0))
    keep_all[0] = True
    lv_idx = np.arange(n_lv)
    for tp in plan.tensors:
        ti, is_out = tp.index, tp.is_out
        keep = keep_all[:, ti]
        tiles = tensor_tiles(tp.axes, shape.sizes, bt.geo.suffix[3::3])  # levels 1..L (L: the MACs)
        kept_words[0, ti] = tp.elements
        kept_words[1:, ti] = np.where(keep[1:], tiles.words[:-1], 0)
        last_keep = running(np.maximum, np.where(keep, lv_idx[:, None], 0))
        for c in range(1, n_lv + 1):
            exists = keep[c] if c < n_lv else np.ones(b, bool)
            parent = last_keep[c - 1]
            # mappings per parent level, among those that keep the tensor at c
            per_parent = np.bincount(parent[exists], minlength=c).tolist()
            n = sum(per_parent)
            if not n:
                continue
            link = _Link(plan, tp, bt, tiles, c, timeloop)

            def down(q: int, link: _Link = link, is_out: bool = is_out) -> np.ndarray:
                if is_out:
                    return link.entries("mc", q) - link.distinct("mc", q)
                return link.entries("mc", q)

            if c < n_lv:
                _add(fills[c, ti], down(c), exists)
            seen = 0  # mappings whose parent is at or above q
            for q in range(c):
                if per_parent[q]:
                    here = exists if per_parent[q] == n else exists & (parent == q)
                    _add(reads[q, ti], down(q), here)
                    if is_out:
                        _add(updates[q, ti], link.entries("red", q), here)
                    seen += per_parent[q]
                if seen:
                    below = exists if seen == n else exists & (parent <= q)
                    moved = down(q + 1) + (link.entries("red", q + 1) if is_out else 0)
                    _add(hops[q, ti], moved, below)
    return np.multiply.reduce(bt.t, axis=(0, 1))


@dataclass(frozen=True)
class _TensorPlan:
    """One tensor's axes split as the links use them: single-term dims ``st``, multi-term axes
    ``mt`` and their window tables, the dims it uses and the window axes' dims."""

    index: int
    is_out: bool
    elements: int
    axes: tuple[Axis, ...]
    st: list[int]
    free: list[int]  # the dims that are not in st
    mt: list[Axis]
    tables: list[WindowTable]
    used: list[int]
    window_dims: list[int]


class _Plan:
    """What counting needs of a (problem, arch) pair but not of the batch, built once per pair:
    the mappers evaluate one pair many times in small batches, where this bookkeeping would cost
    as much as the arithmetic."""

    def __init__(self, problem: Problem, arch) -> None:
        self.shape = shape = shape_of(problem)
        self.tensors = []
        for ti, axes in enumerate(shape.axes):
            t, mt = problem.tensors[ti], [ax for ax in axes if not ax.single]
            st = [ax.terms[0][1] for ax in axes if ax.single]
            self.tensors.append(_TensorPlan(
                ti, t.is_output, problem.tensor_elements(t.name), axes, st,
                [e for e in range(len(shape.sizes)) if e not in st], mt, [window_table(ax, shape.sizes) for ax in mt],
                sorted({e for ax in axes for _, e in ax.terms}), sorted({e for ax in mt for _, e in ax.terms})))
        # networks whose fan-out is 1 merge nothing: leaving them out makes equal merge sets equal
        fan = [lv.fanout_x * lv.fanout_y > 1 for lv in arch.levels]
        flags = {
            "mc": [lv.multicast and f for lv, f in zip(arch.levels, fan)],
            "red": [lv.spatial_reduction and f for lv, f in zip(arch.levels, fan)],
        }
        # nets[kind][c][q]: the ``kind``-flagged networks q..c-1 (merged between parent q and child c)
        n_lv = len(arch.levels)
        self.nets = {kind: [[tuple(m for m in range(q, c) if f[m]) for q in range(c + 1)] for c in range(n_lv + 1)]
                     for kind, f in flags.items()}


_PLANS: dict[tuple[int, int], tuple[Problem, object, _Plan]] = {}


def _plan(problem: Problem, arch) -> _Plan:
    """The pair's plan, cached by identity (the objects are kept with it, so their ids stay theirs)."""
    key = (id(problem), id(arch))
    hit = _PLANS.get(key)
    if hit is None or hit[0] is not problem or hit[1] is not arch:
        if len(_PLANS) >= 64:
            _PLANS.clear()
        hit = _PLANS[key] = (problem, arch, _Plan(problem, arch))
    return hit[2]
