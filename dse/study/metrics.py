"""The metrics a study can optimize or constrain, and how per-layer results add up to them.

Per workload ``W`` (one inference / frame): ``W.energy_pj``, ``W.energy_uj``, ``W.latency_cycles``,
``W.latency_s``, ``W.latency_ms``, ``W.edp``, ``W.utilization``, ``W.macs``, ``W.power_mw`` and
``W.load``. Study-wide: ``area_mm2``, ``num_pes``, ``leak_mw`` and the weighted sums
``energy_pj``/``energy_uj``/``latency_ms``/``latency_s``/``latency_cycles``, ``edp`` (of the sums),
``power_mw``, ``load``, ``utilization``, ``macs``.

Power at a frame rate: the dynamic energy of a frame times fps, plus the chip's leakage all the
time (``leak_mw``: idle leakage counts, which per-inference energy alone would miss). Without a
frame rate, a workload runs back to back: power = energy / latency. ``load`` = fps x latency is the
fraction of time the accelerator is busy; a scenario whose total load exceeds 1 cannot meet its
frame rates on one accelerator (every costed layer counts: MAC layers and vector layers;
host-fallback layers cost nothing on the accelerator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WORKLOAD_METRICS = ("energy_pj", "energy_uj", "latency_cycles", "latency_s", "latency_ms", "edp",
                    "utilization", "macs", "power_mw", "load")
GLOBAL_METRICS = ("area_mm2", "num_pes", "leak_mw", *WORKLOAD_METRICS)


def metric_names(workloads: list[str]) -> list[str]:
    """Every metric name a study with these workloads defines."""
    return [*GLOBAL_METRICS, *(f"{w}.{m}" for w in workloads for m in WORKLOAD_METRICS)]


@dataclass
class LayerResult:
    """One MAC layer's best mapping on one design (counts: how many layers share this shape)."""

    name: str
    count: int
    macs: int
    energy_pj: float
    latency_cycles: float
    compute_cycles: float
    utilization: float
    leak_pj: float
    energy_by_level_pj: dict[str, float]
    dram_words: float
    mappings_evaluated: int = 0
    mapping: dict[str, Any] = field(default_factory=dict)


def workload_metrics(layers: list[LayerResult], *, fps: float | None, clock_hz: float, num_pes: int,
                     leak_mw: float) -> dict[str, float]:
    """Per-frame metrics of one workload from its layers (layers run one after another)."""
    energy = sum(l.energy_pj * l.count for l in layers)
    leak = sum(l.leak_pj * l.count for l in layers)
    cycles = sum(l.latency_cycles * l.count for l in layers)
    macs = sum(l.macs * l.count for l in layers)
    seconds = cycles / clock_hz
    if fps:
        power = (energy - leak) * fps * 1e-9 + leak_mw  # pJ/s * 1e-9 = mW
        load = fps * seconds
    else:
        power = energy * 1e-9 / seconds if seconds > 0 else 0.0
        load = 1.0
    return {"energy_pj": energy, "energy_uj": energy * 1e-6, "latency_cycles": cycles,
            "latency_s": seconds, "latency_ms": seconds * 1e3, "edp": energy * seconds,
            "utilization": macs / (num_pes * cycles) if cycles else 0.0, "macs": macs,
            "power_mw": power, "load": load}


def study_metrics(per_workload: dict[str, dict[str, float]], weights: dict[str, float], *,
                  area_mm2: float, num_pes: int, leak_mw: float) -> dict[str, float]:
    """The study-wide metrics plus every ``W.metric``. Leakage is counted once for the chip."""
    out: dict[str, float] = {"area_mm2": area_mm2, "num_pes": num_pes, "leak_mw": leak_mw}
    for key in ("energy_pj", "energy_uj", "latency_cycles", "latency_s", "latency_ms", "macs", "load"):
        out[key] = sum(weights[w] * m[key] for w, m in per_workload.items())
    out["edp"] = out["energy_pj"] * out["latency_s"]
    out["power_mw"] = sum(weights[w] * (m["power_mw"] - leak_mw) for w, m in per_workload.items()) + leak_mw
    busy = sum(weights[w] * m["latency_cycles"] for w, m in per_workload.items())
    out["utilization"] = out["macs"] / (num_pes * busy) if busy else 0.0
    for w, m in per_workload.items():
        out.update({f"{w}.{k}": v for k, v in m.items()})
    return out
