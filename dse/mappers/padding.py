"""Imperfect factors: search padded loop bounds where the config allows padding (``mapspace.padding``).

A prime or awkward loop bound fits a fan-out badly: ``K = 17`` on a 16-wide array runs 17 folds of one
column (only perfect factors 1 and 17), while ``K`` padded to 18 runs as 9 columns x 2 folds. The
padded mapspace is the union of the mapspaces of a few *padded problems* (the layer with some bounds
enlarged, :func:`costmodel.padding.padded_problem`); a padded problem is costed as what it executes,
padded MACs and tiles included, so padding wins only where the better fit pays for the extra work.

Which padded bounds are searched (:func:`candidate_sizes`), per dimension of size ``D`` that the
config lets pad: the sizes ``D' in (D, floor(D * (1 + max_fraction))]``, smallest first, that need
strictly fewer folds on some fan-out the dimension may be unrolled on (the fan-out's size, and the
product of all of them), or have strictly more divisors, than every size from ``D`` to ``D' - 1``;
at most ``max_candidates``. The padded problems are the combinations of those per-dimension choices,
least padded MACs first, at most ``max_problems``, after the unpadded one.

:func:`map_padded` runs the chosen mapper on every problem and keeps the best under the objective
(the first on ties, so the unpadded problem wins a tie). With the exhaustive mapper every problem is
searched to its optimum, with the best result so far as the incumbent, so the answer is the optimum
of the declared padded mapspace.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.errors import UserError
from costmodel.padding import padded_problem, padding_limit
from dse.mappers.objectives import Objective, pareto_mask
from dse.mappers.result import MapperResult, ParetoPoint
from dse.mapspace import constraints as cons
from dse.mapspace.factorizations import divisors

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem

Search = Callable[..., MapperResult]


def _folds(n: int, cap: int) -> int:
    """Temporal steps left when ``n`` is unrolled as far as a fan-out of ``cap`` allows with a
    perfect factor: ``n / (largest divisor of n that is <= cap)``."""
    return n // max(d for d in divisors(n) if d <= cap)


def dim_caps(problem: Problem, arch: Architecture, constraints: Any = None) -> dict[str, list[int]]:
    """Per dimension, the fan-out sizes it may be unrolled on (config and user constraints), plus
    their product when there are several."""
    names = tuple(lv.name for lv in arch.levels)
    merged = cons.parse_entries(arch.constraints, names, arch.source)
    user = cons.load_constraints_file(constraints) if isinstance(constraints, (str, bytes)) or \
        hasattr(constraints, "read_text") else constraints
    for level, fields in cons.parse_entries(user, names, "constraints").items():
        merged.setdefault(level, {}).update(fields)
    out: dict[str, list[int]] = {}
    for d in problem.dim_names:
        caps = []
        for lv in arch.levels:
            for axis, cap in (("spatial_x", lv.fanout_x), ("spatial_y", lv.fanout_y)):
                spec = merged.get(lv.name, {}).get(axis)
                if cap > 1 and (spec is None or d in spec):
                    caps.append(cap)
        out[d] = caps + ([math.prod(caps)] if len(caps) > 1 else [])
    return out


def candidate_sizes(size: int, caps: list[int], max_fraction: float, max_candidates: int) -> list[int]:
    """Padded bounds worth searching for one dimension (module docstring), smallest first."""
    best_folds = [_folds(size, c) for c in caps]
    best_div = len(divisors(size))
    out = []
    for n in range(size + 1, padding_limit(size, max_fraction) + 1):
        if len(out) == max_candidates:
            break
        folds = [_folds(n, c) for c in caps]
        n_div = len(divisors(n))
        if any(f < b for f, b in zip(folds, best_folds)) or n_div > best_div:
            out.append(n)
        best_folds = [min(f, b) for f, b in zip(folds, best_folds)]
        best_div = max(best_div, n_div)
    return out


def padded_candidates(problem: Problem, arch: Architecture, constraints: Any = None) -> list[dict[str, int]]:
    """The padded problems to search besides the unpadded one, as ``{dim: padded bound}``, least
    padded MACs first (empty when the config allows no padding)."""
    allow = arch.padding
    if allow is None:
        return []
    caps = dim_caps(problem, arch, constraints)
    choices = []
    for d, n in problem.dims:
        extra = [] if allow.dims is not None and d not in allow.dims else \
            candidate_sizes(n, caps[d], allow.max_fraction, allow.max_candidates)
        choices.append([n, *extra])
    combos = [c for c in itertools.product(*choices) if c != tuple(n for _, n in problem.dims)]
    combos.sort(key=lambda c: (math.prod(c), c))
    dims = problem.dim_names
    return [{d: v for d, v, (_, n) in zip(dims, c, problem.dims) if v != n} for c in combos[:allow.max_problems]]


def _score(obj: Objective, res: MapperResult) -> float:
    return float(obj.score(res.metrics["energy_pj"], res.metrics["latency_cycles"]))


def _mark(res: MapperResult, problem: Problem, arch: Architecture, pad: dict[str, int]) -> MapperResult:
    """A padded problem's result as a result for the real layer: the mapping records its padded bounds
    (validated against the config's allowance), utilization counts the real MACs."""
    if not pad:
        return res
    ordered = tuple((d, pad[d]) for d in problem.dim_names if d in pad)

    def real(m: Any) -> Any:
        return dataclasses.replace(m, padded=ordered)

    mapping = real(res.mapping)
    mapping.validate(problem, arch, where="padded mapper result")
    metrics = dict(res.metrics)
    metrics["utilization"] *= problem.macs / padded_problem(problem, pad).macs
    front = None if res.pareto is None else [ParetoPoint(p.energy_pj, p.latency_cycles, real(p.mapping))
                                             for p in res.pareto]
    return dataclasses.replace(res, mapping=mapping, metrics=metrics, pareto=front)


def map_padded(problem: Problem, arch: Architecture, obj: Objective, search: Search, *, exhaustive: bool,
               pareto: bool, constraints: Any = None, **kw: Any) -> MapperResult:
    """The best of ``search(problem')`` over the unpadded and the padded problems (module docstring).

    ``search(problem, incumbent=...)`` maps one problem; with ``exhaustive`` it is given the best
    result so far (of whichever problem) as its incumbent and reports ``stats["incumbent_kept"]``
    when nothing in its mapspace beats it."""
    pads: list[dict[str, int]] = [{}, *padded_candidates(problem, arch, constraints)]
    best: tuple[float, MapperResult] | None = None
    first_error: UserError | None = None
    evaluated, seconds, complete, searched = 0, 0.0, 1, 0
    points: list[ParetoPoint] = []
    for pad in pads:
        incumbent = best[1] if exhaustive and best is not None and not pareto else None
        try:
            res = search(padded_problem(problem, pad), constraints=constraints, incumbent=incumbent, **kw)
        except UserError as exc:  # contradictory constraints or nothing fits for this bound: not in the space
            first_error = first_error or exc
            continue
        searched += 1
        evaluated += res.mappings_evaluated
        seconds += res.search_seconds
        complete = min(complete, int(res.stats.get("complete", 1)))
        if res.stats.get("incumbent_kept"):
            continue
        res = _mark(res, problem, arch, pad)
        points += res.pareto or []
        if best is None or _score(obj, res) < best[0]:
            best = (_score(obj, res), res)
    if best is None:
        assert first_error is not None
        raise first_error
    out = best[1]
    stats = {**out.stats, "complete": complete, "padding_problems": searched,
             "padded": int(bool(out.mapping.padded))}
    front = None
    if pareto:
        e = np.array([p.energy_pj for p in points])
        lat = np.array([p.latency_cycles for p in points])
        front = [p for p, k in zip(points, pareto_mask(e, lat)) if k]
    return dataclasses.replace(out, mappings_evaluated=evaluated, search_seconds=seconds, stats=stats,
                               pareto=front)
