"""Mapping search for one layer: ``exhaustive`` (provably optimal over the mapspace) and ``fast``
(the default: seeded, budgeted heuristic). Both evaluate candidates in batches through
:func:`costmodel.evaluate.evaluate_batch` and return a :class:`MapperResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.mappers.objectives import Objective
from dse.mappers.result import MapperResult

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem

MAPPERS = ("fast", "exhaustive")


def map_layer(problem: Problem, arch: Architecture, objective: Any = "edp", *, mapper: str = "fast",
              constraints: Any = None, seed: int = 0, pareto: bool = False, **options: Any) -> MapperResult:
    """Best mapping of one layer on one config. ``options`` go to the chosen mapper (e.g. the fast
    mapper's ``max_evaluations`` / ``time_limit_s``); the exhaustive one is seeded by a fast run.
    (Persistence and whole networks: :mod:`dse.mapdb`, :mod:`dse.network`.)"""
    obj = Objective.parse(objective)
    if mapper not in MAPPERS:
        raise UserError(f"mapper: expected one of {list(MAPPERS)}, got {mapper!r}")
    return _search(problem, arch, obj, mapper, constraints, seed, pareto, options)


def _search(problem: Problem, arch: Architecture, obj: Objective, mapper: str, constraints: Any, seed: int,
            pareto: bool, options: dict[str, Any]) -> MapperResult:
    from dse.mappers.exhaustive import exhaustive_map
    from dse.mappers.fast import fast_map
    from dse.mapspace import Mapspace

    ms = Mapspace(problem, arch, constraints)
    if mapper == "fast":
        return fast_map(problem, arch, obj, mapspace=ms, seed=seed, pareto=pareto, **options)
    if mapper == "exhaustive":
        seed_run = None if pareto else fast_map(problem, arch, obj, mapspace=ms, seed=seed,
                                                max_evaluations=20_000)
        res = exhaustive_map(problem, arch, obj, mapspace=ms, pareto=pareto, incumbent=seed_run, **options)
        if seed_run is not None:
            res.mappings_evaluated += seed_run.mappings_evaluated
            res.search_seconds += seed_run.search_seconds
        return res
    raise AssertionError(mapper)


__all__ = ["MAPPERS", "MapperResult", "Objective", "map_layer"]
