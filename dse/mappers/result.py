"""What a mapper returns: the best mapping, its metrics, and how the search went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping, MappingBatch
    from costmodel.problem import Problem
    from dse.mappers.objectives import Objective
    from dse.mapspace import MapspaceSize

METRICS = ("energy_pj", "latency_cycles", "latency_s", "edp", "utilization", "power_mw")


@dataclass
class ParetoPoint:
    energy_pj: float
    latency_cycles: float
    mapping: Mapping


@dataclass
class MapperResult:
    """Best mapping found and the search's record (``mappings_evaluated``, ``search_seconds``)."""

    mapping: Mapping
    metrics: dict[str, float]
    objective: Objective
    mapper: str
    mappings_evaluated: int
    search_seconds: float
    mapspace_size: MapspaceSize
    stats: dict[str, int] = field(default_factory=dict)
    pareto: list[ParetoPoint] | None = None
    seed: int | None = None

    def to_dict(self, arch: Architecture | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.metrics,
            "mapping": self.mapping.to_dict(arch),
            "objective": self.objective.to_dict(),
            "mapper": self.mapper,
            "mappings_evaluated": self.mappings_evaluated,
            "search_seconds": self.search_seconds,
            "mapspace_size": self.mapspace_size.to_dict(),
            "stats": dict(self.stats),
            "seed": self.seed,
        }
        if self.pareto is not None:
            out["pareto"] = [{"energy_pj": p.energy_pj, "latency_cycles": p.latency_cycles,
                              "mapping": p.mapping.to_dict(arch)} for p in self.pareto]
        return out

    def to_dataframe(self) -> pd.DataFrame:
        """With a Pareto front (``pareto=True``): one row per front point (energy_pj, latency_cycles),
        by energy; else one row: the best mapping's metrics and the search's record."""
        import pandas as pd

        if self.pareto is not None:
            return pd.DataFrame([{"energy_pj": p.energy_pj, "latency_cycles": p.latency_cycles} for p in self.pareto],
                                columns=["energy_pj", "latency_cycles"])
        return pd.DataFrame([{**self.metrics, "mapper": self.mapper, "mappings_evaluated": self.mappings_evaluated,
                              "search_seconds": self.search_seconds}])


def metrics_of(ev: Any, i: int) -> dict[str, float]:
    """Scalar metrics of row ``i`` of a BatchEvaluation."""
    out = {}
    for m in METRICS:
        v = getattr(ev, m)[i]
        out[m] = int(v) if m == "latency_cycles" else float(v)
    return out


_FIELDS = ("temporal", "spatial_x", "spatial_y", "order", "keep")


def take(batch: MappingBatch, idx: np.ndarray) -> MappingBatch:
    """Rows ``idx`` of a batch, batch-last."""
    from costmodel.mapping import MappingBatch, batch_last

    return MappingBatch(*(batch_last(getattr(batch, f), idx) for f in _FIELDS))


def concat(batches: list[MappingBatch]) -> MappingBatch:
    """Batches one after another, batch-last. (Explicit transposes of the [B, L, X] arrays: the
    exhaustive mapper pools thousands of small batches, and ``np.moveaxis`` cost 10 µs a call.)"""
    from costmodel.mapping import MappingBatch

    return MappingBatch(*(np.concatenate([getattr(b, f).transpose(1, 2, 0) for b in batches],
                                         axis=-1).transpose(2, 0, 1) for f in _FIELDS))


def final_mapping(problem: Problem, arch: Architecture, batch: MappingBatch, i: int) -> Mapping:
    """Row ``i`` as a validated Mapping (a failure here is a mapper bug, not the user's)."""
    m = batch.mapping(i, problem)
    m.validate(problem, arch, where="mapper result")
    return m
