"""Numbers behind the report: knob importance and the choice of the design to break down."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def main_effects(table: pd.DataFrame, knobs: list[str], objectives: list[str]) -> pd.DataFrame:
    """Share of each objective's variance (of its log, for positive metrics) explained by each knob
    alone, over the completed trials: the main effect Var(E[y | knob]) / Var(y), adjusted for the
    number of groups (epsilon squared: (SS_between - (k - 1) MS_within) / SS_total, at least 0),
    with a numeric knob of more distinct values than about sqrt(trials) grouped into that many
    quantile bins. Why: with one group per value, a knob sampled from a range (each trial its own
    value) explained all of every objective's variance, pure noise included. Deterministic, no
    model fitting; NaN where the trials are too few to tell (no two in one group)."""
    import pandas as pd

    done = table[table["state"] == "COMPLETE"]
    out = pd.DataFrame(0.0, index=knobs, columns=objectives)
    n = len(done)
    groups = {k: _groups(done[k], max(1, round(np.sqrt(n)))) for k in knobs}
    for obj in objectives:
        y = done[obj].to_numpy(dtype=np.float64)
        if n < 2:
            continue
        y = np.log(y) if (y > 0).all() else y
        ss_total = float(((y - y.mean()) ** 2).sum())
        if ss_total <= 0:
            continue
        for k in knobs:
            by = pd.Series(y, index=done.index).groupby(groups[k])
            means, sizes = by.mean(), by.size()
            n_groups = len(sizes)
            if n - n_groups < 1:
                out.loc[k, obj] = np.nan
                continue
            ss_between = float(((means - y.mean()) ** 2 * sizes).sum())
            ms_within = (ss_total - ss_between) / (n - n_groups)
            out.loc[k, obj] = max(0.0, (ss_between - (n_groups - 1) * ms_within) / ss_total)
    return out


def _groups(values: pd.Series, bins: int) -> pd.Series:
    """The group of each trial for one knob: its value, or for a numeric knob with more than ``bins``
    distinct values, its quantile bin."""
    import pandas as pd

    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if numeric and values.nunique() > bins:
        return pd.qcut(values.rank(method="first"), bins, labels=False)
    return values.astype(str)


def chosen_trial(front: pd.DataFrame, objectives: list[str], directions: list[str]) -> int | None:
    """The Pareto design closest to the ideal point (objectives normalized to [0, 1] over the front)."""
    if not len(front):
        return None
    v = front[objectives].to_numpy(dtype=np.float64)
    v = np.where(np.array([d == "maximize" for d in directions]), -v, v)
    span = np.ptp(v, axis=0)
    norm = (v - v.min(axis=0)) / np.where(span > 0, span, 1.0)
    return int(front["trial"].iloc[int(np.argmin(np.linalg.norm(norm, axis=1)))])
