"""A study's trials as a table (one row per trial: knobs, metrics, feasibility) and its Pareto set.

Columns: ``trial``, ``state``, ``same_as`` (the first earlier trial of the same design, which a
revisited design's evaluation copies; a nullable integer; taken from the trials' parameters, so that
it does not depend on which worker finished first), ``feasible``, ``invalid`` (reason, for pruned designs), every knob
(derived ones included; an integer knob a nullable integer, as ``same_as``, so that a trial still
running does not turn its column into floats), every metric, and ``violation:<constraint>`` -- all
of them even when no trial has values for them yet. ``write_tables`` writes ``trials.csv`` and ``trials.parquet``
(pyarrow; atomically: never a partial file).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from costmodel.atomic import atomic_open
from dse.study.metrics import metric_names
from dse.study.pareto import pareto_mask
from dse.study.schema import TRIAL_COLUMNS

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from dse.study.schema import Study


def trials_table(study: Study, ost: optuna.Study) -> pd.DataFrame:
    import pandas as pd

    rows = []
    knob_names = [k.name for k in study.knobs]
    first: dict[tuple, int] = {}  # design (its sampled parameters) -> the first finished trial of it
    for t in sorted(ost.get_trials(deepcopy=False), key=lambda t: t.number):
        knobs = t.user_attrs.get("knobs", t.params)
        metrics = t.user_attrs.get("metrics", {})
        viol = t.user_attrs.get("violations", {})
        design = tuple(sorted(t.params.items()))
        same_as = first.get(design)
        if same_as is None and t.state.name in ("COMPLETE", "PRUNED"):
            first[design] = t.number
        row = {"trial": t.number, "state": t.state.name, "same_as": same_as,
               "feasible": t.state.name == "COMPLETE" and all(v <= 0 for v in viol.values()),
               "invalid": t.user_attrs.get("invalid")}
        row.update({k: knobs.get(k) for k in knob_names})
        row.update(metrics)
        row.update({f"violation:{k}": v for k, v in viol.items()})
        rows.append(row)
    columns = [*TRIAL_COLUMNS, *knob_names,
               *metric_names(study.workload_names), *(f"violation:{c.key}" for c in study.constraints)]
    table = pd.DataFrame(rows, columns=columns)
    table["same_as"] = table["same_as"].astype("Int64")
    for k in knob_names:  # (a RUNNING trial has no values yet: the column stays integer, not 512.0)
        values = [r[k] for r in rows if r[k] is not None]
        if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
            table[k] = table[k].astype("Int64")
    return table


def objective_columns(study: Study) -> tuple[list[str], list[str]]:
    return [o.metric for o in study.spec.objectives], [o.direction for o in study.spec.objectives]


def pareto_table(study: Study, table: pd.DataFrame) -> pd.DataFrame:
    """Feasible designs that no other feasible design dominates on the study's objectives, best first
    (one row per distinct design: the first trial that evaluated it)."""
    cols, dirs = objective_columns(study)
    feas = table[table["feasible"]] if len(table) else table
    if not len(feas):
        return feas
    knobs = [k.name for k in study.knobs]
    # a revisited design: its first trial (without knobs every trial is the one design)
    feas = feas.drop_duplicates(subset=knobs) if knobs else feas.head(1)
    mask = pareto_mask(feas[cols].to_numpy(dtype=np.float64), dirs)
    return feas[mask].sort_values(cols, ascending=[d == "minimize" for d in dirs])


def _parquet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """Parquet columns have one type: a knob whose choices mix numbers and text is written as text."""
    import pandas as pd

    out = table.copy()
    for c in table.columns:
        if table[c].dtype == object and len({type(v) for v in table[c] if not pd.isna(v)}) > 1:
            out[c] = table[c].map(lambda v: None if pd.isna(v) else str(v))
    return out


TABLES = ("trials.csv", "trials.parquet")
"""The files :func:`write_tables` writes into a sweep's folder."""


def write_tables(table: pd.DataFrame, out: Path) -> list[Path]:
    """``trials.csv`` and ``trials.parquet`` in ``out``; returns the files written."""
    csv, parquet = (out / name for name in TABLES)
    with atomic_open(csv, "w", newline="") as fh:
        table.to_csv(fh, index=False)
    with atomic_open(parquet, "wb") as fh:
        _parquet_safe(table).to_parquet(fh, index=False, engine="pyarrow")
    return [csv, parquet]
