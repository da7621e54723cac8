"""The fast mapper (default): evolution over tilings, loop orders and keep choices, then an iterated
descent by a pool of walkers; seeded, deterministic, with an evaluation budget.

1. Random valid candidates, half of them inside the (spatial unrolling, keep option) pairs with the
   best lower bounds (:func:`top_pairs`), then generations of crossover and mutation from an elite
   (:mod:`dse.mappers.evolution`), for ``explore`` of the budget at most.
2. The descent (:mod:`dse.mappers.descent`) starts from the best few candidates with distinct keep
   options and goes on with kicks of the incumbent until the budget is spent or ``patience`` kicks in
   a row bring nothing.

With ``victory`` set, either phase also ends the search once that many evaluations in a row have not
improved the best score (Timeloop's victory condition, counted in evaluations). It is off by default:
this search improves in late jumps (a kick lands in a new basin), and a fifth of the budget as the
condition left zoo layers up to 1.5x above the full budget's EDP (docs/mapper.md).

Candidates are hashed, so none is evaluated twice (:mod:`dse.mappers.genomes`). Deterministic for a
given seed and budget (everything runs in one process, in one order); ``time_limit_s`` stops early
(results then depend on machine speed, so tests use the evaluation budget).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from dse.mappers.bounds import lower_bounds
from dse.mappers.descent import Descent
from dse.mappers.evolution import diverse, evolve, initial
from dse.mappers.exhaustive import beyond_limits, no_fit_error
from dse.mappers.genomes import Evaluator
from dse.mappers.moves import MoveTables
from dse.mappers.objectives import Objective
from dse.mappers.result import MapperResult, ParetoPoint, final_mapping
from dse.mappers.search_state import SearchState
from dse.mapspace import Mapspace

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem


def fast_map(problem: Problem, arch: Architecture, objective: Any = "edp", *, constraints: Any = None,
             seed: int = 0, max_evaluations: int = 20_000, time_limit_s: float | None = None,
             population: int = 1024, elite: int = 64, explore: float = 0.25, generations: int = 64,
             starts: int = 4, width: int = 8, patience: int = 60, victory: int | None = None,
             pareto: bool = False, mapspace: Mapspace | None = None, **eval_kw: Any) -> MapperResult:
    """A good mapping within ``max_evaluations`` cost-model evaluations (see the module docstring)."""
    t0 = time.perf_counter()
    obj = Objective.parse(objective)
    ms = mapspace or Mapspace(problem, arch, constraints)
    if ms.num_tilings == 0:
        raise no_fit_error(ms)
    rng = np.random.default_rng(seed)
    state = SearchState(obj, track_pareto=pareto)
    deadline = t0 + time_limit_s if time_limit_s is not None else np.inf
    ev = Evaluator(ms, state, max(1, int(max_evaluations * explore)), deadline, eval_kw, victory)
    moves = MoveTables(ms.tables)
    pairs = top_pairs(ms, obj, 64)
    pop = initial(ms, rng, min(4 * population, max(population, ev.budget // 3)), pairs)
    scores = ev(pop)
    for _ in range(20):  # tight spaces: keep drawing until something fits
        if np.isfinite(scores).any() or ev.left() <= 0:
            break
        pop = initial(ms, rng, 4 * population, pairs)
        scores = ev(pop)
    if not np.isfinite(scores).any():
        raise beyond_limits(ms, state, complete=False) or no_fit_error(ms, max_evaluations)
    pop, scores = evolve(ms, moves, rng, ev, pop, scores, population, elite, generations)
    ev.budget = max_evaluations
    top = diverse(scores, pop.keep, starts)
    if top.size and ev.left() > 0:
        Descent(ms, moves, rng, ev).run(pop.take(top), scores[top], width, patience)
    best = final_mapping(problem, arch, state.best, 0)
    front = None
    if pareto and state.front is not None:
        front = [ParetoPoint(float(e), float(lat), state.front.mapping(i, problem))
                 for i, (e, lat) in enumerate(zip(state.front_e, state.front_l))]
    stats = {"tilings": ms.num_tilings, "improved_at": state.improved_at}  # evaluations at the last improvement
    if victory is not None:
        stats["victory"] = victory
    return MapperResult(best, state.best_metrics or {}, obj, "fast", state.evaluated, time.perf_counter() - t0,
                        ms.size(), stats, front, seed)


def top_pairs(ms: Mapspace, obj: Objective, n: int, screen: int = 1024) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``n`` (spatial unrolling, keep option) pairs with the best lower bounds, among the
    ``screen`` unrollings that use the most PEs (bounding every unrolling of a 32x32 mesh with 128 keep
    options took seconds). The bounds rank both well: a keep choice that starves the array has a bound
    above the optimum's score."""
    if not ms.num_spatial:
        return None
    cand = _smallest(-ms.spatial_pes(), screen)
    e_lb, l_lb = lower_bounds(ms, *ms.spatial_factors(cand))
    m, k = np.unravel_index(_smallest(obj.bound(e_lb, l_lb).ravel(), n), e_lb.shape)
    return cand[m], k


def _smallest(values: np.ndarray, n: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")[:n]`` without sorting them all (a deep config bounds
    64k pairs to keep 64): the values below the n-th smallest, then as many equal to it as fit, in
    index order, sorted stably."""
    if n >= values.size:
        return np.argsort(values, kind="stable")
    kth = np.partition(values, n - 1)[n - 1]
    if np.isnan(kth):  # NaNs sort last: fewer than n numbers
        return np.argsort(values, kind="stable")[:n]
    below = np.flatnonzero(values < kth)
    picked = np.union1d(below, np.flatnonzero(values == kth)[: n - below.size])  # sorted indices
    return picked[np.argsort(values[picked], kind="stable")]
