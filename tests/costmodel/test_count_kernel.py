"""The counting kernel's memo: a table that fills up stops the kernel, which resumes after the
tables grow, with the same counts as a run that never ran out of room."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import analysis, count_kernel, plans
from costmodel.arch import load_architecture
from costmodel.plans import plan_for
from costmodel.problem import conv2d, conv_transpose2d
from costmodel.random_mappings import random_mappings


# exact: merged halos of the input's windows; timeloop (which merges no halos): the transposed
# conv's output windows, whose distinct elements are memoized sum-set sizes
@pytest.mark.parametrize("model, prob", [
    ("exact", conv2d(8, 16, 14, 14, kernel=3, stride=2, padding=1)),
    ("timeloop", conv_transpose2d(8, 8, 7, 7, kernel=3, stride=2)),
])
def test_tiny_memo_grows_and_resumes(model, prob):
    arch = load_architecture("eyeriss_like")
    batch = random_mappings(prob, arch, 3000, seed=7)
    roomy = analysis.access_counts(prob, arch, batch, model=model)
    plan = plan_for(analysis._Plan, prob, arch)
    grown_before = plan.memo.fill.copy()
    assert grown_before[0] > 0  # the batch needed memo entries
    tiny = analysis._Memo()
    tiny.slots, tiny.keys = np.full((2, 3), -1, np.int64), np.zeros(4, np.int64)
    tiny.ent, tiny.rows = np.zeros((1, 2), np.int64), np.zeros(2, np.int64)
    plan.memo = tiny
    try:
        again = analysis.access_counts(prob, arch, batch, model=model)
    finally:
        plans._PLANS.clear()
    assert tiny.fill[0] == grown_before[0]  # every pattern stored once, after many resumes
    for name in ("fills", "reads", "updates", "hops", "tile_words", "temporal_steps"):
        assert np.array_equal(getattr(roomy, name), getattr(again, name)), name


def test_loop_vectorizer_setting_is_restored():
    """count_batch turns LLVM's loop vectorizer off only around its own call: numba's setting
    (read whenever a kernel compiles) is the same afterwards, even when a table fills up."""
    from numba.core import config

    before = config.LOOP_VECTORIZE
    prob = conv2d(4, 8, 6, 6, kernel=3)
    arch = load_architecture("tiny")
    analysis.access_counts(prob, arch, random_mappings(prob, arch, 50, seed=3))
    assert config.LOOP_VECTORIZE == before


def test_stability_row_longer_than_the_rows_table():
    """A merged window's stability row (2 x span + 1 words, span ~ 50,000 here) longer than the whole
    rows table: the kernel stops without reading a row for it (it read past the table and crashed
    the process), the tables grow, and the counts equal those of a run with room from the start."""
    prob = conv2d(1, 1, 150004, 1, kernel=(4, 1), stride=(50000, 1))
    arch = load_architecture("tiny")
    batch = random_mappings(prob, arch, 20, seed=0)
    plans._PLANS.clear()
    try:
        first = analysis.access_counts(prob, arch, batch)
        plan = plan_for(analysis._Plan, prob, arch)
        assert len(plan.memo.rows) > len(analysis._Memo().rows)  # the rows table had to grow
        roomy = analysis._Memo()
        roomy.rows = np.zeros(2 * len(plan.memo.rows), np.int64)
        plan.memo = roomy
        again = analysis.access_counts(prob, arch, batch)
    finally:
        plans._PLANS.clear()
    for name in ("fills", "reads", "updates", "hops", "tile_words", "temporal_steps"):
        assert np.array_equal(getattr(first, name), getattr(again, name)), name


_IN_BOUNDS = textwrap.dedent("""
    import numpy as np
    from costmodel import analysis, plans
    from costmodel.arch import load_architecture
    from costmodel.plans import plan_for
    from costmodel.problem import conv1d, conv2d, conv_transpose2d, depthwise_conv2d, matmul
    from costmodel.random_mappings import random_mappings

    cases = [(conv2d(1, 1, 150004, 1, kernel=(4, 1), stride=(50000, 1)), "tiny", 10),
             (conv1d(4, 4, 100002, kernel=3), "eyeriss_like", 10)]
    layers = [conv2d(8, 16, 14, 14, kernel=3, stride=2, padding=1), conv2d(16, 32, 20, 20, kernel=3, padding=2, dilation=2),
              depthwise_conv2d(32, 14, 14, kernel=3, padding=1), conv_transpose2d(8, 8, 7, 7, kernel=3, stride=2),
              matmul(32, 48, 64)]
    cases += [(p, c, 200) for p in layers for c in ("tpu_like", "eyeriss_like", "simba_like", "ar_glasses_npu")]
    for prob, cfg, n in cases:
        arch = load_architecture(cfg)
        batch = random_mappings(prob, arch, n, seed=1)
        for model in ("exact", "timeloop"):
            plans._PLANS.clear()
            plan_for(analysis._Plan, prob, arch).memo.rows = np.zeros(2, np.int64)  # (full at once)
            analysis.access_counts(prob, arch, batch, model=model)
    print("ok", len(cases))
