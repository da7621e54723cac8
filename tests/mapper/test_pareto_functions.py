"""The mappers' Pareto helpers against a naive double loop (the exhaustive and padding tests build
their expected fronts with these same functions, so they cannot catch a fault in them), and the
study's front past its block of 512 rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse.mappers.objectives import dominated, pareto_mask

POINTS = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=0, max_size=60)


@settings(max_examples=200, deadline=None)
@given(POINTS)
def test_pareto_mask_keeps_the_undominated_and_one_of_equal_points(pts):
    e = np.array([p[0] for p in pts], dtype=np.float64)
    lat = np.array([p[1] for p in pts], dtype=np.float64)
    want = [not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts) and p not in pts[:i]
            for i, p in enumerate(pts)]
    assert pareto_mask(e, lat).tolist() == want


@settings(max_examples=200, deadline=None)
@given(POINTS, POINTS)
def test_dominated_means_a_front_point_is_no_worse_in_both(front, pts):
    front = sorted(front)  # (the function's contract: the front sorted by energy)
    fe = np.array([p[0] for p in front], dtype=np.float64)
    fl = np.array([p[1] for p in front], dtype=np.float64)
    e = np.array([p[0] for p in pts], dtype=np.float64)
    lat = np.array([p[1] for p in pts], dtype=np.float64)
    want = [any(f[0] <= p[0] and f[1] <= p[1] for f in front) for p in pts]
    assert dominated(fe, fl, e, lat).tolist() == want


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_studys_front_past_one_block_of_rows(seed):
    """dse.study.pareto works in blocks of 512 rows; 1,300 rows cross two boundaries."""
    from dse.study.pareto import pareto_mask as study_mask

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 40, size=(1300, 3))
    dirs = ["minimize", "maximize", "minimize"]
    pts = rows * np.array([1, -1, 1])
    le = (pts[:, None, :] <= pts[None, :, :]).all(axis=2)  # le[j, i]: j no worse than i everywhere
    lt = (pts[:, None, :] < pts[None, :, :]).any(axis=2)
    want = ~(le & lt).any(axis=0)
    assert study_mask(rows, dirs).tolist() == want.tolist()
