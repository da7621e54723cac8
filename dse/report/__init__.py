"""Reports for power-performance reviews: ``write_report(STUDY_DIR, report.html)`` renders the
study's figures (:mod:`dse.report.plots`) as PNG files next to the HTML and embeds them in one
self-contained page (:mod:`dse.report.html`).

Per-layer breakdowns are of one *chosen* design: the Pareto design closest to the ideal point
(:func:`dse.report.analysis.chosen_trial`), re-evaluated (the mapper is deterministic for a seed
and budget, so this reproduces the trial's numbers).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

SECTIONS = ("summary", "pareto", "ppa", "energy", "latency", "roofline", "utilization", "area", "importance")


def _png(fig: object) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # type: ignore[attr-defined]
    return buf.getvalue()


def write_report(study_dir: str | Path, output: str | Path, *, storage: str | None = None) -> Path:
    """Write ``output`` (HTML) and ``<output stem>_files/*.png``; returns the HTML path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from costmodel.area import area_breakdown
    from costmodel.errors import UserError
    from dse.report import plots
    from dse.report.analysis import chosen_trial, main_effects
    from dse.report.html import Section, render
    from dse.study.design import evaluate_design, load_layers
    from dse.study.results import objective_columns, pareto_table, trials_table
    from dse.study.runner import create, load_study_dir, open_storage

    study_dir, output = Path(study_dir), Path(output)
    study = load_study_dir(study_dir)
    ost = create(study, open_storage(study_dir, storage))
    table = trials_table(study, ost)
    if not len(table) or not (table["state"] == "COMPLETE").any():
        raise UserError(f"{study_dir}: no completed trials to report (run `dse sweep` first)")
    front = pareto_table(study, table)
    objectives, directions = objective_columns(study)
    knobs = [k.name for k in study.knobs]
    pick = chosen_trial(front, objectives, directions)
    pool = front if pick is not None else table[table["state"] == "COMPLETE"]
    row = pool[pool["trial"] == pick].iloc[0] if pick is not None else pool.iloc[0]
    design = evaluate_design(study, load_layers(study), {k.name: row[k.name] for k in study.sampled_knobs})
    assert design.arch is not None
    area = dict(area_breakdown(design.arch))
    importance = main_effects(table, [k.name for k in study.sampled_knobs], objectives)

    ppa_cols = ["trial", *knobs, *dict.fromkeys([*objectives, "area_mm2", "power_mw", "latency_ms",
                                                 "energy_uj", "utilization"])]
    ppa = front[ppa_cols].head(30)
    n_feas = int(table["feasible"].sum())
    summary = (f"{len(table)} trials ({(table['state'] == 'COMPLETE').sum()} completed, "
               f"{(table['state'] == 'PRUNED').sum()} invalid designs, {n_feas} feasible); "
               f"Pareto set: {len(front)} designs. Sampler {study.spec.sampler.kind}, seed "
               f"{study.spec.sampler.seed}; hardware template {study.hw_source.name}; workloads "
               f"{', '.join(study.workload_names)}. Breakdowns below are of trial {int(row['trial'])} "
               f"({plots._knob_label(row, knobs)}).")
    with plt.style.context("default"):
        figs = {
            "pareto": plots.pareto_front(table, front, objectives, knobs),
            "energy": plots.energy_breakdown(design.layers),
            "latency": plots.latency_breakdown(design.layers),
            "roofline": plots.roofline(design.layers, design.arch),
            "utilization": plots.utilization(design.layers),
            "area": plots.area_breakdown(area),
            "importance": plots.knob_importance(importance),
        }
        pngs = {k: _png(f) for k, f in figs.items()}
    files = output.parent / f"{output.stem}_files"
    files.mkdir(parents=True, exist_ok=True)
    for k, data in pngs.items():
        _atomic_bytes(files / f"{k}.png", data)
    metric_fmt = {c: "{:.4g}" for c in ppa_cols if c not in ("trial", *knobs)}
    sections = [
        Section("summary", "Summary", summary),
        Section("pareto", "Pareto front", "Feasible designs coloured by area; grey: infeasible.", png=pngs["pareto"]),
        Section("ppa", "PPA summary of the Pareto designs", "", ppa.style.format(metric_fmt).hide(axis="index")
                .to_html()),
        Section("energy", "Energy breakdown per layer and level", png=pngs["energy"]),
        Section("latency", "Latency breakdown per layer", "Compute cycles and the excess when memory traffic "
                "sets the latency.", png=pngs["latency"]),
        Section("roofline", "Roofline of the chosen design", png=pngs["roofline"]),
        Section("utilization", "Utilization per layer", png=pngs["utilization"]),
        Section("area", "Area breakdown", png=pngs["area"]),
        Section("importance", "Knob importance", "Main-effect share of each objective's (log) variance.",
                png=pngs["importance"]),
    ]
    _atomic_bytes(output, render(f"Study report: {study.name}", sections).encode("utf-8"))
    return output


def _atomic_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


__all__ = ["SECTIONS", "write_report"]
