"""The mapspace of one layer on one config: tilings x loop-order classes x keep/bypass choices.

A *tiling* gives every dimension an ordered factorization over its free slots (each level's temporal
loop, and the X / Y fan-out below a level when the constraints allow the dimension there); fixed
factors from the constraints fill their slots. Tilings are indexed by one table row per dimension
(``rows [C, D]``), so search code works on small integer arrays and decodes factors in bulk. Loop
orders are the classes of :mod:`dse.mapspace.orders`; keep options are every choice for the levels
whose ``holds`` allow a tensor, less the constraints. Capacity is checked exactly as
``Mapping.validate`` does (the tile sizes of :func:`costmodel.tiles.tile_words`; half the capacity
when double-buffered).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.errors import UserError
from costmodel.mapping import FACTOR_DTYPE, ORDER_DTYPE, MappingBatch
from costmodel.problem import Problem
from costmodel.tiles import tile_words
from dse.mapspace import constraints as cons
from dse.mapspace import kernels
from dse.mapspace.factorizations import count_ordered_factorizations, ordered_factorizations
from dse.mapspace.orders import dim_roles, ranks_for

if TYPE_CHECKING:
    from costmodel.arch import Architecture


@dataclass(frozen=True, eq=False)
class DimTable:
    """Factorizations of one dimension: ``slots`` are (level, kind) of the table's columns."""

    name: str
    size: int
    slots: tuple[tuple[int, int], ...]
    fixed: tuple[tuple[int, int, int], ...]  # (level, kind, factor)
    table: np.ndarray  # [rows, slots] sorted by spatial part first
    group_start: np.ndarray  # rows with equal spatial factors are contiguous: [groups + 1]
    group_spatial: np.ndarray  # [groups, fan-outs]: this dim's factor on each fan-out
    temporal_levels: np.ndarray  # [rows] bitmask (small uint) of the levels where the temporal factor is > 1


@dataclass(frozen=True)
class MapspaceSize:
    """How big the space is, known before any search."""

    tilings: int  # product over dims of ordered factorizations (closed form)
    spatial_tilings: int  # of those, the ones whose spatial factors fit every fan-out (exact)
    orders_raw: int  # (number of dims)! per level, to the number of levels
    keep_options: int
    total_raw: int  # tilings x orders_raw x keep_options: the unreduced space

    def to_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@lru_cache(maxsize=512)
def dim_table(d: str, n: int, rest: int, slots: tuple[tuple[int, int], ...],
              fixed: tuple[tuple[int, int, int], ...], caps: tuple[int | None, ...],
              fanouts: tuple[tuple[int, int], ...]) -> DimTable:
    """The table of dimension ``d`` (size ``n``, ``rest`` left for the free ``slots`` after the
    ``fixed`` factors), its rows sorted by their factors on the ``fanouts``. Cached: a sweep maps
    the same layer shapes on hundreds of designs whose fan-outs and constraints repeat, and
    enumerating a big table took most of a mapspace's set-up. The arrays are read-only."""
    table = ordered_factorizations(rest, len(slots), caps)
    fan_index = {lk: i for i, lk in enumerate(fanouts)}
    sp = np.ones((len(table), len(fanouts)), dtype=np.int64)
    for col, (li, k) in enumerate(slots):
        if k:
            sp[:, fan_index[(li, k)]] = table[:, col]
    for li, k, f in fixed:
        if k:
            sp[:, fan_index[(li, k)]] *= f
    order = np.lexsort(tuple(sp[:, j] for j in reversed(range(sp.shape[1])))) if sp.shape[1] else \
        np.arange(len(table))
    table, sp = table[order], sp[order]
    change = np.ones(len(table), bool)
    if len(table) > 1:
        change[1:] = (sp[1:] != sp[:-1]).any(axis=1)
    starts = np.nonzero(change)[0]
    levels = np.zeros(len(table), dtype=np.int64)
    for col, (li, k) in enumerate(slots):
        if not k:
            levels |= (table[:, col] > 1).astype(np.int64) << li
    for li, k, f in fixed:
        if not k and f > 1:
            levels |= 1 << li
    out = DimTable(d, n, slots, fixed, table, np.concatenate([starts, [len(table)]]).astype(np.int64),
                   sp[starts], levels.astype(np.min_scalar_type(int(levels.max(initial=0)))))
    for a in (out.table, out.group_start, out.group_spatial, out.temporal_levels):
        a.flags.writeable = False
    return out


