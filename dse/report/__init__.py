"""Reports for power-performance reviews: ``write_report(STUDY_DIR, report.html)`` renders the
study's figures (:mod:`dse.report.plots`) as PNG and SVG files next to the HTML and embeds them in one
self-contained page (:mod:`dse.report.html`). ``write_map_report`` does the per-layer part for one
design from a ``dse map --json`` document.

Per-layer breakdowns are of one *chosen* design: the Pareto design closest to the ideal point
(:func:`dse.report.analysis.chosen_trial`), re-evaluated (the mapper is deterministic for a seed
and budget, so this reproduces the trial's numbers).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.atomic import atomic_write_all, check_output_file
from costmodel.yamlio import format_path

if TYPE_CHECKING:
    import pandas as pd

SECTIONS = ("summary", "pareto", "ppa", "energy", "latency", "roofline", "utilization", "area", "importance")
MAP_SECTIONS = ("summary", "energy", "latency", "roofline", "utilization", "area")


def _save(fig: object, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, **({"metadata": {"Date": None}} if fmt == "svg" else {}))  # type: ignore[attr-defined]
    return buf.getvalue()


def write_report(study_dir: str | Path, output: str | Path, *, storage: str | None = None) -> Path:
    """Write ``output`` (HTML) and ``<output stem>_files/*.png, *.svg`` for a sweep's folder."""
    from costmodel.area import area_breakdown
    from costmodel.errors import UserError
    from dse.report import plots
    from dse.report.analysis import chosen_trial, main_effects
    from dse.report.html import Section, render
    from dse.study.design import evaluate_design, load_layers
    from dse.study.results import objective_columns, pareto_table, trials_table
    from dse.study.runner import changed_input, input_files, read_study

    study_dir = Path(study_dir)
    output = check_output_file(output, "output", study_dir, *input_files(study_dir, storage))
    study, ost = read_study(study_dir, storage)
    if (at := changed_input(study, study_dir)) is not None:  # (its breakdowns re-evaluate a design)
        warnings.warn(f"{study.source}: {format_path(at)}: the file changed since the trials were run: the "
                      "breakdowns are of the design on the file as it is now, the tables of the trials",
                      UserWarning, stacklevel=2)
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
    if design.arch is None:  # (a completed trial's design: only a changed hardware template makes it invalid)
        raise UserError(f"{study_dir}: trial {int(row['trial'])}'s design is no longer valid: {design.invalid}")
    area = dict(area_breakdown(design.arch))
    # each design once: a revisited design (same_as) would weigh its knob values twice
    importance = main_effects(table[table["same_as"].isna()], [k.name for k in study.sampled_knobs], objectives)

    n_feas = int(table["feasible"].sum())
    m = study.spec.mapper
    workloads = ", ".join(f"{w.name} ({w.model or f'{len(w.layers or [])} inline layers'})"
                          for w in study.spec.workloads)
    summary = (f"{len(table)} trials ({(table['state'] == 'COMPLETE').sum()} completed, "
               f"{(table['state'] == 'PRUNED').sum()} invalid designs, {n_feas} feasible); "
               f"Pareto set: {len(front)} designs. Sampler {study.spec.sampler.kind}, seed "
               f"{study.spec.sampler.seed}; hardware template {study.hw_source.name}; workloads {workloads}; "
               f"{m.mapper} mapper, objective {m.objective}, budget {m.max_evaluations:,} evaluations per "
               f"layer shape, seed {m.seed}. Breakdowns below are of trial {int(row['trial'])} "
               f"({plots.knob_label(row, knobs)}).")
    figures = Figures(output)
    design_secs = _design_sections(design.layers, design.arch, area, figures)
    sections = [
        Section("summary", "Summary", summary),
        Section("pareto", "Pareto front", "Feasible designs coloured by area; grey: infeasible.",
                png=figures.render("pareto", lambda: plots.pareto_front(table, front, objectives, knobs, directions))),
        Section("ppa", "PPA summary of the Pareto designs", "", ppa_table(front, knobs, objectives)),
        *design_secs,
        Section("importance", "Knob importance", "Main-effect share of each objective's (log) variance, adjusted for the number of groups "
                "(numeric knobs with many values in quantile bins).",
                png=figures.render("importance", lambda: plots.knob_importance(importance))),
    ]
    figures.write(render(f"Study report: {study.name}", sections), SECTIONS)
    return output


def ppa_table(front: pd.DataFrame, knobs: list[str], objectives: list[str]) -> str:
    """The HTML table of every Pareto design: its trial, knobs and PPA metrics. (All of them: it
    had stopped at 30 rows without a word; the page PNG shows the first rows and says how many more.)"""
    cols = ["trial", *knobs, *dict.fromkeys([*objectives, "area_mm2", "power_mw", "latency_ms", "energy_uj",
                                             "utilization"])]
    metric_fmt = {c: "{:.4g}" for c in cols if c not in ("trial", *knobs)}
    # (escaped: a knob's preset label is the user's text, and "<script>" had reached the page as is)
    return (front[cols].style.set_uuid("ppa").format(escape="html").format(metric_fmt, escape="html")
            .hide(axis="index").to_html())


class Figures:
    """The figures of one report, kept in memory until :meth:`write` puts them in
    ``<output stem>_files/`` (PNG and SVG) together with the HTML page: a report that fails or is
    killed half-way leaves the previous report's files, not some new figures beside old ones."""

    def __init__(self, output: Path) -> None:
        self.output = output
        self.folder = output.parent / f"{output.stem}_files"
        self.files: dict[Path, bytes] = {}

    def render(self, name: str, draw: Callable[[], Any]) -> bytes:
        """Draw a figure in the default style; keep it as ``name.png`` and ``.svg``; return the PNG."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        # a fixed salt: the SVGs' clip-path ids are then the same on every run (byte-identical reports)
        # (text as written: a layer named conv$1$ is no math; "$...$" had failed to parse)
        with plt.style.context("default"), matplotlib.rc_context({"svg.hashsalt": "accel-dse",
                                                                  "text.parse_math": False}):
            fig = draw()
            data, svg = _save(fig, "png"), _save(fig, "svg")
        self.files[self.folder / f"{name}.png"] = data
        self.files[self.folder / f"{name}.svg"] = svg
        return data

    def write(self, html: str, sections: tuple[str, ...]) -> None:
        """The page and its figures, all at once; then the figures of report sections outside
        ``sections`` go: a study report written earlier to the same name would leave its Pareto
        front and knob importance beside a design report that has neither."""
        made = not self.folder.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            atomic_write_all({**self.files, self.output: html.encode("utf-8")})
        except BaseException:
            if made:  # (a full disk or Ctrl-C: no empty <stem>_files/ left behind)
                with contextlib.suppress(OSError):
                    self.folder.rmdir()
            raise
        for name in set(SECTIONS) - set(sections):
            for ext in ("png", "svg"):
                (self.folder / f"{name}.{ext}").unlink(missing_ok=True)


def _design_sections(layers: dict[str, list[Any]], arch: Any, area: dict[str, float], figures: Figures) -> list[Any]:
    """The per-layer sections of one design: energy, latency, roofline, utilization, area."""
    from dse.report import plots
    from dse.report.html import Section

    return [
        Section("energy", "Energy breakdown per layer and level",
                png=figures.render("energy", lambda: plots.energy_breakdown(layers))),
        Section("latency", "Latency breakdown per layer", "Compute cycles and the excess when memory traffic "
                "sets the latency.", png=figures.render("latency", lambda: plots.latency_breakdown(layers))),
        Section("roofline", "Roofline of the chosen design",
                png=figures.render("roofline", lambda: plots.roofline(layers, arch))),
        Section("utilization", "Utilization per layer",
                png=figures.render("utilization", lambda: plots.utilization(layers))),
        Section("area", "Area breakdown", png=figures.render("area", lambda: plots.area_breakdown(area))),
    ]


def write_map_report(result_json: str | Path, output: str | Path, *, hw: str | Path | None = None) -> Path:
    """A report of one design from a ``dse map --json`` document: summary and per-layer sections.
    The config is the document's ``hw`` (a shipped name) unless ``hw`` is given; its fingerprint
    must match the document's."""
    import json

    from costmodel.arch import load_architecture
    from costmodel.area import area_breakdown
    from costmodel.errors import UserError
    from dse.report.html import Section, render
    from dse.report.mapdoc import check_map_document
    from dse.study.design import layer_result

    src = Path(result_json)
    output = check_output_file(output, "output", src, hw)
    try:
        doc = json.loads(src.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{src}: not a `dse map --json` document ({type(exc).__name__}: {exc})") from None
    check_map_document(doc, src)
    try:
        arch = load_architecture(hw or doc["hw"])
    except UserError as exc:  # the document's own config name: say where it came from
        raise exc if hw else UserError(f"{src}: hw: {exc}") from None
    if arch.fingerprint() != doc.get("config_fingerprint"):
        raise UserError(f"{src}: was mapped on a different config than {arch.source} (fingerprints "
                        f"{doc.get('config_fingerprint')} vs {arch.fingerprint()}); pass the right one (hw, the CLI's --hw)")
    model = doc.get("model", "model")
    layers = {model: [layer_result(x["name"], x, arch) for x in doc["layers"]
                      if x.get("latency_cycles") or x.get("energy_pj")]}
    if not any(layers.values()):
        raise UserError(f"{src}: holds no layer with energy or latency to report")
    objective = doc.get("objective") or {}
    search = ", ".join(f"{k} {v}" for k, v in (
        ("mapper", doc.get("mapper")), ("objective", objective.get("name") if isinstance(objective, dict) else objective),
        ("seed", doc.get("seed"))) if v is not None)  # (what the document says of its search)
    summary = (f"{model} on {arch.name}: {doc['energy_pj'] * 1e-6:.4g} uJ, "
               f"{doc['latency_s'] * 1e3:.4g} ms, {doc['power_mw']:.4g} mW, {doc['area_mm2']:.4g} mm2, "
               f"utilization {doc['utilization']:.1%}{f' ({search})' if search else ''}.")
    figures = Figures(output)
    sections = [Section("summary", "Summary", summary),
                *_design_sections(layers, arch, dict(area_breakdown(arch)), figures)]
    figures.write(render(f"Design report: {model} on {arch.name}", sections), MAP_SECTIONS)
    return output


__all__ = ["MAP_SECTIONS", "SECTIONS", "write_map_report", "write_report"]

