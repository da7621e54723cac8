"""Mapping search for one layer: ``exhaustive`` (provably optimal over the mapspace) and ``fast``
(the default: seeded, budgeted heuristic). Both evaluate candidates in batches through
:func:`costmodel.evaluate.evaluate_batch` and return a :class:`MapperResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.mappers.objectives import Objective
from dse.mappers.options import MAPPERS, check_mapper, check_options, check_seed
from dse.mappers.result import MapperResult

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem


def map_layer(problem: Problem, arch: Architecture, objective: Any = "edp", *, mapper: str = "fast",
              constraints: Any = None, seed: int = 0, pareto: bool = False, **options: Any) -> MapperResult:
    """Best mapping of one layer on one config. ``options`` go to the chosen mapper (e.g. the fast
    mapper's ``max_evaluations`` / ``time_limit_s``); the exhaustive one is seeded by a fast run.
    Where the config allows padding (``mapspace.padding``), the padded problems are searched too
    (:mod:`dse.mappers.padding`). (Persistence and whole networks: :mod:`dse.mapdb`, :mod:`dse.network`.)"""
    from costmodel.arch import as_architecture
    from costmodel.problem import expect_problem

    problem, arch = expect_problem(problem), as_architecture(arch)
    obj = Objective.parse(objective)
    seed, options = check_seed(seed), check_options(check_mapper(mapper), options)
    if arch.padding is None:
        return _search(problem, arch, obj, mapper, constraints, seed, pareto, options)
    from dse.mappers.padding import map_padded

    def one(p: Problem, *, constraints: Any, incumbent: MapperResult | None) -> MapperResult:
        return _search(p, arch, obj, mapper, constraints, seed, pareto, options, incumbent)

    return map_padded(problem, arch, obj, one, exhaustive=mapper == "exhaustive", pareto=pareto,
                      constraints=constraints)


def _search(problem: Problem, arch: Architecture, obj: Objective, mapper: str, constraints: Any, seed: int,
            pareto: bool, options: dict[str, Any], incumbent: MapperResult | None = None) -> MapperResult:
    """One problem. ``incumbent``: a result of another (padded) problem for the exhaustive search to
    beat; ``stats["incumbent_kept"]`` says nothing in this mapspace did."""
    from dse.mappers.exhaustive import exhaustive_map
    from dse.mappers.fast import fast_map
    from dse.mapspace import Mapspace

    ms = Mapspace(problem, arch, constraints)
    if mapper == "fast":
        return fast_map(problem, arch, obj, mapspace=ms, seed=seed, pareto=pareto, **options)
    if mapper == "exhaustive":
        seed_run = None if pareto else _seed(problem, arch, obj, ms, seed)
        start = seed_run
        if incumbent is not None and (seed_run is None or _score(obj, incumbent) < _score(obj, seed_run)):
            start = incumbent
        res = exhaustive_map(problem, arch, obj, mapspace=ms, pareto=pareto, incumbent=start, **options)
        if start is not incumbent:  # what was kept (if anything) is this problem's own seed mapping
            res.stats["incumbent_kept"] = 0
        if seed_run is not None:
            res.mappings_evaluated += seed_run.mappings_evaluated
            res.search_seconds += seed_run.search_seconds
        return res
    raise AssertionError(mapper)


def _seed(problem: Problem, arch: Architecture, obj: Objective, ms: Any, seed: int) -> MapperResult | None:
    """The fast mapper's answer, the exhaustive search's first incumbent; None when it found no
    mapping (under tight limits a few may exist that its budget missed: the exhaustive search
    looks, and says why if there are none)."""
    from dse.mappers.fast import fast_map

    try:
        return fast_map(problem, arch, obj, mapspace=ms, seed=seed, max_evaluations=20_000)
    except UserError:
        return None


def _score(obj: Objective, res: MapperResult) -> float:
    return float(obj.score(res.metrics["energy_pj"], res.metrics["latency_cycles"]))


__all__ = ["MAPPERS", "MapperResult", "Objective", "map_layer"]
