"""The exhaustive mapper: the optimum of the mapspace, with pruning that never discards it.

What it skips, and why that is safe:

* tilings whose spatial factors exceed a fan-out are never generated, and (tiling, keep) pairs
  whose kept tiles overflow a level are not mappings at all (``Mapping.validate``'s rule);
* loop orders are enumerated one per class of :mod:`dse.mapspace.orders` (orders in a class give
  equal access counts, hence equal energy and latency);
* branch and bound: every (spatial unrolling, keep) pair gets lower bounds on energy and latency
  (:mod:`dse.mappers.bounds`; they hold for every tiling with that unrolling) and so on the
  objective; unrollings are visited best bound first, and a pair whose bound is no better than the
  incumbent cannot hold a strictly better mapping. With a Pareto
  set requested, a pair is skipped only if a found point is no worse than its bounds in both metrics.

An incumbent (for example the fast mapper's result, which lies in the same mapspace) may seed the
bound; the answer is then still the mapspace's optimum.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.errors import UserError
from costmodel.evaluate import evaluate_batch
from costmodel.mapping import MappingBatch
from dse.mappers.bounds import lower_bounds, stationary_ranks
from dse.mappers.objectives import Objective
from dse.mappers.result import MapperResult, ParetoPoint, concat, final_mapping
from dse.mappers.search_state import SearchState
from dse.mapspace import Mapspace

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem

POOL_ROWS = 4096
"""Surviving tilings pooled before their orders and keep options are expanded (see expand_pool):
the expansion's cost per active-dims group falls with the tilings it gets (a 16-channel 8 x 8 conv
on tpu_like: 36 s pooling 512, 26 s pooling 4096)."""

TIE = 1e-12
"""Scores (log domain) within this of the incumbent count as ties, which the incumbent wins: a
bound equal to a mapping's cost may come out below it by floating-point rounding, and on layers
whose optimum many tilings share exactly, such near-ties would otherwise never be pruned."""


def beyond_limits(ms: Mapspace, state: SearchState, complete: bool) -> UserError | None:
    """Why no mapping was chosen: none met the objective's limits (the error had blamed the budget
    and the buffers). None if the objective has no limits, or (nothing evaluated) the smallest
    tiles overflow a level: that is the reason then (:func:`no_fit_error`)."""
    obj = state.objective
    if not obj.limits() or not (state.evaluated or _overflow(ms) is None):
        return None
    found = (f"; the lowest latency among the {state.evaluated:,} valid mappings evaluated is "
             f"{state.lowest[1]:,.0f} cycles and the lowest energy {state.lowest[0]:,.6g} pJ" if state.evaluated else "")
    scope = ("the exhaustive search covered the mapspace (its lower bounds excluding what it did not evaluate): "
             "none exists" if complete else "a larger budget may find one")
    return UserError(f"{ms.problem.describe()} on {ms.arch.name}: no mapping found meets the objective's limits "
                     f"({obj.limits()}){found} ({scope})")


_NO_FANOUT_FIT = "no tiling fits the fan-outs under the constraints"


def _overflow(ms: Mapspace) -> str | None:
    """Why no tiling can fit: the fan-outs, or each level whose smallest possible kept tiles still
    overflow it; None when every level can hold its smallest tiles."""
    arch = ms.arch
    worst = None
    for rows in ms.iter_tilings(1 << 15):
        need = ms.kept_words(*ms.decode(rows)).min(axis=(0, 1))
        worst = need if worst is None else np.minimum(worst, need)
    if worst is None:
        return _NO_FANOUT_FIT
    over = [(arch.levels[i].name, int(worst[i]), int(ms.usable[i])) for i in range(ms.n_levels)
            if worst[i] > ms.usable[i]]
    return "; ".join(f"level {n} needs at least {w} words for the tensors it must keep, usable {u}"
                     for n, w, u in over) or None


def no_fit_error(ms: Mapspace, budget: int | None = None) -> UserError:
    """Why nothing fits: the level whose smallest possible kept tiles still overflow it. When no level
    does, a search that stopped after ``budget`` evaluations says so (a larger one may find a mapping)."""
    p, arch = ms.problem, ms.arch
    detail = _overflow(ms)
    if detail == _NO_FANOUT_FIT:
        return UserError(f"{p.describe()} has no mapping on {arch.name}: {detail}")
    if not detail and budget is not None:
        return UserError(f"{p.describe()}: no valid mapping on {arch.name} found within a budget of {budget:,} "
                         "evaluations (every level can hold its smallest tiles: a larger budget may find one)")
    detail = detail or "no combination of tiles fits every level at once"
    return UserError(f"{p.describe()} has no valid mapping on {arch.name}: {detail}")


def _order_bound(ms: Mapspace, obj: Objective, state: SearchState, rows: np.ndarray, fit: np.ndarray,
                 stats: dict[str, int], eval_kw: dict[str, Any]) -> np.ndarray:
    """Drop (tiling, keep) pairs that no loop order can make better than the incumbent.

    Per pair: the MAC and leakage bound, the exact minimum over orders of each rigid tensor's energy
    (one evaluation each, :func:`stationary_ranks`), and :mod:`bounds`' terms for the others. Worth it
    only where a pair has more order combinations than that costs evaluations."""
    best_orders = stationary_ranks(ms)
    if not best_orders:
        return fit
    t, sx, sy = ms.decode(rows)
    masks = ms.active_masks(t > 1)
    n_orders = np.ones(len(rows), np.int64)
    for li in range(ms.n_levels):
        counts = {int(m): len(ms.order_ranks(li, int(m))) for m in np.unique(masks[:, li])}
        n_orders *= np.array([counts[int(m)] for m in masks[:, li]])
    ti, ki = np.nonzero(fit & (n_orders > 2 * len(best_orders))[:, None])
    if ti.size == 0:
        return fit
    keep = ms.keep_options[ki]
    base, tensor_lb, lat_lb = lower_bounds(ms, t[ti], sx[ti], sy[ti], keep, per_tensor=True,
                                           overlap=eval_kw.get("overlap", True))
    for tj, ranks in best_orders.items():
        batch = MappingBatch(t[ti], sx[ti], sy[ti], np.broadcast_to(ranks, t[ti].shape), keep)
        ev = evaluate_batch(ms.problem, ms.arch, batch, check=False, **eval_kw)  # valid by construction
        stats["bound_evaluations"] = stats.get("bound_evaluations", 0) + len(batch)
        exact = ev.en.access[:, :, tj].sum(axis=(1, 2)) + ev.en.network[:, :, tj].sum(axis=1)
        tensor_lb[:, tj] = np.maximum(tensor_lb[:, tj], exact)
    e_lb = base + tensor_lb.sum(axis=1)
    skip = state.prunable(obj.bound(e_lb, lat_lb) + TIE, e_lb, lat_lb)
    stats["pairs_order_bound_pruned"] = stats.get("pairs_order_bound_pruned", 0) + int(skip.sum())
    out = fit.copy()
    out[ti[skip], ki[skip]] = False
    return out


def _tilings_all(ms: Mapspace, m: int, chunk: int, stats: dict[str, int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every tiling of spatial unrolling ``m`` with its fitting keep options ([C, D] rows, [C, K])."""
    lo, hi = ms.spatial_range(m)
    for c0 in range(lo, hi, chunk):
        rows = ms.tiling_rows(c0, min(hi, c0 + chunk))
        fit = ms.capacity_ok(*ms.decode(rows))
        stats["tilings_capacity_pruned"] += int((~fit.any(axis=1)).sum())
        yield rows, fit


