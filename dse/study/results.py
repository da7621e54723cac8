"""A study's trials as a table (one row per trial: knobs, metrics, feasibility) and its Pareto set.

Columns: ``trial``, ``state``, ``feasible``, ``invalid`` (reason, for pruned designs), every knob
(derived ones included), every metric, and ``violation:<constraint>``. ``write_tables`` writes
``trials.csv`` and ``trials.parquet`` (pyarrow; atomically: never a partial file).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dse.study.pareto import pareto_mask

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from dse.study.schema import Study


def trials_table(study: Study, ost: optuna.Study) -> pd.DataFrame:
    import pandas as pd

    rows = []
    knob_names = [k.name for k in study.knobs]
    for t in ost.get_trials(deepcopy=False):
        knobs = t.user_attrs.get("knobs", t.params)
        metrics = t.user_attrs.get("metrics", {})
        viol = t.user_attrs.get("violations", {})
        row = {"trial": t.number, "state": t.state.name, "same_as": t.user_attrs.get("same_as"),
               "feasible": t.state.name == "COMPLETE" and all(v <= 0 for v in viol.values()),
               "invalid": t.user_attrs.get("invalid")}
        row.update({k: knobs.get(k) for k in knob_names})
        row.update(metrics)
        row.update({f"violation:{k}": v for k, v in viol.items()})
        rows.append(row)
    return pd.DataFrame(rows)


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
    feas = feas.drop_duplicates(subset=knobs) if knobs else feas  # a revisited design: its first trial
    mask = pareto_mask(feas[cols].to_numpy(dtype=np.float64), dirs)
    return feas[mask].sort_values(cols, ascending=[d == "minimize" for d in dirs])


def _atomic(path: Path, write: object) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)  # type: ignore[operator]
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _parquet_safe(table: pd.DataFrame) -> pd.DataFrame:
    """Parquet columns have one type: a knob whose choices mix numbers and text is written as text."""
    import pandas as pd

    out = table.copy()
    for c in table.columns:
        if table[c].dtype == object and len({type(v) for v in table[c] if not pd.isna(v)}) > 1:
            out[c] = table[c].map(lambda v: None if pd.isna(v) else str(v))
    return out


def write_tables(table: pd.DataFrame, out: Path) -> list[Path]:
    """``trials.csv`` and ``trials.parquet`` in ``out``; returns the files written."""
    csv, parquet = out / "trials.csv", out / "trials.parquet"
    _atomic(csv, lambda p: table.to_csv(p, index=False))
    _atomic(parquet, lambda p: _parquet_safe(table).to_parquet(p, index=False, engine="pyarrow"))
    return [csv, parquet]
