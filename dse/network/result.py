"""What ``map_model`` returns: one result per layer and the network's totals.

Totals: ``energy_pj``, ``latency_cycles`` and ``latency_s`` are sums over the layers (they run one
after another); ``edp`` = total energy x total latency (the network's EDP, not a sum of layer EDPs);
``power_mw`` = total energy / total time; ``utilization`` = MACs / (PEs x total cycles), vector
layers' time included; ``area_mm2`` is the config's. ``mappings_evaluated`` counts the evaluations
of searches run now (database answers count 0); ``search_seconds`` is the wall time of the search
phase (about 0 when everything came from the database).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping
    from costmodel.problem import Problem


@dataclass
class LayerResult:
    """One layer: its metrics (``Evaluation.to_dict`` keys), and for MAC layers the mapping found."""

    name: str
    kind: str
    op_type: str
    metrics: dict[str, Any]
    problem: Problem | None = None
    mapping: Mapping | None = None
    mappings_evaluated: int = 0
    search_seconds: float = 0.0
    from_db: bool = False
    same_as: str | None = None  # an earlier layer of the same shape whose search answered this one
    note: str = ""

    def summary(self, arch: Architecture) -> str:
        """The mapping in one line: per level, its temporal loops and spatial unrolling."""
        if self.mapping is None:
            return self.note or self.kind
        parts = []
        for lv, lm in zip(arch.levels, self.mapping.levels):
            loops = [f"{d}{f}" for d in lm.full_order(self.problem.dim_names) if (f := lm.temporal.get(d, 1)) > 1]
            for axis, facs in (("x", lm.spatial_x), ("y", lm.spatial_y)):
                sp = [f"{d}{f}" for d, f in facs.items() if f > 1]
                if sp:
                    loops.append(f"{axis}:" + "".join(sp))
            if loops:
                parts.append(f"{lv.name}[{' '.join(loops)}]")
        return " ".join(parts) or "(single MAC)"

    def to_dataframe(self) -> pd.DataFrame:
        """One row: the layer's name, kind and metrics, and the search's record."""
        import pandas as pd

        return pd.DataFrame([{"name": self.name, "kind": self.kind, "op_type": self.op_type, **self.metrics,
                              "mappings_evaluated": self.mappings_evaluated, "search_seconds": self.search_seconds,
                              "from_db": self.from_db, "same_as": self.same_as}])

    def to_dict(self, arch: Architecture) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "op_type": self.op_type, **self.metrics,
                "mapping": self.mapping.to_dict(arch) if self.mapping is not None else None,
                "mapping_summary": self.summary(arch),
                "problem": self.problem.to_dict() if self.problem is not None else None,
                "mappings_evaluated": self.mappings_evaluated, "search_seconds": self.search_seconds,
                "from_db": self.from_db, "same_as": self.same_as, "note": self.note}


@dataclass
class NetworkResult:
    """Per-layer results in topological order plus the search's record."""

    model: str
    arch: Architecture
    objective: dict[str, Any]
    mapper: str
    seed: int
    layers: list[LayerResult]
    search_seconds: float
    searched: int  # distinct searches run now
    from_db: int  # distinct searches answered by the database
    area_mm2: float
    warnings: list[str] = field(default_factory=list)

    @property
    def totals(self) -> dict[str, Any]:
        energy = sum(x.metrics["energy_pj"] for x in self.layers)
        cycles = sum(int(x.metrics["latency_cycles"]) for x in self.layers)
        seconds = sum(x.metrics["latency_s"] for x in self.layers)
        macs = sum(int(x.metrics["macs"]) for x in self.layers)
        return {
            "energy_pj": energy, "latency_cycles": cycles, "latency_s": seconds, "edp": energy * seconds,
            "area_mm2": self.area_mm2, "power_mw": energy * 1e-9 / seconds if seconds > 0 else 0.0,
            "macs": macs, "utilization": macs / (self.arch.num_pes * cycles) if cycles else 0.0,
            "mappings_evaluated": sum(x.mappings_evaluated for x in self.layers),
            "search_seconds": self.search_seconds,
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per layer: name, kind, mapping summary, metrics and share of the totals."""
        import pandas as pd

        tot = self.totals
        rows = [{
            "name": x.name, "kind": x.kind, "op_type": x.op_type, "mapping": x.summary(self.arch),
            "energy_pj": x.metrics["energy_pj"], "latency_cycles": int(x.metrics["latency_cycles"]),
            "utilization": x.metrics["utilization"], "macs": int(x.metrics["macs"]),
            "energy_share": x.metrics["energy_pj"] / tot["energy_pj"] if tot["energy_pj"] else 0.0,
            "latency_share": x.metrics["latency_cycles"] / tot["latency_cycles"] if tot["latency_cycles"] else 0.0,
            "from_db": x.from_db, "same_as": x.same_as,
        } for x in self.layers]
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        """The ``dse map --json`` document (DESIGN.md section 4 keys at the top and per layer)."""
        return {
            "model": self.model, "hw": self.arch.name, "config_fingerprint": self.arch.fingerprint(),
            "objective": self.objective, "mapper": self.mapper, "seed": self.seed,
            **self.totals,
            "searched": self.searched, "from_db": self.from_db,
            "layers": [x.to_dict(self.arch) for x in self.layers],
            "warnings": list(self.warnings),
        }