def _tilings_bb(ms: Mapspace, obj: Objective, state: SearchState, m: int, chunk: int,
                stats: dict[str, int], deadline: float = np.inf, alive0: np.ndarray | None = None,
                overlap: bool = True) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The tilings of unrolling ``m`` (with the keep options still alive, [C, K]) that survive
    branch and bound over *partial* tilings: dims' temporal rows are chosen one dim at a time, and a
    (partial tiling, keep option) is dropped as soon as its bound (``lower_bounds(known=...)``,
    valid for every completion) cannot beat the incumbent, or its kept tiles with the unknown dims'
    temporal factors at 1 already overflow a level (tiles only grow with factors). Depth first, in
    chunks, so the incumbent the bounds meet is as good as possible and memory stays small."""
    combo = ms._spatial_combos[m]
    span = [(int(t.group_start[g]), int(t.group_start[g + 1])) for t, g in zip(ms.tables, combo)]
    n_d, n_k = len(span), len(ms.keep_options)
    dims = sorted(range(n_d), key=lambda d: span[d][0] - span[d][1])  # most rows first
    base = np.array([lo for lo, _ in span], dtype=np.int64)
    start = np.ones((1, n_k), bool) if alive0 is None else alive0[None, :]
    stack = [(0, base[None, :], start)]
    while stack:
        if time.perf_counter() > deadline:
            stats["complete"] = 0
            return
        depth, rows, alive = stack.pop()
        d = dims[depth]
        lo, hi = span[d]
        n = hi - lo
        if len(rows) * n > chunk and len(rows) > 1:  # split, keep memory bounded
            half = len(rows) // 2
            stack += [(depth, rows[half:], alive[half:]), (depth, rows[:half], alive[:half])]
            continue
        rows = np.repeat(rows, n, axis=0)
        rows[:, d] = np.tile(np.arange(lo, hi), len(rows) // n)
        alive = np.repeat(alive, n, axis=0)
        known = np.zeros(n_d, bool)
        known[dims[:depth + 1]] = True
        t, sx, sy = ms.decode(rows)
        t_known = np.where(known, t, 1)
        fit = alive & ms.capacity_ok(t_known, sx, sy)
        full = depth == n_d - 1
        if full:
            stats["tilings_capacity_pruned"] += int((alive.any(axis=1) & ~fit.any(axis=1)).sum())
        cols = np.nonzero(fit.any(axis=0))[0]  # keep options still alive somewhere in the chunk
        if cols.size == 0:
            continue
        e_lb, l_lb = lower_bounds(ms, t, sx, sy, known=known, options=cols, overlap=overlap)
        skip = np.ones(fit.shape, bool)
        skip[:, cols] = state.prunable(obj.bound(e_lb, l_lb) + TIE, e_lb, l_lb)
        stats["pairs_bound_pruned"] += int((fit & skip).sum())
        fit &= ~skip
        ok = fit.any(axis=1)
        if full:
            if ok.any():
                yield rows[ok], fit[ok]
        elif ok.any():
            stack.append((depth + 1, rows[ok], fit[ok]))


def exhaustive_map(problem: Problem, arch: Architecture, objective: Any = "edp", *, constraints: Any = None,
                   pareto: bool = False, prune: bool = True, incumbent: MapperResult | None = None,
                   batch_size: int = 32768, chunk: int = 4096, mapspace: Mapspace | None = None, time_limit_s: float | None = None,
                   **eval_kw: Any) -> MapperResult:
    """The best mapping in the mapspace for ``objective`` (see the module docstring).

    With ``time_limit_s`` the search may stop early; ``stats["complete"]`` then says 0 and the result
    is only the best found (not proven optimal).
    """
    t0 = time.perf_counter()
    deadline = np.inf if time_limit_s is None else t0 + time_limit_s
    obj = Objective.parse(objective)
    ms = mapspace or Mapspace(problem, arch, constraints)
    state = SearchState(obj, track_pareto=pareto)
    if incumbent is not None and not pareto:
        state.best_score = float(obj.score(incumbent.metrics["energy_pj"], incumbent.metrics["latency_cycles"]))
    stats = {"tilings": ms.num_tilings, "spatial_unrollings": ms.num_spatial, "spatial_bound_pruned": 0,
             "tilings_capacity_pruned": 0, "pairs_bound_pruned": 0, "complete": 1}
    # the bounds depend on a tiling only through its spatial unrolling (steps = MACs / spatial
    # product) and its keep option, so whole unrollings are bounded, sorted and pruned at once
    t_s, sx_s, sy_s = ms.spatial_factors()
    overlap = bool(eval_kw.get("overlap", True))
    e_lb, l_lb = lower_bounds(ms, t_s, sx_s, sy_s, overlap=overlap)  # [M, K]
    pair_lb = obj.bound(e_lb, l_lb) + TIE
    visit = np.argsort(pair_lb.min(axis=1), kind="stable") if prune else np.arange(ms.num_spatial)
    any_fit = False
    pending: list[MappingBatch] = []
    n_pending = [0]
    pool: list[tuple[np.ndarray, np.ndarray]] = []  # surviving (tilings, keep options), not yet expanded
    n_pool = [0]

    def flush() -> None:
        if pending:
            batch = concat(pending)
            pending.clear()
            n_pending[0] = 0
            state.update(batch, evaluate_batch(problem, arch, batch, check=False, **eval_kw))

    def expand_pool() -> None:
        """The pooled tilings' (order class, keep option) candidates into ``pending``. Why pooled:
        branch and bound yields a few tilings at a time, and one expansion costs about 0.1 ms
        however few it gets (on a 16-channel 8 x 8 conv: 108,000 expansions, a third of the time).
        Their order bound meets the incumbent of when the pool is expanded: never a candidate of
        the pool itself (the incumbent changes only in ``flush``), so the pruning stays safe."""
        if not pool:
            return
        rows, fit = (np.concatenate(parts) for parts in zip(*pool, strict=True))
        pool.clear()
        n_pool[0] = 0
        if prune:
            fit = _order_bound(ms, obj, state, rows, fit, stats, eval_kw)
        for batch, _, _ in ms.expand(rows, fit, max_batch=batch_size):
            pending.append(batch)
            n_pending[0] += len(batch)
            if n_pending[0] >= batch_size:  # few large batches: evaluation has overhead
                flush()
            if time.perf_counter() > deadline and (state.best is not None or incumbent is not None):
                stats["complete"] = 0  # (the rest of the pool is left out; with nothing found yet, go on)
                return

    for n, m in enumerate(visit):
        if time.perf_counter() > deadline:
            stats["complete"] = 0
            break
        skip = state.prunable(pair_lb[m], e_lb[m], l_lb[m]) if prune else np.zeros(len(e_lb[m]), bool)
        if skip.all():
            if not pareto:  # sorted by bound: no later unrolling can do better either
                stats["spatial_bound_pruned"] += len(visit) - n
                break
            stats["spatial_bound_pruned"] += 1
            continue
        for rows, fit in (_tilings_bb(ms, obj, state, int(m), chunk, stats, deadline, ~skip, overlap) if prune else
                          _tilings_all(ms, int(m), chunk, stats)):
            any_fit |= bool(fit.any())
            pool.append((rows, fit))
            n_pool[0] += len(rows)
            if n_pool[0] >= POOL_ROWS:
                expand_pool()
            if time.perf_counter() > deadline:
                break
    expand_pool()
    flush()
    if state.best is None and incumbent is None and (why := beyond_limits(ms, state, stats["complete"])):
        raise why
    if not any_fit and stats["complete"] and state.best is None and incumbent is None:
        raise no_fit_error(ms)
    stats["incumbent_kept"] = int(state.best is None)
    if state.best is None:  # the incumbent was optimal: nothing better exists
        if incumbent is None and not stats["complete"]:
            raise UserError(f"{problem.describe()} on {arch.name}: the exhaustive search reached its time limit "
                            f"({time_limit_s} s) before it evaluated a valid mapping; give it more time")
        if incumbent is None:
            raise no_fit_error(ms)
        best_mapping, metrics = incumbent.mapping, incumbent.metrics
    else:
        best_mapping, metrics = final_mapping(problem, arch, state.best, 0), state.best_metrics or {}
    front = None
    if pareto and state.front is not None:
        front = [ParetoPoint(float(e), float(lat), state.front.mapping(i, problem))
                 for i, (e, lat) in enumerate(zip(state.front_e, state.front_l))]
    return MapperResult(best_mapping, metrics, obj, "exhaustive", state.evaluated, time.perf_counter() - t0,
                        ms.size(), stats, front)
