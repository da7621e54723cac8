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
* *Latency* is at least the temporal steps (every mode adds traffic, fill/drain or fold overhead to
  that) and at least each level's traffic cycles computed from the counts above (overlap takes a
  max, no overlap a sum; both are at least the max).
* *Energy* is at least MACs * E_mac + leakage power * latency bound + those counts times the
  per-word energies (network hops are non-negative and left out).

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
                 keep: np.ndarray | None = None, per_tensor: bool = False) -> tuple[np.ndarray, ...]:
    """``(energy_lb, latency_lb)``, each [C, K], for tilings [C] with each keep option [K] of the
    mapspace; with ``keep`` [C, L, T] (one keep choice per tiling) both are [C]. With
    ``per_tensor``: ``(base, tensor_lb [..., T], latency_lb)`` where ``energy_lb = base +
    tensor_lb.sum(-1)`` and ``base`` is the MAC and leakage energy."""
    arch, problem = ms.arch, ms.problem
    paired = keep is not None
    keep = np.array(keep, dtype=bool) if paired else ms.keep_options.copy()  # [K or C, L, T]
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
        above = (kept & ~par).astype(np.float64)
        r_t = 0.0
        w_t = 0.0
        if t.is_output:
            w_t = lift(above) * n_t + lift(par.astype(np.float64)) * mac_link
        else:
            r_t = lift(above) * n_t + lift(par.astype(np.float64)) * mac_link
            w_t = lift((kept & (levels[None, :] > 0)).astype(np.float64)) * n_t
        reads = reads + r_t
        writes = writes + w_t
        parts.append((r_t, w_t))
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
    if per_tensor:
        zero = np.zeros_like(reads)
        tensor = np.stack([((r + zero) * v["read_pj"]).sum(axis=-1) + ((w + zero) * v["write_pj"]).sum(axis=-1)
                           for r, w in parts], axis=-1)
        return base, tensor, latency
    energy = base + (reads * v["read_pj"]).sum(axis=-1) + (writes * v["write_pj"]).sum(axis=-1)
    return energy, latency


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