""")


def test_no_read_out_of_bounds_under_numba_boundscheck(tmp_path):
    """The kernel compiled with numba's bounds checks (in a cache of its own) over memo tables that
    fill up at once, windows whose stability rows are longer than the whole rows table (a read past
    it crashed the process), and random mappings of strided, dilated, depthwise, transposed and
    matmul layers on four configs, in both models: no index out of bounds."""
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    repo = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", _IN_BOUNDS], cwd=repo, env=env, capture_output=True, text=True,
                       timeout=900, check=False)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr[-3000:]


@st.composite
def _merged_keys(draw):
    """A MERGED memo key (1-2 terms: tile extent, then (place value, factor) digits) and its coefficients."""
    n_terms = draw(st.integers(1, 2))
    coefs = [draw(st.sampled_from([1, 2, 3, 7, 40])) for _ in range(n_terms)]  # (the reference is O(reach x |U| x |O|))
    key = [count_kernel.MERGED, 0, 0]
    for _ in range(n_terms):
        digits = draw(st.lists(st.tuples(st.integers(1, 9), st.integers(2, 4)), max_size=2))
        key += [draw(st.integers(1, 6)), len(digits), *[v for d in digits for v in d]]
    return np.array(key, np.int64), np.array(coefs, np.int64)


@settings(max_examples=200, deadline=None)
@given(_merged_keys())
def test_merged_row_equals_its_definition_by_sets(case):
    """The stability row against its definition written with sets (docs/semantics.md): X the
    tile's elements, O the merged children's offsets, U = X + O; per shift Δ, the elements of U that
    every child covering them (v - o in X) still holds after moving by Δ (v - o + Δ in X)."""
    key, coefs = case
    xs, offs, p = [0], [0], 3
    for c in coefs:
        n, nd = int(key[p]), int(key[p + 1])
        xs = [a + c * i for a in xs for i in range(n)]
        digit_vals = [0]
        for w, f in zip(key[p + 2:p + 2 + 2 * nd:2], key[p + 3:p + 3 + 2 * nd:2]):
            digit_vals = [v + a * int(w) for v in digit_vals for a in range(int(f))]
        offs = [o + c * v for o in offs for v in digit_vals]
        p += 2 + 2 * nd
    x_set, o_set = set(xs), set(offs)
    u = {a + o for a in x_set for o in o_set}
    reach, span = max(x_set), max(x_set) + 3
    want = np.zeros(2 * span + 1, np.int64)
    for dlt in range(-reach, reach + 1):
        want[span + dlt] = sum(all(v - o + dlt in x_set for o in o_set if v - o in x_set) for v in u)
    row = np.full(2 * span + 1, -1, np.int64)
    assert count_kernel._merged_row(key, len(coefs), coefs, span, row) == len(u)
    assert np.array_equal(row, want)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40), st.integers(1, 60), st.integers(1, 40), st.integers(1, 60))
def test_progression_sum_size_counts_the_sums(n0, w0, n1, w1):
    """The closed form the kernel takes for a one-level merge at the MACs against the set of sums."""
    want = len({x * w0 + y * w1 for x in range(n0) for y in range(n1)})
    assert count_kernel.progression_sum_size(n0, w0, n1, w1) == want
