"""The report's figures (matplotlib, Agg backend), each a function returning a Figure.

Every figure has the same pixel size (``SIZE`` at ``DPI``) so reports lay out predictably and tests
can check it. Figures are drawn inside ``plt.style.context("default")``: optuna's matplotlib helpers
change the global style, and a report must not depend on what ran before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from costmodel.arch import Architecture
    from dse.study.metrics import LayerResult

SIZE = (8.0, 4.5)
DPI = 100  # 800 x 450 px


def _figure() -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def knob_label(row: pd.Series, knobs: list[str]) -> str:
    """``k=v, ...``: numbers in ``%g``, a boolean as True/False (as the report's summary writes it; a
    bool is an int to Python, and had been written 1/0)."""
    return ", ".join(f"{k}={row[k]:g}" if isinstance(row[k], (int, float)) and not isinstance(row[k], bool)
                     else f"{k}={row[k]}" for k in knobs)


def pareto_front(table: pd.DataFrame, front: pd.DataFrame, objectives: list[str], knobs: list[str],
                 directions: list[str] | None = None) -> Figure:
    """First two objectives (or the objective by trial): feasible coloured by area, infeasible grey,
    the front as a step line, each front point labelled with its knob values. The step's corners lie
    where a front design dominates them: across then down for a minimized x, down then across
    (``where="pre"``) for a maximized one (``directions``: the objectives', default minimize)."""
    fig, ax = _figure()
    done = table[table["state"] == "COMPLETE"]
    x_name, y_name = (objectives[0], objectives[1]) if len(objectives) > 1 else ("trial", objectives[0])
    bad = done[~done["feasible"]]
    ok = done[done["feasible"]]
    if len(bad):
        ax.scatter(bad[x_name], bad[y_name], c="0.75", s=18, label="infeasible")
    if len(ok):
        sc = ax.scatter(ok[x_name], ok[y_name], c=ok["area_mm2"], cmap="viridis", s=22, label="feasible")
        fig.colorbar(sc, ax=ax, label="area (mm²)")
    if len(front):
        f = front.sort_values(x_name)
        x_max = len(objectives) > 1 and (directions or ["minimize"])[0] == "maximize"
        ax.step(f[x_name], f[y_name], where="pre" if x_max else "post", color="C3", lw=1.2, label="Pareto front")
        for _, row in f.head(12).iterrows():
            ax.annotate(knob_label(row, knobs), (row[x_name], row[y_name]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(metric_label(x_name))
    ax.set_ylabel(metric_label(y_name))
    ax.set_title("Designs and Pareto front")
    ax.legend(fontsize=7, loc="best")  # not a fixed corner: minimised objectives put dominated designs top right
    return fig


_UNITS = {"mw": "mW", "ms": "ms", "uj": "µJ", "mm2": "mm²", "pj": "pJ", "s": "s", "mj": "mJ", "cycles": "cycles"}


def metric_label(name: str) -> str:
    """``power_mw`` -> ``power (mW)``: an axis label with its unit, from the metric's suffix; an EDP
    (``edp``, ``kws.edp``: energy_pj x latency_s) in pJ·s."""
    if name == "edp" or name.endswith(".edp"):
        return f"{name} (pJ·s)"
    stem, _, unit = name.rpartition("_")
    return f"{stem.replace('_', ' ')} ({_UNITS[unit]})" if stem and unit in _UNITS else name


MAX_LAYER_LABELS = 48  # beyond this, tick labels overlap at 6 pt on an 800 px figure


def _layer_names(layers: dict[str, list[LayerResult]]) -> list[str]:
    multi = len(layers) > 1
    return [f"{w}/{x.name}" if multi else x.name for w, xs in layers.items() for x in xs]


def _layer_axis(ax: Any, layers: dict[str, list[LayerResult]]) -> None:
    """One bar per layer on x: at most MAX_LAYER_LABELS names (every k-th layer of a big network, so
    they stay readable), and, for several workloads, a dotted line and the workload's name where each
    one starts."""
    names = _layer_names(layers)
    step = max(1, -(-len(names) // MAX_LAYER_LABELS))
    ticks = list(range(0, len(names), step))
    ax.set_xticks(ticks, [names[i] for i in ticks], rotation=70, fontsize=6, ha="right")
    ax.set_xlim(-0.6, len(names) - 0.4)
    if len(layers) > 1:
        start = 0
        for w, xs in layers.items():
            if start:
                ax.axvline(start - 0.5, color="0.5", lw=0.8, ls=":")
            ax.text(start, 1.0, f" {w}", transform=ax.get_xaxis_transform(), fontsize=7, va="top", color="0.3")
            start += len(xs)


def energy_breakdown(layers: dict[str, list[LayerResult]]) -> Figure:
    """Stacked bars: energy of each layer (all its repeats) by component (levels, MACs, leakage)."""
    fig, ax = _figure()
    flat = [x for xs in layers.values() for x in xs]
    parts = list(dict.fromkeys(k for x in flat for k in x.energy_by_level_pj))
    bottom = np.zeros(len(flat))
    for i, part in enumerate(parts):
        vals = np.array([x.energy_by_level_pj.get(part, 0.0) * x.count for x in flat]) * 1e-6
        ax.bar(range(len(flat)), vals, bottom=bottom, label=part, color=f"C{i % 10}")
        bottom += vals
    _layer_axis(ax, layers)
    ax.set_ylabel("energy per frame (µJ)")
    ax.set_title("Energy per layer, by level")
    ax.legend(fontsize=7, ncols=2)
    return fig


def latency_breakdown(layers: dict[str, list[LayerResult]]) -> Figure:
    """Stacked bars: compute cycles and the memory-bound excess (latency - compute) per layer."""
    fig, ax = _figure()
    flat = [x for xs in layers.values() for x in xs]
    compute = np.array([x.compute_cycles * x.count for x in flat])
    total = np.array([x.latency_cycles * x.count for x in flat])
    idx = range(len(flat))
    ax.bar(idx, compute, label="compute", color="C0")
    ax.bar(idx, np.maximum(total - compute, 0), bottom=compute, label="memory-bound excess", color="C1")
    _layer_axis(ax, layers)
    ax.set_ylabel("cycles per frame")
    ax.set_title("Latency per layer: compute vs memory bound")
    ax.legend(fontsize=7)
    return fig


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _decade(x: float, _pos: object = None) -> str:
    """A log axis's major tick as plain text: 1, 10, then 10² and 10⁻³ (unicode superscripts)."""
    e = round(float(np.log10(x))) if x > 0 else 0
    if x <= 0 or not np.isclose(x, 10.0 ** e):
        return f"{x:g}"
    return {0: "1", 1: "10"}.get(e, f"10{str(e).translate(_SUPERSCRIPT)}")


def roofline(layers: dict[str, list[LayerResult]], arch: Architecture) -> Figure:
    """Achieved MACs/cycle against operational intensity (MACs per DRAM word), under the roofs:
    peak = all PEs busy; slope = the DRAM's read bandwidth (words/cycle)."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    fig, ax = _figure()
    macs = {w: [x for x in xs if x.macs > 0] for w, xs in layers.items()}  # vector layers have no MACs
    flat = [x for xs in macs.values() for x in xs]
    oi = np.array([x.macs / max(x.dram_words, 1.0) for x in flat])
    perf = np.array([x.macs / max(x.latency_cycles, 1.0) for x in flat])
    peak = float(arch.num_pes)
    bw = arch.levels[0].read_bw
    lo, hi = (max(oi.min() / 4, 1e-3), oi.max() * 4) if flat else (0.1, 1000.0)  # (no MAC layer: the roof alone)
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    roof = np.minimum(peak, bw * xs) if bw else np.full_like(xs, peak)
    ax.loglog(xs, roof, color="k", lw=1.5, label=f"roof: {peak:g} MAC/cycle" + (f", {bw:g} words/cycle" if bw else ""))
    ax.scatter(oi, perf, c="C3", s=22, zorder=3, label="layers")
    for name, x, y in zip(_layer_names(macs)[:20], oi, perf, strict=False):
        ax.annotate(name, (x, y), fontsize=5, xytext=(2, 2), textcoords="offset points")
    ax.set_ylim(min(perf.min() / 2, peak / 100) if flat else peak / 100, peak * 2)
    if not flat:
        ax.text(0.5, 0.5, "no layer with MACs", transform=ax.transAxes, ha="center")
    for axis in (ax.xaxis, ax.yaxis):  # (plain text: the report draws text as written, so the
        axis.set_major_formatter(FuncFormatter(_decade))  # default's mathtext "10^{2}" showed as TeX source)
        axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    ax.set_xlabel("operational intensity (MACs per DRAM word)")
    ax.set_ylabel("MACs per cycle")
    ax.set_title(f"Roofline: {arch.name}")
    ax.legend(fontsize=7, loc="lower right")
    return fig


def utilization(layers: dict[str, list[LayerResult]]) -> Figure:
    fig, ax = _figure()
    flat = [x for xs in layers.values() for x in xs]
    ax.bar(range(len(flat)), [x.utilization * 100 for x in flat], color="C2")
    _layer_axis(ax, layers)
    ax.set_ylim(0, 105)
    ax.set_ylabel("PE utilization (%)")
    ax.set_title("Utilization per layer")
    return fig


def area_breakdown(area: dict[str, float]) -> Figure:
    fig, ax = _figure()
    parts = {k: v for k, v in area.items() if k != "total" and v > 0}
    ax.barh(list(parts), list(parts.values()), color="C4")
    ax.set_xlabel("area (mm²)")
    ax.set_title(f"Area breakdown (total {area['total']:.4g} mm²)")
    return fig


def knob_importance(importance: pd.DataFrame) -> Figure:
    """Grouped horizontal bars: per objective, the share of its variance each knob explains."""
    fig, ax = _figure()
    knobs = list(importance.index)
    n = max(len(importance.columns), 1)
    for j, col in enumerate(importance.columns):
        ax.barh(np.arange(len(knobs)) + j / (n + 1), importance[col], height=1 / (n + 1), label=col)
    ax.set_yticks(np.arange(len(knobs)) + (n - 1) / (2 * (n + 1)), knobs)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of variance explained (main effect)")
    ax.set_title("Knob importance")
    ax.legend(fontsize=7)
    return fig
