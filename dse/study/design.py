"""One design point of a study: knob values -> hardware config -> every workload mapped -> metrics.

Until the network mapper (``dse.network.map_model``, with its mapping database) is available, the
layers are mapped here with :func:`dse.mappers.map_layer`; identical layer shapes are mapped once per
design. A design whose config is invalid, or on which some layer fits no mapping, is *invalid*: it
gets a reason instead of metrics (the runner records it as a pruned trial).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.study.knobs import apply_knobs, knob_values
from dse.study.metrics import LayerResult, study_metrics, workload_metrics

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem
    from dse.study.schema import Study

Layers = dict[str, list[tuple[str, "Problem"]]]


def load_layers(study: Study) -> Layers:
    """The MAC layers of every workload, as (layer name, Problem), in network order."""
    from costmodel.problem import Problem
    from dse.api import load_workload

    out: Layers = {}
    for w in study.spec.workloads:
        if w.layers is not None:
            out[w.name] = [(f"layer{i}", Problem.from_dict(d, where=str(study.source)))
                           for i, d in enumerate(w.layers)]
        else:
            wl = load_workload(study.model_path(w))
            out[w.name] = [(layer.name, layer.problem) for layer in wl.mac_layers()]
    return out


@dataclass
class DesignResult:
    values: dict[str, Any]
    metrics: dict[str, float] = field(default_factory=dict)
    violations: dict[str, float] = field(default_factory=dict)
    layers: dict[str, list[LayerResult]] = field(default_factory=dict)
    invalid: str | None = None
    arch: Architecture | None = None

    @property
    def feasible(self) -> bool:
        return self.invalid is None and all(v <= 0 for v in self.violations.values())


def build_arch(study: Study, values: dict[str, Any]) -> Architecture:
    """The design's resolved Architecture (UserError if the knob values make an invalid config)."""
    from costmodel.arch import architecture_from_dict

    data = apply_knobs(study.base_config, study.knobs, values)
    return architecture_from_dict(data, source=f"{study.hw_source} with {values}")


def _chip_leak_mw(arch: Architecture) -> float:
    vec = arch.vector_unit.leak_mw if arch.vector_unit else 0.0
    return sum(lv.leak_mw * lv.instances for lv in arch.levels) + arch.mac.leak_mw * arch.num_pes + vec


def map_layers(problems: list[tuple[str, Problem]], arch: Architecture, study: Study,
               cache: dict[Problem, LayerResult]) -> list[LayerResult]:
    """Best mapping of each distinct layer shape (``cache`` shared across workloads of a design)."""
    from costmodel.evaluate import evaluate
    from dse.mappers import map_layer

    m = study.spec.mapper
    counts: dict[Problem, int] = {}
    names: dict[Problem, str] = {}
    for name, p in problems:
        counts[p] = counts.get(p, 0) + 1
        names.setdefault(p, name)
    out = []
    for p, n in counts.items():
        if p not in cache:
            opts = {"max_evaluations": m.max_evaluations} if m.mapper == "fast" else {}
            res = map_layer(p, arch, m.objective, mapper=m.mapper, seed=m.seed, **opts)
            ev = evaluate(p, arch, res.mapping)
            d = ev.to_dict()
            eb = d["energy_breakdown_pj"]
            by_level = {lv.name: sum(sum(a.values()) for a in eb[lv.name].values()) + eb["network"][lv.name]
                        for lv in arch.levels}
            by_level["mac"] = eb["mac"]
            by_level["leakage"] = sum(eb["leakage"].values())
            dram = arch.levels[0].name
            dram_words = sum(t["reads"] + t["writes"] for t in d["accesses"][dram].values())
            cache[p] = LayerResult(names[p], 1, int(d["macs"]), float(d["energy_pj"]), float(d["latency_cycles"]),
                                   float(d["compute_cycles"]), float(d["utilization"]), by_level["leakage"],
                                   by_level, float(dram_words), res.mappings_evaluated,
                                   res.mapping.to_dict(arch))
        base = cache[p]
        out.append(LayerResult(**{**base.__dict__, "name": names[p], "count": n}))
    return out


def evaluate_design(study: Study, layers: Layers, sampled: dict[str, Any]) -> DesignResult:
    """Metrics and constraint violations of one design; invalid designs carry the reason."""
    values = knob_values(study.knobs, sampled)
    res = DesignResult(values)
    try:
        arch = build_arch(study, values)
        from costmodel.area import area_breakdown

        leak = _chip_leak_mw(arch)
        cache: dict[Problem, LayerResult] = {}
        per_wl = {}
        for w in study.spec.workloads:
            res.layers[w.name] = map_layers(layers[w.name], arch, study, cache)
            per_wl[w.name] = workload_metrics(res.layers[w.name], fps=w.fps, clock_hz=arch.clock_hz,
                                              num_pes=arch.num_pes, leak_mw=leak)
    except UserError as exc:
        res.invalid = str(exc)
        return res
    res.arch = arch
    weights = {w.name: w.weight for w in study.spec.workloads}
    res.metrics = study_metrics(per_wl, weights, area_mm2=area_breakdown(arch)["total"], num_pes=arch.num_pes,
                                leak_mw=leak)
    for c in study.constraints:
        if c.workload is None:
            env = {**res.metrics, **values}
        else:
            fps = next(w.fps for w in study.spec.workloads if w.name == c.workload)
            env = {**per_wl[c.workload], **values, "fps": fps or 0.0}
        key = f"{c.workload}: {c.text}" if c.workload else c.text
        res.violations[key] = float(c.violation(env))
    return res
