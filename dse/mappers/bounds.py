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
* *Latency* is at least the temporal steps (every mode adds traffic, fill/drain or fold overhead to
  that) and at least each level's traffic cycles computed from the counts above (overlap takes a
  max, no overlap a sum; both are at least the max).
* *Energy* is at least MACs * E_mac + leakage power * latency bound + those counts times the
  per-word energies, plus the network: a link's words (the parent's reads for I and W, its updates
  for O) cross every fan-out network from the parent's level down to the child's (hop_pj each).

The tests check ``bound <= evaluated`` on random mappings of many layers and configs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from costmodel.energy import PJ_PER_MW_S, level_vectors

if TYPE_CHECKING:
    from costmodel.problem import Problem, Tensor
    from dse.mapspace import Mapspace


def touched(problem: Problem, t: Tensor) -> int:
    """Elements of ``t`` the loop nest touches: per axis the distinct values of its affine sum."""
    sizes = problem.sizes
    n = 1
    for axis in t.axes:
        vals = {0}
        for c, d in axis:
            vals = {v + c * i for v in vals for i in range(sizes[d])}
        n *= len(vals)
    return n


def _bw(values: list[float | None]) -> np.ndarray:
    return np.array([np.inf if v is None else float(v) for v in values])


def lower_bounds(ms: Mapspace, temporal: np.ndarray, sx: np.ndarray, sy: np.ndarray,
                 keep: np.ndarray | None = None, per_tensor: bool = False,
                 known: np.ndarray | None = None, options: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``(energy_lb, latency_lb)``, each [C, K], for tilings [C] with each keep option [K] of the
    mapspace; with ``keep`` [C, L, T] (one keep choice per tiling) both are [C]. With
    ``per_tensor``: ``(base, tensor_lb [..., T], latency_lb)`` where ``energy_lb = base +
    tensor_lb.sum(-1)`` and ``base`` is the MAC and leakage energy.

    ``known`` [D] (bool) makes it a bound for *partial* tilings: only those dims' temporal factors
    are taken as given, the others may be split any way (their spatial factors, hence the steps,
    are fixed). The forced refetch factor is monotone (never smaller when a factor is multiplied
    into any temporal slot), so evaluating it with the unknown dims' temporal factors at 1 bounds
    every completion; the other terms depend on the steps and spatial factors alone. ``options``
    (indices into the mapspace's keep options) restricts the K axis to those options."""
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
    parent = np.where(keep, levels[None, :, None], -1).max(axis=1)  # [K, T]
    is_parent = levels[None, :, None] == parent[:, None, :]  # [K, L, T]
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
    reads = 0.0
    writes = 0.0
    parts = []
    for ti, t in enumerate(problem.tensors):
        distinct = np.ones(len(temporal), dtype=np.float64)
        for axis in t.axes:
            distinct *= spatial[:, [dim_index[d] for _, d in axis]].max(axis=1)
        mac_link = (steps * distinct)[:, None] if paired else (steps * distinct)[:, None, None]
        n_t = float(touched(problem, t))
        kept, par = keep[:, :, ti], is_parent[:, :, ti]
        refetch = forced_refetch(ms, temporal if known is None else np.where(known, temporal, 1), ti)
        fill_c = n_t * refetch[:, :n_lv]  # [C, L]: fills of level c when kept
        # the link from each level to the next kept one below it: [C, L] paired, else [C, K, L]
        link = n_t * (np.take_along_axis(refetch, nxt[:, :, ti], axis=1) if paired else refetch[:, nxt[:, :, ti]])
        above = (kept & ~par).astype(np.float64)
        par_f = lift(par.astype(np.float64))
        r_t = 0.0
        w_t = 0.0
        fill_b = fill_c if paired else fill_c[:, None, :]
        if t.is_output:
            w_t = lift(above) * link + par_f * mac_link
        else:
            r_t = lift(above) * link + par_f * mac_link
            w_t = lift((kept & (levels[None, :] > 0)).astype(np.float64)) * fill_b
        reads = reads + r_t
        writes = writes + w_t
        # network: a link's words cross every fan-out network from its parent down to its child
        per_parent = w_t if t.is_output else r_t
        idx = par_le[:, :, ti] if paired else np.broadcast_to(par_le[None, :, :, ti], per_parent.shape)
        parts.append((r_t, w_t, np.take_along_axis(per_parent, idx, axis=-1)))
    reads = reads + np.zeros_like(steps_b)
    writes = writes + np.zeros_like(steps_b)
    per_level = (sx * sy).prod(axis=2)  # [C, L]
    busy = np.concatenate([np.ones_like(per_level[:, :1]), np.cumprod(per_level, axis=1)[:, :-1]], axis=1)
    busy = busy.astype(np.float64) if paired else busy[:, None, :].astype(np.float64)
    rd = np.ceil(reads / busy / _bw([lv.read_bw for lv in arch.levels]))
    wr = np.ceil(writes / busy / _bw([lv.write_bw for lv in arch.levels]))
    latency = np.maximum(np.maximum(rd, wr).max(axis=-1), steps_b[..., 0])
    v = level_vectors(arch)
    leak_mw = v["leak_mw"].sum() + arch.mac.leak_mw * arch.num_pes
    base = problem.macs * arch.mac.energy_pj + leak_mw * PJ_PER_MW_S * latency / arch.clock_hz
    zero = np.zeros_like(reads)
    tensor = np.stack([((r + zero) * v["read_pj"]).sum(axis=-1) + ((w + zero) * v["write_pj"]).sum(axis=-1)
                       + (h * v["hop_pj"]).sum(axis=-1) for r, w, h in parts], axis=-1)
    if per_tensor:
        return base, tensor, latency
    return base + tensor.sum(axis=-1), latency


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
        ranks = np.argsort(np.array(first))
        out[ti] = np.repeat(ranks[None, :], ms.n_levels, axis=0)
    return out
