"""One design point of a study: knob values -> hardware config -> every workload mapped -> metrics.

Models go through the network mapper (``dse.network.map_model``) with a mapping database in the
study folder; a study's inline ``layers:`` (for tests and quick experiments) are mapped here with
:func:`dse.mappers.map_layer`, each distinct shape once. A design whose config is invalid, or on which some layer fits no mapping, is *invalid*: it
gets a reason instead of metrics (the runner records it as a pruned trial).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.errors import UserError
from dse.study.expr import ExprError
from dse.study.knobs import apply_knobs, knob_values
from dse.study.metrics import LayerResult, study_metrics, workload_metrics

if TYPE_CHECKING:
    from pathlib import Path

    from compiler.frontend.workload import Workload
    from costmodel.arch import Architecture
    from costmodel.problem import Problem
    from dse.study.schema import Study

Layers = dict[str, "Workload | list[tuple[str, Problem]]"]
MAPPING_DB = "mappings.sqlite"


def load_layers(study: Study) -> Layers:
    """Every workload: a model's Workload graph, or inline layers as (name, Problem) pairs. A model
    that does not load (a broken ONNX file) is an error at the study's ``workloads[i].model``."""
    from costmodel.problem import Problem
    from dse.api import load_workload

    out: Layers = {}
    for i, w in enumerate(study.spec.workloads):
        if w.layers is not None:
            out[w.name] = [(f"layer{j}", Problem.from_dict(d, where=str(study.source)))
                           for j, d in enumerate(w.layers)]
            continue
        try:
            out[w.name] = load_workload(study.model_path(w))
        except UserError as exc:
            raise study.lines.error(("workloads", i, "model"), str(exc)) from None
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


def _total(v: Any) -> float:
    return float(sum(_total(x) for x in v.values())) if isinstance(v, dict) else float(v)


def layer_result(name: str, d: dict[str, Any], arch: Architecture, count: int = 1, evaluated: int = 0,
                 mapping: dict[str, Any] | None = None) -> LayerResult:
    """A layer's metrics (``Evaluation.to_dict`` keys, or a vector layer's cost) as a LayerResult:
    energy by level (network energy added to the level above it), MACs, leakage, DRAM traffic."""
    eb = d.get("energy_breakdown_pj", {})
    by_part: dict[str, float] = {}
    for key, v in eb.items():
        if key == "network":
            for lv, e in v.items():
                by_part[lv] = by_part.get(lv, 0.0) + float(e)
        elif key == "leakage":
            by_part["leakage"] = _total(v)
        else:
            by_part[key] = by_part.get(key, 0.0) + _total(v)
    dram = d.get("accesses", {}).get(arch.levels[0].name, {})
    dram_words = sum(t["reads"] + t["writes"] for t in dram.values())
    return LayerResult(name, count, int(d["macs"]), float(d["energy_pj"]), float(d["latency_cycles"]),
                       float(d.get("compute_cycles", d["latency_cycles"])), float(d["utilization"]),
                       by_part.get("leakage", 0.0), by_part, float(dram_words), evaluated, mapping or {})


def map_problems(problems: list[tuple[str, Problem]], arch: Architecture, study: Study) -> list[LayerResult]:
    """Layers given as Problems (a study's inline ``layers:``): each distinct shape mapped once, through
    the study folder's mapping database as a model's layers are (see :func:`map_network`)."""
    from dse.network import best_mapping

    m = study.spec.mapper
    counts: dict[Problem, list[str]] = {}
    for name, p in problems:
        counts.setdefault(p, []).append(name)
    out, db = [], _mapping_db(study)
    for p, names in counts.items():
        r = best_mapping(p, arch, objective=m.objective, mapper=m.mapper, seed=m.seed, db=db, **_budget(study))
        out.append(layer_result(names[0], r.metrics, arch, len(names), r.mappings_evaluated,
                                r.mapping.to_dict(arch)))
    return out


def _mapping_db(study: Study) -> Path:
    db = study.output / MAPPING_DB
    db.parent.mkdir(parents=True, exist_ok=True)
    return db


def _budget(study: Study) -> dict[str, int]:
    m = study.spec.mapper
    return {"max_evaluations": m.max_evaluations} if m.mapper == "fast" else {}


def map_network(workload: Workload, arch: Architecture, study: Study) -> list[LayerResult]:
    """A model through ``map_model`` and the study folder's mapping database (so a design seen before,
    or a resumed trial, costs no search); vector layers are costed too."""
    from dse.network import map_model

    m = study.spec.mapper
    net = map_model(workload, arch, objective=m.objective, mapper=m.mapper, seed=m.seed, workers=m.workers,
                    db=_mapping_db(study), progress=False, **_budget(study))
    return [layer_result(x.name, x.metrics, arch, 1, x.mappings_evaluated,
                         x.mapping.to_dict(arch) if x.mapping is not None else None)
            for x in net.layers if x.metrics.get("latency_cycles", 0) or x.metrics.get("energy_pj", 0)]


def evaluate_design(study: Study, layers: Layers, sampled: dict[str, Any]) -> DesignResult:
    """Metrics and constraint violations of one design; invalid designs carry the reason. ``sampled``
    may come from a trials table: numpy scalars are taken as the Python values they hold."""
    sampled = {k: v.item() if isinstance(v, np.generic) else v for k, v in sampled.items()}
    for k in study.sampled_knobs:  # (a table column with a missing value holds 4 as 4.0)
        v = sampled.get(k.name)
        if isinstance(v, float) and v.is_integer() and k.takes_ints:
            sampled[k.name] = int(v)
    try:
        values = knob_values(study.knobs, sampled)
    except ExprError as exc:  # (a derived knob's arithmetic fails for these values: an invalid design)
        return DesignResult(dict(sampled), invalid=str(exc))
    res = DesignResult(values)
    try:
        arch = build_arch(study, values)
        from costmodel.area import area_breakdown

        leak = _chip_leak_mw(arch)
        per_wl = {}
        for w in study.spec.workloads:
            src = layers[w.name]
            res.layers[w.name] = (map_problems(src, arch, study) if isinstance(src, list)
                                  else map_network(src, arch, study))
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
        try:
            res.violations[c.key] = float(c.violation(env))
        except ExprError as exc:
            res.invalid, res.arch = f"constraint {c.text!r}: {exc}", None
            return res
    return res
