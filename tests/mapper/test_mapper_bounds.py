"""The branch-and-bound's lower bounds never exceed what the cost model evaluates."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate_batch
from costmodel.problem import conv2d, conv_transpose2d, depthwise_conv2d, matmul
from costmodel.random_mappings import random_mappings
from dse.mappers.bounds import distinct_sums, lower_bounds, touched
from dse.mapspace import Mapspace

CONFIGS = ["tiny", "eyeriss_like", "tpu_like", "simba_like", "nvdla_small_like", "ar_glasses_npu",
           "edge_tpu_like", "eyeriss_timeloop_32nm"]
LAYERS = [conv2d(16, 16, 8, 8, kernel=3, padding=1), conv2d(8, 16, 9, 9, kernel=1, stride=2),
          depthwise_conv2d(8, 8, 8, kernel=3, stride=2), matmul(16, 32, 16, batch=2),
          conv_transpose2d(8, 4, 4, 4, kernel=2, stride=2)]


def test_touched_elements_by_hand():
    # 1x1 conv with stride 2 on a 9x9 input: P = Q = 5 outputs touch rows 0,2,..,8 -> 5 x 5 x 8 channels
    p = conv2d(8, 16, 9, 9, kernel=1, stride=2)
    assert touched(p, p.tensor("I")) == 8 * 5 * 5 and p.tensor_elements("I") == 8 * 9 * 9
    q = conv2d(4, 4, 6, 6, kernel=3)
    assert touched(q, q.tensor("I")) == q.tensor_elements("I")


@pytest.mark.parametrize("cfg", CONFIGS)
def test_bounds_below_evaluation(cfg):
    arch = load_architecture(cfg)
    for i, p in enumerate(LAYERS):
        b = random_mappings(p, arch, 400, seed=i)
        ev = evaluate_batch(p, arch, b)
        e, lat = lower_bounds(Mapspace(p, arch), b.temporal, b.spatial_x, b.spatial_y, b.keep)
        assert (e <= ev.energy_pj * (1 + 1e-9)).all(), (cfg, p.describe())
        assert (lat <= ev.latency_cycles).all(), (cfg, p.describe())
        assert (e > 0).all() and np.isfinite(e).all()


@pytest.mark.parametrize("problem", [conv2d(4, 8, 6, 6, kernel=3, padding=1), matmul(8, 4, 6, batch=2)],
                         ids=lambda p: p.describe())
def test_stationary_order_minimizes_rigid_tensor_energy(problem):
    # for rigid tensors, "irrelevant loops innermost at every level" must be no worse than every
    # order class of the tiling, tensor by tensor (the exhaustive mapper's per-pair bound rests on it)
    from costmodel.mapping import MappingBatch
    from dse.mappers.bounds import stationary_ranks

    arch = load_architecture("tiny")
    ms = Mapspace(problem, arch)
    best = stationary_ranks(ms)
    assert set(best) == ({1, 2} if problem.kind == "conv2d" else {0, 1, 2})  # W, O (and I for matmul)
    rng = np.random.default_rng(1)
    rows = ms.tiling_rows_at(rng.integers(0, ms.num_tilings, 40))
    checked = 0
    for batch, _, _ in ms.expand(rows, max_batch=20000):
        ev = evaluate_batch(problem, arch, batch)
        for tj, ranks in best.items():
            sb = MappingBatch(batch.temporal, batch.spatial_x, batch.spatial_y,
                              np.broadcast_to(ranks, batch.temporal.shape), batch.keep)
            es = evaluate_batch(problem, arch, sb)
            mine = es.en.access[:, :, tj].sum(axis=(1, 2)) + es.en.network[:, :, tj].sum(axis=1)
            other = ev.en.access[:, :, tj].sum(axis=(1, 2)) + ev.en.network[:, :, tj].sum(axis=1)
            assert (mine <= other * (1 + 1e-12)).all()
        checked += len(batch)
        if checked > 60000:
            break
    assert checked > 1000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 7), st.integers(1, 12)), max_size=4))
def test_distinct_sums_equal_the_set_of_sums(terms):
    """Against the set it replaces (which took gigabytes for one dim of 2**28)."""
    sums = {0}
    for c, n in terms:
        sums = {s + c * i for s in sums for i in range(n)}
    assert distinct_sums(terms) == len(sums)


def test_touched_of_a_huge_dim_is_counted_not_listed():
    p = matmul(2**28, 16, 16)
    assert [touched(p, t) for t in p.tensors] == [2**28 * 16, 16 * 16, 2**28 * 16]
    p = conv2d(3, 5, 2**20, 7, kernel=3, stride=2, padding=1)  # the input's rows: 2 p + r over p < 2**19
    assert touched(p, p.tensors[0]) == 3 * (2 * (2**19 - 1) + 3) * (2 * 3 + 3)


@pytest.mark.parametrize("cfg", ["tiny", "eyeriss_like", "simba_like"])
@pytest.mark.parametrize("problem", [conv2d(8, 8, 10, 10, kernel=3, padding=1),
                                     conv2d(4, 8, 9, 9, kernel=3, stride=2, dilation=1),
                                     depthwise_conv2d(8, 12, 12, kernel=3, padding=1)], ids=["3x3", "strided", "dw"])
def test_forced_refetch_is_below_every_kept_levels_fills(cfg, problem):
    """The bound's own claim (module docstring), per link rather than through the energy total (where
    a bound too strong for one sliding tensor hid among the other terms): a level that keeps T is
    filled at least N_T x forced refetch times, whatever the loop order."""
    from dse.mappers.bounds import forced_refetch, touched

    arch = load_architecture(cfg)
    b = random_mappings(problem, arch, 1500, seed=3)
    fills = evaluate_batch(problem, arch, b).accesses.fills  # [B, L, T]
    ms = Mapspace(problem, arch)
    for ti, t in enumerate(problem.tensors):
        if t.is_output:
            continue
        bound = touched(problem, t) * forced_refetch(ms, b.temporal, ti)  # [B, L + 1]
        for c in range(1, len(arch.levels)):
            kept = b.keep[:, c, ti]
            assert (fills[kept, c, ti] >= bound[kept, c] * (1 - 1e-9)).all(), (t.name, arch.levels[c].name)
