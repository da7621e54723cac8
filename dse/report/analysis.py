"""Numbers behind the report: knob importance and the choice of the design to break down."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def main_effects(table: pd.DataFrame, knobs: list[str], objectives: list[str]) -> pd.DataFrame:
    """Share of each objective's variance (of its log, for positive metrics) explained by each knob
    alone: Var(E[y | knob]) / Var(y) over the completed trials. Deterministic, no model fitting."""
    import pandas as pd

    done = table[table["state"] == "COMPLETE"]
    out = pd.DataFrame(0.0, index=knobs, columns=objectives)
    for obj in objectives:
        y = done[obj].to_numpy(dtype=np.float64)
        if len(y) < 2:
            continue
        y = np.log(y) if (y > 0).all() else y
        var = y.var()
        if var <= 0:
            continue
        for k in knobs:
            groups = pd.Series(y, index=done.index).groupby(done[k].astype(str))
            means, sizes = groups.mean(), groups.size()
            out.loc[k, obj] = float(((means - y.mean()) ** 2 * sizes).sum() / len(y) / var)
    return out


def chosen_trial(front: pd.DataFrame, objectives: list[str], directions: list[str]) -> int | None:
    """The Pareto design closest to the ideal point (objectives normalized to [0, 1] over the front)."""
    if not len(front):
        return None
    v = front[objectives].to_numpy(dtype=np.float64)
    v = np.where(np.array([d == "maximize" for d in directions]), -v, v)
    span = np.ptp(v, axis=0)
    norm = (v - v.min(axis=0)) / np.where(span > 0, span, 1.0)
    return int(front["trial"].iloc[int(np.argmin(np.linalg.norm(norm, axis=1)))])
