"""The counting kernel's memo: a table that fills up stops the kernel, which resumes after the
tables grow, with the same counts as a run that never ran out of room."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel import analysis, plans
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