class Mapspace:
    """Every mapping of ``problem`` on ``arch`` the constraints allow, enumerable in numpy chunks."""

    def __init__(self, problem: Problem, arch: Architecture, constraints: Any = None,
                 constraints_where: str = "constraints") -> None:
        if isinstance(constraints, (str, Path)):
            constraints_where = str(constraints)
            constraints = cons.load_constraints_file(constraints)
        self.problem, self.arch = problem, arch
        self.dims = problem.dim_names
        self.tensors = tuple(t.name for t in problem.tensors)
        self.n_levels = len(arch.levels)
        names = tuple(lv.name for lv in arch.levels)
        holds = tuple(tuple(lv.holds) for lv in arch.levels)
        fanouts = tuple((lv.fanout_x, lv.fanout_y) for lv in arch.levels)
        self.constraints = cons.resolve(arch.constraints, constraints, names, holds, problem.sizes, fanouts,
                                        arch_where=arch.source, user_where=constraints_where)
        self.roles = dim_roles(problem)
        self.fanouts = [(li, k, cap) for li, lv in enumerate(arch.levels)
                        for k, cap in ((1, lv.fanout_x), (2, lv.fanout_y)) if cap > 1]
        self._caps = np.array([cap for _, _, cap in self.fanouts], dtype=np.int64)
        self.tables = [self._dim_table(di) for di in range(len(self.dims))]
        # the tables and where their columns and fixed factors go, for the decoding kernel
        self._table_arrays = tuple(t.table for t in self.tables)
        n_slots = max(len(t.slots) for t in self.tables)
        slot_at = np.zeros((2, len(self.tables), n_slots), dtype=np.int64)  # [level / kind, D, slots]
        for di, t in enumerate(self.tables):
            slot_at[:, di, :len(t.slots)] = np.array(t.slots, dtype=np.int64).reshape(-1, 2).T
        self._slot_level, self._slot_kind = slot_at
        self._fixed = np.array([(di, li, k, f) for di, t in enumerate(self.tables) for li, k, f in t.fixed],
                               dtype=np.int64).reshape(-1, 4)
        # the rows of table d are numbered from row_offset[d] in the arrays of all the tables' rows
        self.row_offset, self._group_starts, self._group_spatial = _all_groups(self.tables)
        # each row's temporal_levels (a search hashes candidates by their active loops, not decoded)
        self.row_levels = np.concatenate([t.temporal_levels for t in self.tables]).astype(np.int64)
        self.inner_orders = tuple(tuple(self.dims.index(d) for d in c.order) for c in self.constraints)
        self.keep_options = self._keep_options()
        self.usable = np.array([np.iinfo(np.int64).max if lv.capacity_words is None else
                                (lv.capacity_words // 2 if lv.double_buffered else lv.capacity_words)
                                for lv in arch.levels], dtype=np.int64)
        self._spatial_combos, self._spatial_pes = self._spatial_groups()
        counts = np.ones(len(self._spatial_combos), dtype=np.int64)
        for di, t in enumerate(self.tables):
            counts *= np.diff(t.group_start)[self._spatial_combos[:, di]]
        self._combo_counts = counts
        self._combo_cum = np.concatenate([[0], np.cumsum(counts)])

    # ---- construction ----------------------------------------------------------------------------
    def _dim_table(self, di: int) -> DimTable:
        d, n = self.dims[di], self.problem.sizes[self.dims[di]]
        slots, fixed, rest = [], [], n
        for li, (lv, c) in enumerate(zip(self.arch.levels, self.constraints)):
            if d in c.temporal:
                fixed.append((li, 0, c.temporal[d]))
                rest //= c.temporal[d]
            else:
                slots.append((li, 0))
            for k, cap, spec in ((1, lv.fanout_x, c.spatial_x), (2, lv.fanout_y, c.spatial_y)):
                if cap <= 1 or (spec is not None and d not in spec):
                    continue
                f = None if spec is None else spec[d]
                if f is not None:  # (constraints.resolve checked it against the fan-out and the size)
                    fixed.append((li, k, f))
                    rest //= f
                else:
                    slots.append((li, k))
        caps = tuple(None if k == 0 else (self.arch.levels[li].fanout_x if k == 1 else
                                          self.arch.levels[li].fanout_y) for li, k in slots)
        return dim_table(d, n, rest, tuple(slots), tuple(fixed), caps,
                         tuple((li, k) for li, k, _ in self.fanouts))

    def _keep_options(self) -> np.ndarray:
        per_level = []
        for li, lv in enumerate(self.arch.levels):
            c = self.constraints[li]
            choices = []
            for t in self.tensors:
                if li == 0:
                    choices.append((True,))
                elif t not in lv.holds or t in c.bypass:
                    choices.append((False,))
                elif t in c.keep:
                    choices.append((True,))
                else:
                    choices.append((True, False))
            per_level.append(choices)
        flat = [ch for lvl in per_level for ch in lvl]
        opts = np.array(list(itertools.product(*flat)), dtype=bool)
        return opts.reshape(len(opts), self.n_levels, len(self.tensors))

    def _spatial_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Every combination of per-dim spatial groups that fits all fan-outs: [M, D] group ids, and
        the PEs each uses [M] (the product of its factors on every fan-out)."""
        group_off = np.cumsum([0] + [len(t.group_spatial) for t in self.tables]).astype(np.int64)
        combos, pes = kernels.filled(
            lambda out, pes: kernels.spatial_combos(self._group_spatial, group_off, self._caps, out, pes),
            lambda n: (np.empty((n, len(self.tables)), np.int64), np.empty(n, np.int64)), 4096)
        return combos, pes

    # ---- size ------------------------------------------------------------------------------------
    def size(self) -> MapspaceSize:
        tilings = 1
        for t in self.tables:
            rest = t.size // math.prod(f for _, _, f in t.fixed)
            tilings *= count_ordered_factorizations(rest, len(t.slots))
        orders_raw = math.factorial(len(self.dims)) ** self.n_levels
        keeps = len(self.keep_options)
        return MapspaceSize(tilings, int(self._combo_cum[-1]), orders_raw, keeps, tilings * orders_raw * keeps)

    @property
    def num_spatial(self) -> int:
        """Distinct spatial unrollings (tilings are numbered unrolling by unrolling)."""
        return len(self._spatial_combos)

    def spatial_range(self, m: int) -> tuple[int, int]:
        """The tiling numbers ``[start, stop)`` that share spatial unrolling ``m``."""
        return int(self._combo_cum[m]), int(self._combo_cum[m + 1])

    def spatial_pes(self) -> np.ndarray:
        """[M] PEs each spatial unrolling uses (the product of its spatial factors), without building
        the factor arrays of every unrolling."""
        return self._spatial_pes

    def spatial_factors(self, which: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One representative per spatial unrolling (or per unrolling numbered in ``which``) [M, L, D]:
        its spatial factors, and every dimension's remaining factor as a temporal loop at level 0 (so
        the product of temporal factors, the steps, is that of every tiling of the unrolling)."""
        combos = self._spatial_combos if which is None else self._spatial_combos[which]
        m = len(combos)
        sx = np.ones((m, self.n_levels, len(self.dims)), dtype=FACTOR_DTYPE)
        sy = sx.copy()
        fan = [sx if k == 1 else sy for _, k, _ in self.fanouts]
        for di, t in enumerate(self.tables):
            sp = t.group_spatial[combos[:, di]]  # [M, fan-outs]
            for j, (li, _, _) in enumerate(self.fanouts):
                fan[j][:, li, di] = sp[:, j]
        temporal = np.ones_like(sx)
        temporal[:, 0, :] = np.array([t.size for t in self.tables]) // (sx * sy).prod(axis=1)
        return temporal, sx, sy

    @property
    def num_tilings(self) -> int:
        """Tilings that fit the fan-outs (the ones enumerated)."""
        return int(self._combo_cum[-1])

    # ---- tilings ---------------------------------------------------------------------------------
    def tiling_rows(self, start: int, stop: int) -> np.ndarray:
        """Table rows [C, D] of fan-out-valid tilings ``start..stop`` (a fixed, stable numbering)."""
        return self.tiling_rows_at(np.arange(start, stop, dtype=np.int64))

    def tiling_rows_at(self, pos: np.ndarray) -> np.ndarray:
        """Table rows [C, D] of the fan-out-valid tilings numbered ``pos``."""
        pos = np.asarray(pos, dtype=np.int64)
        combo = np.searchsorted(self._combo_cum, pos, side="right") - 1
        local = pos - self._combo_cum[combo]
        rows = np.empty((len(pos), len(self.tables)), dtype=np.int64)
        for di in reversed(range(len(self.tables))):
            t = self.tables[di]
            g = self._spatial_combos[combo, di]
            radix = t.group_start[g + 1] - t.group_start[g]
            local, digit = np.divmod(local, radix)
            rows[:, di] = t.group_start[g] + digit
        return rows

    def iter_tilings(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        for s in range(0, self.num_tilings, chunk):
            yield self.tiling_rows(s, min(s + chunk, self.num_tilings))

    def decode(self, rows: np.ndarray, batch_last: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Factors ``temporal, spatial_x, spatial_y`` [C, L, D] of tilings given as table rows; with
        ``batch_last``, as views of contiguous [L, D, C] arrays (the layout the cost model reads fastest)."""
        c, shape = len(rows), (self.n_levels, len(self.dims))
        if batch_last:
            out = np.ones((3, *shape, c), dtype=FACTOR_DTYPE).transpose(0, 3, 1, 2)
        else:
            out = np.ones((3, c, *shape), dtype=FACTOR_DTYPE)
        kernels.decode_into(out, rows, self._table_arrays, self._slot_level, self._slot_kind, self._fixed)
        return out[0], out[1], out[2]

    def spatial_ok(self, rows: np.ndarray) -> np.ndarray:
        """[C]: tilings given as table rows [C, D] fit every fan-out, from the spatial factors of the
        rows' groups (a search checks this before it decodes anything)."""
        return kernels.spatial_ok(rows, self.row_offset, self._group_starts, self._group_spatial, self._caps)

    def kept_words(self, temporal: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
        """[C, K, L]: words tiling c keeps at each level with keep option k."""
        words = tile_words(self.problem, temporal, sx, sy)  # [C, L, T]
        return np.einsum("clt,klt->ckl", words, self.keep_options.astype(np.int64))

    def capacity_ok(self, temporal: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> np.ndarray:
        """[C, K]: tiling c with keep option k fits every level (``Mapping.validate``'s rule)."""
        return (self.kept_words(temporal, sx, sy) <= self.usable).all(axis=2)

    def fits(self, temporal: np.ndarray, sx: np.ndarray, sy: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """[C]: tiling c with its own keep choice ``keep`` [C, L, T] fits every level (the same rule
        as :meth:`capacity_ok`, for one keep choice per tiling)."""
        words = tile_words(self.problem, temporal, sx, sy)  # [C, L, T]
        return ((words * keep).sum(axis=2) <= self.usable).all(axis=1)

    # ---- orders and full candidates --------------------------------------------------------------
    def with_inner_orders(self, ranks: np.ndarray) -> np.ndarray:
        """Loop-order ranks ``[P, L, D]`` (0 = outermost) with each level's constrained innermost
        loops (``order:``) innermost, in their order; the other loops keep their relative order. Why:
        the fast mapper draws, swaps and crosses ranks freely, and had returned mappings against the
        constraint (which the exhaustive search, seeded with them, then kept)."""
        if not any(self.inner_orders):
            return ranks
        keys = ranks.astype(np.int64)
        n = ranks.shape[-1]
        for li, inner in enumerate(self.inner_orders):
            for i, d in enumerate(inner):
                keys[:, li, d] = n + i
        return np.argsort(np.argsort(keys, axis=2, kind="stable"), axis=2, kind="stable").astype(ranks.dtype)

    def order_ranks(self, li: int, active_mask: int) -> np.ndarray:
        """[classes, D] ranks of the order classes of level ``li`` for a set of active dims."""
        return ranks_for(active_mask, len(self.dims), self.roles, self.inner_orders[li])

    def level_masks(self, row: list[int]) -> list[int]:
        """Per level, the bitmask of the dims active (temporal factor above 1) in the one tiling
        ``row`` (table rows): ``active_masks`` of a single row, in Python ints, which is faster."""
        bits = [int(t.temporal_levels[r]) for t, r in zip(self.tables, row, strict=True)]
        return [sum(((b >> li) & 1) << d for d, b in enumerate(bits)) for li in range(self.n_levels)]

    def active_masks(self, active: np.ndarray) -> np.ndarray:
        """[C, L] bitmask of the dims ``active`` [C, L, D] (a temporal factor above 1) marks."""
        bits = (1 << np.arange(len(self.dims), dtype=np.int64))
        return (active * bits).sum(axis=2)

    def expand(self, rows: np.ndarray, keep_ok: np.ndarray | None = None,
               max_batch: int = 32768) -> Iterator[tuple[MappingBatch, np.ndarray, np.ndarray]]:
        """Every (order class, keep option) of the tilings ``rows``, as MappingBatches.

        Yields ``(batch, tiling_index, keep_index)``; ``keep_ok`` [C, K] restricts the keep options
        (default: those that fit). Tilings with no fitting keep option yield nothing.
        """
        temporal, sx, sy = self.decode(rows)
        if keep_ok is None:
            keep_ok = self.capacity_ok(temporal, sx, sy)
        masks = self.active_masks(temporal > 1)
        uniq, inv = np.unique(masks, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        # the (tiling, keep) pairs of each active-dims group, in row-major order within the group:
        # one nonzero and one stable sort instead of a scan of keep_ok per group
        t_all, k_all = np.nonzero(keep_ok)
        by_group = np.argsort(inv[t_all], kind="stable")
        t_all, k_all = t_all[by_group], k_all[by_group]
        bounds = np.searchsorted(inv[t_all], np.arange(len(uniq) + 1))
        for g, mrow in enumerate(uniq):
            tiles, keeps = t_all[bounds[g]:bounds[g + 1]], k_all[bounds[g]:bounds[g + 1]]
            if tiles.size == 0:
                continue
            per_level = [self.order_ranks(li, int(m)) for li, m in enumerate(mrow)]
            radix = [len(r) for r in per_level]
            n_o = math.prod(radix)
            if n_o > 2**62:
                raise UserError(f"{self.problem.describe()} on {self.arch.name}: {n_o:.3g} loop-order "
                                f"combinations per tiling are too many to enumerate; use the fast mapper")
            pairs_per = max(1, max_batch // n_o)
            for s in range(0, len(tiles), pairs_per):
                ti, ki = tiles[s:s + pairs_per], keeps[s:s + pairs_per]
                for o0 in range(0, n_o, max_batch):
                    o = np.arange(o0, min(n_o, o0 + max_batch), dtype=np.int64)
                    ranks = self._order_combo(per_level, radix, o)  # mixed radix, level 0 slowest
                    t_idx = np.repeat(ti, len(o))
                    k_idx = np.repeat(ki, len(o))
                    o_idx = np.tile(np.arange(len(o)), len(ti))
                    yield (MappingBatch(temporal[t_idx], sx[t_idx], sy[t_idx], ranks[o_idx],
                                        self.keep_options[k_idx]), t_idx, k_idx)

    def _order_combo(self, per_level: list[np.ndarray], radix: list[int], o: np.ndarray) -> np.ndarray:
        """Ranks [len(o), L, D] of order combinations number ``o`` (one class per level)."""
        out = np.empty((len(o), self.n_levels, len(self.dims)), dtype=ORDER_DTYPE)
        rest = o.copy()
        for li in reversed(range(self.n_levels)):
            rest, digit = np.divmod(rest, radix[li])
            out[:, li] = per_level[li][digit]
        return out

    def batch(self, rows: np.ndarray, ranks: np.ndarray, keep_idx: np.ndarray) -> MappingBatch:
        """A MappingBatch from tiling rows [B, D], ranks [B, L, D] and keep option indices [B]."""
        temporal, sx, sy = self.decode(rows)
        return MappingBatch(temporal, sx, sy, ranks, self.keep_options[keep_idx])


def _all_groups(tables: list[DimTable]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spatial groups of all tables in one array, with the rows of table d numbered from
    ``offset[d]``: the offsets, the groups' first rows and their factors [fan-outs, groups]."""
    offset = np.cumsum([0] + [len(t.table) for t in tables[:-1]])
    starts = np.concatenate([t.group_start[:-1] + o for t, o in zip(tables, offset, strict=True)])
    return offset, starts, np.concatenate([t.group_spatial for t in tables]).T.copy()
