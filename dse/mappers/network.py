"""Map every layer of a workload: identical layer shapes are solved once, in worker processes.

MAC layers are mapped with :func:`dse.mappers.map_layer`, plus the energy of their fused post-ops
(``costmodel.vector.post_ops_pj``). Vector and layout layers are costed by
``costmodel.vector.layer_cost``, so the network's totals are complete. Layers run one after another:
the total latency is the sum of the layers' latencies, and the network EDP is the total energy times
the total latency.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from compiler.frontend.workload import Workload
    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping
    from dse.mappers.result import MapperResult


@dataclass
class LayerResult:
    name: str
    op_type: str
    kind: str
    energy_pj: float
    latency_cycles: int
    latency_s: float
    utilization: float
    macs: int
    mapping: Mapping | None = None
    mappings_evaluated: int = 0
    search_seconds: float = 0.0
    signature: str = ""  # the layer shape; layers with equal signatures share one search

    def to_dict(self, arch: Architecture | None = None) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "mapping"}
        out["edp"] = self.energy_pj * self.latency_s
        out["mapping"] = self.mapping.to_dict(arch) if self.mapping is not None else None
        return out


@dataclass
class NetworkResult:
    model: str
    hw: str
    layers: list[LayerResult]
    wall_seconds: float
    shapes_searched: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def energy_pj(self) -> float:
        return sum(x.energy_pj for x in self.layers)

    @property
    def latency_s(self) -> float:
        return sum(x.latency_s for x in self.layers)

    @property
    def latency_cycles(self) -> int:
        return sum(x.latency_cycles for x in self.layers)

    @property
    def mappings_evaluated(self) -> int:
        return sum(x.mappings_evaluated for x in self.layers)

    def totals(self) -> dict[str, Any]:
        return {"energy_pj": self.energy_pj, "latency_cycles": self.latency_cycles, "latency_s": self.latency_s,
                "edp": self.energy_pj * self.latency_s, "macs": sum(x.macs for x in self.layers),
                "mappings_evaluated": self.mappings_evaluated, "search_seconds": self.wall_seconds,
                "shapes_searched": self.shapes_searched}

    def to_dataframe(self) -> pd.DataFrame:
        import pandas as pd

        rows = [{k: v for k, v in x.to_dict().items() if k != "mapping"} for x in self.layers]
        df = pd.DataFrame(rows)
        total = self.energy_pj
        df["energy_share"] = df["energy_pj"] / total if total else 0.0
        return df

    def to_dict(self, arch: Architecture | None = None) -> dict[str, Any]:
        return {"model": self.model, "hw": self.hw, **self.totals(),
                "layers": [x.to_dict(arch) for x in self.layers]}


def _solve(job: tuple) -> MapperResult:
    from dse.mappers import map_layer

    problem, arch, objective, mapper, seed, constraints, options = job
    return map_layer(problem, arch, objective, mapper=mapper, seed=seed, constraints=constraints, **options)


def map_model(workload: Workload, arch: Architecture, objective: Any = "edp", *, mapper: str = "fast",
              seed: int = 0, workers: int = 1, layer: str | None = None, constraints: Any = None,
              progress: bool = False, db: Any = None, **options: Any) -> NetworkResult:
    """Best mapping of every layer (or of the one named ``layer``); see the module docstring."""
    from costmodel.vector import layer_cost, post_ops_pj

    t0 = time.perf_counter()
    layers = workload.layers()
    if layer is not None:
        names = [x.name for x in layers]
        if layer not in names:
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise UserError(f"{workload.name}: no layer named {layer!r} (layers: {shown})")
        layers = [x for x in layers if x.name == layer]
    shapes = list(dict.fromkeys(x.problem for x in layers if x.kind == "mac" and x.problem is not None))
    by_shape: dict[Any, MapperResult] = {}
    keys: dict[Any, str] = {}
    if db is not None:  # answered from the database first; only the misses are searched
        from dse.mappers.db import result_key
        from dse.mappers.objectives import Objective

        obj = Objective.parse(objective)
        for p in shapes:
            keys[p] = result_key(p, arch, obj, mapper, seed, {"pareto": False, **options}, constraints)
            hit = db.get(keys[p], arch)
            if hit is not None:
                by_shape[p] = hit
    todo = [p for p in shapes if p not in by_shape]
    jobs = [(p, arch, objective, mapper, seed, constraints, options) for p in todo]
    results: list[MapperResult] = []
    if workers > 1 and len(jobs) > 1:
        with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            for i, r in enumerate(pool.imap(_solve, jobs)):
                results.append(r)
                _tick(progress, i + 1, len(jobs))
    else:
        for i, job in enumerate(jobs):
            results.append(_solve(job))
            _tick(progress, i + 1, len(jobs))
    for p, r in zip(todo, results):
        by_shape[p] = r
        if db is not None:
            db.put(keys[p], p, arch, r)
    seen: set = set()
    out = []
    for x in layers:
        if x.kind == "mac" and x.problem is not None:
            r = by_shape[x.problem]
            first = x.problem not in seen
            seen.add(x.problem)
            m = r.metrics
            out.append(LayerResult(
                x.name, x.op_type, x.kind, m["energy_pj"] + post_ops_pj(arch, x.vector_ops), int(m["latency_cycles"]),
                m["latency_s"], m["utilization"], x.problem.macs, r.mapping,
                r.mappings_evaluated if first else 0, r.search_seconds if first else 0.0, x.problem.describe()))
        else:
            c = layer_cost(arch, x)
            if c is None:
                continue
            out.append(LayerResult(x.name, x.op_type, x.kind, c["energy_pj"], int(c["latency_cycles"]),
                                   c["latency_s"], 0.0, 0, signature="vector"))
    return NetworkResult(workload.name, arch.name, out, time.perf_counter() - t0, len(todo),
                         {"shapes": len(shapes), "from_database": len(shapes) - len(todo)})


def _tick(progress: bool, done: int, total: int) -> None:
    """A one-line progress counter on stderr (stdout stays clean for --json)."""
    if progress:
        end = "\n" if done == total else "\r"
        print(f"mapping layer shapes: {done}/{total}", end=end, file=sys.stderr, flush=True)
