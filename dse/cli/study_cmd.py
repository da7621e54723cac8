"""`dse sweep STUDY.yaml`, `dse results STUDY_DIR`, `dse report STUDY_DIR -o report.html`.

Thin layers over :mod:`dse.study` and :mod:`dse.report`; optuna, pandas and matplotlib are imported
inside the commands so ``dse --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dse.cli.params import path_argument, path_option


def sweep(
    study_file: Annotated[Path, path_argument(metavar="STUDY_FILE", help="Study YAML (see docs/studies.md).")],
    trials: Annotated[int | None, typer.Option("--trials", min=1, help="Finished trials wanted (default: the "
                                               "file's).")] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Local worker processes (at most one per "
                                         "core; with --dask: tasks, default one per Dask worker "
                                         "thread).")] = 1,
    storage: Annotated[str | None, typer.Option("--storage", help="optuna storage URL (default: a journal "
                                                "file in the output folder), e.g. postgresql://...")] = None,
    dask: Annotated[str | None, typer.Option("--dask", help="Run the trials on this Dask scheduler (e.g. "
                                             "tcp://host:8786); the study folder must be shared.")] = None,
    output: Annotated[Path | None, path_option("-o", "--output", help="Output folder (default: the file's).")] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
) -> None:
    """Run or resume a study; writes trials.csv (and trials.parquet) into the output folder."""
    from dse.cli.messages import user_warnings_as_lines
    from dse.study.results import pareto_table, trials_table, write_tables
    from dse.study.runner import Interrupted, run_study

    try:
        with user_warnings_as_lines():
            res = run_study(study_file, trials=trials, workers=workers, storage=storage, out=output,
                            progress=not no_progress, dask=dask)
    except Interrupted as exc:
        import sys

        solve = sys.modules.get("dse.network.solve")
        if solve is not None:  # (its workers were stopped by the signal: let the pool go, unjoined)
            solve.drop_pool()
        typer.echo(f"interrupted ({exc}): finished trials are kept; run the same `dse sweep` to resume",
                   err=True)
        raise typer.Exit(130) from None
    table = trials_table(res.study, res.optuna_study)
    files = write_tables(table, res.out)
    front = pareto_table(res.study, table)
    typer.echo(f"{res.out}: {len(table)} trials ({res.ran} new, {res.resumed} resumed after a kill), "
               f"{int(table['feasible'].sum()) if len(table) else 0} feasible, Pareto set {len(front)}; "
               f"wrote {', '.join(f.name for f in files)}", err=True)


def results(
    study_dir: Annotated[Path, path_argument(metavar="STUDY_DIR", help="A sweep's output folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
    storage: Annotated[str | None, typer.Option("--storage", help="optuna storage URL, if not the default.")] = None,
) -> None:
    """The Pareto set of a study (and the full table as trials.csv / trials.parquet)."""
    from costmodel.errors import UserError
    from dse.study.results import objective_columns, pareto_table, trials_table, write_tables
    from dse.study.runner import read_study

    study, ost = read_study(study_dir, storage)
    table = trials_table(study, ost)
    if not (table["state"] == "COMPLETE").any():  # (an error writes nothing)
        states = ", ".join(f"{n} {s.lower()}" for s, n in table["state"].value_counts().sort_index().items())
        why = (f"of its {len(table)} trials {states}; reasons are in `dse sweep`'s trials.csv"
               + ("; `dse sweep` again resumes those that were running when it stopped"
                  if (table["state"] == "RUNNING").any() else "")
               if len(table) else "run `dse sweep` first")
        raise UserError(f"{study_dir}: no completed trials to show ({why})")
    try:
        write_tables(table, study_dir)
    except UserError as exc:  # (a read-only folder, an archived study: the answer is still shown)
        typer.echo(f"warning: the tables are not written: {exc}", err=True)
    front = pareto_table(study, table)
    cols = ["trial", *(k.name for k in study.knobs), *objective_columns(study)[0]]
    if as_json:
        print(json.dumps({"study": study.name, "trials": len(table),
                          "feasible": int(table["feasible"].sum()),
                          "pareto": _records(front[cols])}, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    out = Table(title=f"{study.name}: Pareto set ({len(front)} of {len(table)} trials)")
    for c in cols:
        out.add_column(c, justify="right")
    for _, row in front[cols].iterrows():
        out.add_row(*(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row))
    # never squeezed to the terminal (rich would cut names and fold numbers): a wider table wraps
    need = Console(width=10_000, markup=False).measure(out).minimum
    Console(width=max(Console().width, need), markup=False).print(out)
    if front.empty:
        done = int((table["state"] == "COMPLETE").sum())
        typer.echo(f"note: no feasible design among the {done} completed trials; the 'violation:' columns of "
                   f"{study_dir / 'trials.csv'} say by how much each missed its constraints", err=True)


def _records(frame: Any) -> list[dict[str, Any]]:
    """The rows as JSON values at full precision (pandas' ``to_json`` keeps 10 decimals: a latency of
    1.5707008940823217e-05 s had come out 1.5707e-05, and one below 5e-11 as 0); NaN and NA as null."""
    import pandas as pd

    def value(v: Any) -> Any:
        if not isinstance(v, str) and pd.isna(v):
            return None
        return v.item() if hasattr(v, "item") else v  # (numpy scalars as Python's)

    return [{k: value(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def report(
    source: Annotated[Path, path_argument(metavar="SOURCE", help="A sweep's output folder, or a `dse map --json` file.")],
    output: Annotated[Path, path_option("-o", "--output", file=True, help="HTML file to write.")] = Path("report.html"),
    storage: Annotated[str | None, typer.Option("--storage", help="optuna storage URL, if not the default.")] = None,
    hw: Annotated[Path | None, path_option("--hw", help="For a map result: its config, if not a shipped one.")]
    = None,
    page: Annotated[Path | None, path_option("--page", file=True, help="Also the page as one PNG (its text, table and "
                                              "plots composed with matplotlib, not a browser screenshot).")]
    = None,
) -> None:
    """A self-contained HTML report (plots embedded) plus the PNG and SVG files next to it."""
    from costmodel.errors import UserError
    from dse.report import write_map_report, write_report
    from dse.report.page import check_page

    if not source.exists():
        raise UserError(f"{source}: no such file or folder (expected a sweep's output folder or a "
                        "`dse map --json` document)")
    if page is not None:  # (before the report is written; the report checks its own output)
        from dse.study.runner import input_files

        check_page(page, output, source, hw, *([] if source.is_file() else input_files(source, storage)))
    from dse.cli.messages import user_warnings_as_lines

    try:
        with user_warnings_as_lines():
            if source.is_file():
                path = write_map_report(source, output, hw=hw)
            else:
                path = write_report(source, output, storage=storage)
        typer.echo(f"wrote {path}", err=True)
        if page is not None:
            from dse.report.page import render_page

            typer.echo(f"wrote {render_page(path, page)}", err=True)
    except OSError as exc:  # what the check cannot see, e.g. a file named like the <stem>_files folder
        raise UserError(f"{exc.filename or output}: cannot write ({exc.strerror or exc})") from None


def register(app: typer.Typer) -> None:
    """Add ``sweep``, ``results`` and ``report`` to the root app."""
    app.command("sweep")(sweep)
    app.command("results")(results)
    app.command("report")(report)
