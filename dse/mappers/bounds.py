"""Lower bounds on energy and latency of every mapping that shares a tiling and keep choice.

They let the exhaustive mapper skip a (tiling, keep) pair without evaluating its loop orders, and
they follow from the cost model's definitions (docs/semantics.md, costmodel/analysis.py):

* *MAC operands.* At every temporal step each PE consumes one element of I and W and produces one
  partial sum of O; the MACs store nothing, so these cross the link from the innermost level that
  keeps the tensor (its reads for I and W, its updates for O) whatever the loop order. Per step the
  PEs need at least ``D_T`` distinct elements even with multicast or spatial reduction: the product
  over the tensor's axes of the largest total spatial factor among the axis's dimensions (a sliding
  axis ``c*p + r`` has at least ``max(#p, #r)`` distinct values).
* *Compulsory traffic.* Every element of a tensor the layer touches (``N_T``) passes through every
  level that keeps it: for I and W at least ``N_T`` fills of each kept on-chip level and ``N_T`` reads
  of each kept level above the innermost; for O at least ``N_O`` updates of each kept level above
  the innermost.
* *Forced refetch* (depends on the temporal tiling, not on the orders). Take a link into a kept
  level ``c`` and the innermost level ``j < c`` with a temporal factor above 1 on a dimension that
  is rigid for the tensor (alone on an axis; for a tensor without sliding axes, any relevant
  dimension); let ``r`` be the product of those rigid factors at ``j`` and ``F`` the product of the
  temporal factors of the tensor's irrelevant dimensions at the levels above ``j``. Cut time into
  blocks of constant loop indices at the levels above ``j``: there are ``F`` blocks for each value
  of the relevant indices above ``j``, and in each block the loops at ``j`` sweep all ``r`` values of
  the rigid coordinate. A child holds one tile, so at a block's start it holds elements of one rigid
  value only; the block's other values, (r - 1)/r of the block's elements (a rigid coordinate splits
  the block evenly), must arrive during the block. Summed over blocks and over the child groups
  (every touched element belongs to some group's block), fills of ``c`` >= ``N_T * F * (r - 1) / r``
  (for any such ``j``: the bound takes the largest).
  For a tensor without sliding axes every tile change lands on a disjoint tile and the block's
  first tile differs from the held one, so the bound is the full ``N_T * F``. The same count bounds
  the parent's reads (I, W) or updates (O) on that link. With no such ``j`` the factor is 1.
* *Latency* (costmodel/latency.py). Compute cycles are at least the temporal steps ``S``, plus on a
  systolic config one fold's fill/drain/skew (``2R + C - 2`` or ``R + C - 2``: both fold modes charge
  it at least once). Per level, traffic cycles are at least those of the counts above. With overlap,
  the layer is ``ceil(pipe) + sum of the single-buffered levels' traffic`` with ``pipe`` at least
  ``max(compute, vector, moved + c_tile + v_last)``: ``moved`` the busiest double-buffered port
  (DRAM included); where staged levels exist ``c_tile = compute / tiles >= 1`` (tiles <= S) and the
  last output tile's vector passes ``v_last >= min(POST_OPS, V / S)`` (``V`` all vector cycles, a
  constant; 0 without a vector unit), else both are 0. The cap by the serial time
  ``compute + ceil(V) + sum of all traffic`` is no smaller. Without overlap it is that serial time.
* *Energy* is at least MACs * E_mac + leakage power * latency bound + those counts times the
  per-word energies, plus the network: a link's words (the parent's reads for I and W, its updates
  for O) cross every fan-out network from the parent's level down to the child's (hop_pj each).

The tests check ``bound <= evaluated`` on random mappings of many layers and configs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from costmodel.energy import PJ_PER_MW_S, level_vectors
from costmodel.mapping import ORDER_DTYPE
from dse.mapspace.orders import SLIDE

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem, Tensor
    from dse.mapspace import Mapspace


def touched(problem: Problem, t: Tensor) -> int:
    """Elements of ``t`` the loop nest touches: per axis the distinct values of its affine sum."""
    n = 1
    for axis in t.axes:
        n *= distinct_sums([(c, problem.sizes[d]) for c, d in axis])
    return n


def distinct_sums(terms: list[tuple[int, int]]) -> int:
    """|{Σ c_k i_k : 0 <= i_k < n_k}| for ``terms`` (c_k, n_k).

    Why not a set of the sums: a layer of one large dim (2**28 rows) made a set of that many
    integers (gigabytes). The longest term stays an interval: per residue of its coefficient the
    other terms' sums start runs of its indices, and the union of those runs is counted. (A negative
    coefficient mirrors its term, which moves the set and keeps its size: |c| serves.)"""
    terms = sorted((abs(c), n) for c, n in terms if c != 0 and n > 1)
    if not terms:
        return 1
    c_long, n_long = max(terms, key=lambda term: term[1])
    terms.remove((c_long, n_long))
    offsets = {0}
    for c, n in terms:
        offsets = {o + c * i for o in offsets for i in range(n)}
    runs: dict[int, list[int]] = {}
    for o in offsets:
        runs.setdefault(o % c_long, []).append(o // c_long)
    count = 0
    for starts in runs.values():
        end = min(starts)  # the end (exclusive) of the union so far, in indices of the long term
        for s in sorted(starts):
            count += max(0, s + n_long - max(s, end))
            end = max(end, s + n_long)
    return count


def _bw(values: list[float | None]) -> np.ndarray:
    return np.array([np.inf if v is None else float(v) for v in values])


def lower_bounds(ms: Mapspace, temporal: np.ndarray, sx: np.ndarray, sy: np.ndarray,
                 keep: np.ndarray | None = None, per_tensor: bool = False,
                 known: np.ndarray | None = None, options: np.ndarray | None = None,
                 overlap: bool = True) -> tuple[np.ndarray, ...]:
    """``(energy_lb, latency_lb)``, each [C, K], for tilings [C] with each keep option [K] of the
    mapspace; with ``keep`` [C, L, T] (one keep choice per tiling) both are [C]. With
    ``per_tensor``: ``(base, tensor_lb [..., T], latency_lb)`` where ``energy_lb = base +
    tensor_lb.sum(-1)`` and ``base`` is the MAC and leakage energy.

    ``known`` [D] (bool) makes it a bound for *partial* tilings: only those dims' temporal factors
    are taken as given, the others may be split any way (their spatial factors, hence the steps,
    are fixed). The forced refetch factor is monotone (never smaller when a factor is multiplied
    into any temporal slot), so evaluating it with the unknown dims' temporal factors at 1 bounds
    every completion; the other terms depend on the steps and spatial factors alone. ``options``
    (indices into the mapspace's keep options) restricts the K axis to those options; ``overlap`` is
    the cost model's option of the same name."""
    arch, problem = ms.arch, ms.problem
    paired = keep is not None
    if paired:
        keep = np.array(keep, dtype=bool)  # [C, L, T]
    else:  # [K, L, T]
        keep = ms.keep_options.copy() if options is None else ms.keep_options[options]
    keep[:, 0, :] = True
    n_lv = ms.n_levels
    levels = np.arange(n_lv)
    steps = temporal.prod(axis=(1, 2)).astype(np.float64)  # [C]
    spatial = (sx * sy).prod(axis=1)  # [C, D]
    dim_index = {d: i for i, d in enumerate(ms.dims)}

    def lift(x: np.ndarray) -> np.ndarray:
        """[K, L] per-option counts next to [C] per-tiling ones: -> [C, K, L] (or [C, L] paired)."""
        return x[:, :] if paired else x[None, :, :]

    steps_b = steps[:, None] if paired else steps[:, None, None]
    # next kept level below each level (n_lv: none, the MACs), per keep option: [K, L, T]
    nxt = np.full(keep.shape, n_lv, dtype=np.int64)
    for li in range(n_lv - 2, -1, -1):
        nxt[:, li] = np.where(keep[:, li + 1], li + 1, nxt[:, li + 1])
    # last kept level at or above each level (the parent of the link that crosses its network)
    par_le = np.maximum.accumulate(np.where(keep, levels[None, :, None], 0), axis=1)
    v = level_vectors(arch)
    read_bw, write_bw = _bw([lv.read_bw for lv in arch.levels]), _bw([lv.write_bw for lv in arch.levels])
    # a level without bandwidth limits takes no traffic cycles: its columns stay out of the
    # [C, K, L] traffic sums (on a deep config, the PE-local levels)
    timed = np.isfinite(read_bw) | np.isfinite(write_bw)
    reads, writes, tensor_lb = [], [], []  # per tensor
    refetch_t = temporal if known is None else np.where(known, temporal, 1)
    multicast = np.array([lv.multicast for lv in arch.levels])
    reduction = np.array([lv.spatial_reduction for lv in arch.levels])
    for ti, t in enumerate(problem.tensors):
        # a tensor's terms depend on its own keep column only: work on its distinct columns (a
        # handful, against 128 options on a deep config), then spread them over the options
        if paired:
            kept, nxt_t, par_t, spread = keep[:, :, ti], nxt[:, :, ti], par_le[:, :, ti], None
        else:
            _, first, spread = np.unique(keep[:, :, ti], axis=0, return_index=True, return_inverse=True)
            kept, nxt_t, par_t = keep[first, :, ti], nxt[first, :, ti], par_le[first, :, ti]
        distinct = np.ones(len(temporal), dtype=np.float64)
        for axis in t.axes:
            distinct *= spatial[:, [dim_index[d] for _, d in axis]].max(axis=1)
        links = _Links(ms, ti, kept, nxt_t, par_t, sx * sy, paired)
        refetch = forced_refetch(ms, refetch_t, ti)
        n_t = float(touched(problem, t))
        # the words of the link whose parent is each level: its child's forced refetch, or the MAC operands
        words = np.where(links.nxt == n_lv, lift_c(steps * distinct, paired), n_t * links.at(refetch, links.nxt))
        fill = n_t * refetch[:, :n_lv] * links.copies[:, :n_lv]  # [C, L]: fills of each level as a child
        child = lift((kept & (levels[None, :] > 0)).astype(np.float64))
        if t.is_output:
            w_t, hops = links.flow(words, reduction)  # updates
            r_t = 0.0
            if SLIDE not in ms.roles[ti]:  # read-backs: every entry but each group's first of an element
                r_t, back = links.flow(words - n_t, multicast)
                hops = hops + back
                w_t = w_t + child * links.per_level(fill - n_t * links.copies[:, :n_lv])
        else:
            r_t, hops = links.flow(words, multicast)
            w_t = child * links.per_level(fill)
        shape = hops.shape
        r_t, w_t = np.broadcast_to(r_t, shape), np.broadcast_to(w_t, shape)
        e_t = r_t @ v["read_pj"] + w_t @ v["write_pj"] + hops @ v["hop_pj"]
        reads.append((r_t[..., timed], spread))
        writes.append((w_t[..., timed], spread))
        tensor_lb.append((e_t, spread))
    per_level = (sx * sy).prod(axis=2)  # [C, L]
    busy = np.concatenate([np.ones_like(per_level[:, :1]), np.cumprod(per_level, axis=1)[:, :-1]], axis=1)
    busy = busy[:, timed].astype(np.float64) if paired else busy[:, None, timed].astype(np.float64)
    rd, wr = _cycles(_total(reads), busy, read_bw[timed]), _cycles(_total(writes), busy, write_bw[timed])
    latency = latency_bound(arch, problem, steps_b[..., 0], np.maximum(rd, wr, out=rd), overlap, timed)
    leak_mw = v["leak_mw"].sum() + arch.mac.leak_mw * arch.num_pes  # + the idle vector unit (energy.py)
    leak_mw += 0.0 if arch.vector_unit is None else arch.vector_unit.leak_mw
    base = problem.macs * arch.mac.energy_pj + leak_mw * PJ_PER_MW_S * latency / arch.clock_hz
    if per_tensor:
        spread_out = [e if s is None else np.take(e, s, axis=1) for e, s in tensor_lb]
        return base, np.stack(spread_out, axis=-1), latency
    return base + _total(tensor_lb), latency


def _total(parts: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
    """The sum of the tensors' parts ([C, K_t, ...], spread over the K keep options by each one's
    index array [K]; or [C, ...] per tiling, index None), left to right (the rounding of
    ``np.stack(parts, -1).sum(-1)``): gathered and added in one compiled pass per part, where
    three gathers into [C, K, L] temporaries and their sums cost a deep config's search 5 %."""
    first, spread = parts[0]
    if spread is None:
        out = first
        for p, _ in parts[1:]:
            out += p
        return out
    out = np.empty((first.shape[0], len(spread), *first.shape[2:]))
    inner = math.prod(first.shape[2:])  # explicit: -1 is ambiguous for no tilings
    flat = out.reshape(out.shape[0], out.shape[1], inner)
    for i, (p, spread) in enumerate(parts):
        _spread_add(flat, p.reshape(p.shape[0], p.shape[1], inner), spread, i == 0)
    return out


@njit(cache=True)
def _spread_add(out, part, spread, first):
    """``out[c, k] (+)= part[c, spread[k]]`` (assigned for the first part)."""
    for c in range(out.shape[0]):
        for k in range(out.shape[1]):
            src = spread[k]
            for j in range(out.shape[2]):
                if first:
                    out[c, k, j] = part[c, src, j]
                else:
                    out[c, k, j] += part[c, src, j]


def _cycles(words: np.ndarray, busy: np.ndarray, bw: np.ndarray) -> np.ndarray:
    """``ceil(words / busy / bw)``, computed in ``words`` (no [C, K, L] temporaries)."""
    np.divide(words, busy, out=words)
    np.divide(words, bw, out=words)
    return np.ceil(words, out=words)


def _fold(ufunc: np.ufunc, a: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``ufunc`` over the columns ``cols`` of ``a`` [..., L], from 0, column by column: a reduction
    over a short last axis is slow."""
    out = np.zeros(a.shape[:-1])
    for j in cols:
        ufunc(out, a[..., j], out=out)
    return out


def latency_bound(arch: Architecture, problem: Problem, steps: np.ndarray, per_level: np.ndarray,
                  overlap: bool = True, timed: np.ndarray | None = None) -> np.ndarray:
    """Cycles no mapping with ``steps`` temporal steps and at least ``per_level`` [..., L] traffic
    cycles per level can beat (module docstring, *Latency*); with ``timed`` [L] (bool), the columns
    of ``per_level`` are those levels' only and the others take no traffic cycles."""
    from costmodel.latency import fold_overhead
    from costmodel.pipeline import POST_OPS, staged_levels

    sys_ = arch.systolic
    compute = steps + (0 if sys_ is None else int(fold_overhead(sys_.dataflow, sys_.rows, sys_.cols)))
    vu = arch.vector_unit
    vector = 0.0 if vu is None else float(POST_OPS * -(-problem.tensor_elements(problem.output.name) // vu.lanes))
    if not overlap:
        return compute + np.ceil(vector) + per_level.sum(axis=-1)
    db = np.array([i == 0 or lv.double_buffered or lv.ideal_overlap for i, lv in enumerate(arch.levels)])
    if timed is not None:
        db = db[timed]
    moved = _fold(np.maximum, per_level, np.nonzero(db)[0])  # cycles are >= 0: a level left out adds nothing
    tail = 0.0
    if staged_levels(arch):
        tail = 1.0 + (np.minimum(POST_OPS, vector / steps) if vu is not None else 0.0)
    pipe = np.maximum(np.maximum(compute, vector), moved + tail)
    return np.ceil(pipe - 1e-9) + _fold(np.add, per_level, np.nonzero(~db)[0])  # whole cycles: exact sums


def lift_c(x: np.ndarray, paired: bool) -> np.ndarray:
    """Per-tiling values [C] next to [C, K, L] (or [C, L] paired) counts."""
    return x[:, None] if paired else x[:, None, None]


class _Links:
    """One tensor's links (parent -> next kept level below) for tilings [C] and keep options [K]
    (or one keep choice per tiling, ``paired``), and the *copies* of a link's words (module
    docstring): ``copies[:, n]`` is the product over networks above level ``n`` of the spatial
    factors of dims the tensor does not use."""

    def __init__(self, ms: Mapspace, ti: int, kept: np.ndarray, nxt: np.ndarray, par_le: np.ndarray,
                 spatial: np.ndarray, paired: bool) -> None:
        t = ms.problem.tensors[ti]
        irr = np.array([d not in t.dims() for d in ms.dims])
        self.irr_f = np.where(irr[None, None, :], spatial, 1).prod(axis=2).astype(np.float64)  # [C, L]
        self.ones = np.ones((len(spatial), 1))
        self.copies = np.concatenate([self.ones, np.cumprod(self.irr_f, axis=1)], axis=1)  # [C, L + 1]
        self.kept, self.nxt, self.par_le, self.paired = kept, nxt, par_le, paired
        self.levels = np.broadcast_to(np.arange(kept.shape[1]), nxt.shape)

    def at(self, a: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Per-tiling values [C, L + 1] at per-option level indices (-> [C, K, L], or [C, L] paired)."""
        return np.take_along_axis(a, idx, axis=1) if self.paired else a[:, idx]

    def per_level(self, x: np.ndarray) -> np.ndarray:
        """Per-tiling values [C, L] next to the counts' shape."""
        return x if self.paired else x[:, None, :]

    def flow(self, words: np.ndarray, merges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(count, hops)``: the parent's count of each link -- ``words`` per group of child
        instances that the networks between do not merge (``merges`` [L]: the network below each
        level combines copies) -- and the link's words crossing each fan-out, once per group of
        receiving instances that no network between merges."""
        m = np.concatenate([self.ones, np.cumprod(np.where(merges, self.irr_f, 1.0), axis=1)], axis=1)
        kept = self.kept[:, :] if self.paired else self.kept[None, :, :]
        count = words * self.at(self.copies, self.nxt) * self.at(m, self.levels) / self.at(m, self.nxt) * kept
        idx = self.par_le if self.paired else np.broadcast_to(self.par_le[None], count.shape)
        hops = np.take_along_axis(count, idx, axis=-1) * self.per_level(m[:, 1:]) / self.at(m, self.par_le)
        return count, hops


def forced_refetch(ms: Mapspace, temporal: np.ndarray, ti: int) -> np.ndarray:
    """[C, L + 1]: the *forced refetch* factor (module docstring) of tensor ``ti`` on the link into
    each child level ``c`` (``c = L``, the MACs, is left at 1: that link has its own bound)."""
    from dse.mapspace.orders import IRR, RIGID, SLIDE

    roles = np.array(ms.roles[ti])
    sliding = bool((roles == SLIDE).any())
    rigid = roles == RIGID if sliding else roles != IRR
    irr = roles == IRR
    t = temporal.astype(np.float64)
    rig_f = np.where(rigid[None, None, :], t, 1.0).prod(axis=2)  # [C, L]
    irr_f = np.where(irr[None, None, :], t, 1.0).prod(axis=2)
    irr_above = np.concatenate([np.ones((len(t), 1)), np.cumprod(irr_f, axis=1)], axis=1)  # [C, L + 1]
    n_lv = t.shape[1]
    out = np.ones((len(t), n_lv + 1))
    # the argument holds for every level j above c with r_j > 1; the best j for a tensor without
    # sliding axes is the innermost one (F only grows inward); with sliding axes take the max of
    # F_j (r_j - 1) / r_j. Both forms never decrease when a factor grows (monotone: partial bounds)
    term = np.where(rig_f > 1, irr_above[:, :n_lv] * (1 - 1 / rig_f) if sliding else irr_above[:, :n_lv], 1.0)
    out[:, 1:n_lv] = np.maximum(1.0, np.maximum.accumulate(term, axis=1)[:, :n_lv - 1])  # compulsory: >= 1
    return out


def stationary_ranks(ms: Mapspace) -> dict[int, np.ndarray]:
    """For each tensor whose every index is *rigid* (alone on an axis: W and O of a conv, all of a
    matmul), the order [L, D] that minimizes all of its counts at once: at every level its
    irrelevant loops innermost. For such a tensor every step that changes a relevant loop moves the
    full tile, so each link's count is the tile times the steps outside the innermost run of
    irrelevant loops, and this order makes that run as long as possible at every link together
    (dse/mapspace/orders.py). Evaluating it gives the exact minimum of the tensor's energy over all
    orders of a tiling -- a lower bound for the pair's orders."""
    from dse.mapspace.orders import IRR, SLIDE

    out = {}
    for ti, roles in enumerate(ms.roles):
        if SLIDE in roles:
            continue
        first = [d for d, r in enumerate(roles) if r != IRR] + [d for d, r in enumerate(roles) if r == IRR]
        ranks = np.argsort(np.array(first)).astype(ORDER_DTYPE)
        out[ti] = np.repeat(ranks[None, :], ms.n_levels, axis=0)
    return out
