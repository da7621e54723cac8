"""Every lower bound the exhaustive mapper prunes with is <= the true cost of every completion.

Random layer, random config, random tiling, random set of dims whose temporal factors count as
known (the partial tilings of the branch and bound; none known is the per-unrolling bound), random
keep option: the bound must not exceed the minimum energy and the minimum latency over every
completion -- every temporal split of the unknown dims with the same spatial unrolling, every loop
order class -- found by brute-force enumeration and the cost model. Capacity is ignored: the bounds
claim to hold for every mapping, valid or not.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mapper_configs import three_level, two_level

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate_batch
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from dse.mappers.bounds import lower_bounds
from dse.mapspace import Mapspace

CONFIGS = {
    "tiny": lambda: load_architecture("tiny"),
    "three_level": three_level,
    "two_level_ws": lambda: two_level(systolic=True),
    "eyeriss_like": lambda: load_architecture("eyeriss_like"),
    "simba_like": lambda: load_architecture("simba_like"),
    "ar_glasses_npu": lambda: load_architecture("ar_glasses_npu"),
    "tpu_like": lambda: load_architecture("tpu_like"),
    "edge_tpu_like": lambda: load_architecture("edge_tpu_like"),
}
_ARCH = {}

LIMIT = 1500  # completions (tilings) per example


def _arch(name):
    if name not in _ARCH:
        _ARCH[name] = CONFIGS[name]()
    return _ARCH[name]


layers = st.one_of(
    st.builds(lambda c, k, h, r, s: conv2d(c, k, h, 2, kernel=(r, 1), stride=(s, 1)),
              st.integers(1, 4), st.integers(1, 4), st.integers(3, 6), st.integers(1, 3), st.integers(1, 2)),
    st.builds(lambda c, h: depthwise_conv2d(c, h, 1, kernel=(3, 1), padding=(1, 0)),
              st.integers(2, 4), st.integers(2, 5)),
    st.builds(lambda m, k, n, b: matmul(m, k, n, batch=b),
              st.integers(1, 6), st.integers(1, 4), st.integers(1, 6), st.integers(1, 2)),
)


def _completions(ms, row, known):
    """Every tiling (table rows) with the row's spatial unrolling and its rows for the known dims."""
    choices = []
    for di, t in enumerate(ms.tables):
        if known[di]:
            choices.append([int(row[di])])
            continue
        g = int(np.searchsorted(t.group_start, row[di], side="right") - 1)
        choices.append(range(int(t.group_start[g]), int(t.group_start[g + 1])))
    count = int(np.prod([len(c) for c in choices]))
    if count > LIMIT:
        return None
    return np.array(list(itertools.product(*choices)), dtype=np.int64).reshape(count, len(choices))


@given(cfg=st.sampled_from(sorted(CONFIGS)), problem=layers, data=st.data(), overlap=st.booleans())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_bound_below_every_completion(cfg, problem, data, overlap):
    arch = _arch(cfg)
    ms = Mapspace(problem, arch)
    assume(ms.num_tilings > 0)
    pos = data.draw(st.integers(0, ms.num_tilings - 1), label="tiling")
    row = ms.tiling_rows_at(np.array([pos]))[0]
    known = np.array(data.draw(st.lists(st.booleans(), min_size=len(ms.dims), max_size=len(ms.dims)),
                               label="known"))
    k = data.draw(st.integers(0, len(ms.keep_options) - 1), label="keep")
    rows = _completions(ms, row, known)
    assume(rows is not None)
    t, sx, sy = ms.decode(row[None, :])
    e_lb, l_lb = lower_bounds(ms, t, sx, sy, known=known, options=np.array([k]), overlap=overlap)
    keep_ok = np.zeros((len(rows), len(ms.keep_options)), bool)
    keep_ok[:, k] = True
    e_min, l_min = np.inf, np.inf
    for batch, _, _ in ms.expand(rows, keep_ok):
        ev = evaluate_batch(problem, arch, batch, overlap=overlap)
        e_min = min(e_min, float(ev.energy_pj.min()))
        l_min = min(l_min, float(ev.latency_cycles.min()))
    assert e_lb[0, 0] <= e_min * (1 + 1e-9), (cfg, problem.describe(), known.tolist(), k)
    assert l_lb[0, 0] <= l_min, (cfg, problem.describe(), known.tolist(), k)


@pytest.mark.parametrize("cfg", ["tiny", "ar_glasses_npu"])
def test_bound_is_tight_where_nothing_is_kept_on_chip(cfg):
    # every tensor straight from DRAM to the MACs, one temporal loop per dim at DRAM: the bound's
    # terms are then the exact counts (compulsory DRAM traffic, MAC operands per PE, hops per
    # receiving instance), so it equals the cost model's energy up to rounding
    arch = load_architecture(cfg)
    p = conv2d(4, 8, 4, 4, kernel=1)
    # no temporal loop below DRAM (a constraint fixing every inner level's temporal factors to 1)
    inner = [{"level": lv.name, "temporal": {d: 1 for d in p.dim_names}} for lv in arch.levels[1:]]
    ms = Mapspace(p, arch, inner)
    k = int(np.nonzero(~ms.keep_options[:, 1:].any(axis=(1, 2)))[0][0])
    rows = ms.tiling_rows_at(np.arange(min(ms.num_tilings, 50)))
    t, sx, sy = ms.decode(rows)
    assert len(rows) and (t[:, 1:] == 1).all()
    e_lb, _ = lower_bounds(ms, t, sx, sy, options=np.array([k]))
    keep_ok = np.zeros((len(rows), len(ms.keep_options)), bool)
    keep_ok[:, k] = True
    checked = 0
    for batch, ti, _ in ms.expand(rows, keep_ok):
        ev = evaluate_batch(p, arch, batch)
        lat_lb = lower_bounds(ms, batch.temporal, batch.spatial_x, batch.spatial_y, batch.keep)[1]
        same_latency = ev.latency_cycles == lat_lb
        assert same_latency.any()
        np.testing.assert_allclose(e_lb[ti, 0][same_latency], ev.energy_pj[same_latency], rtol=1e-9)
        checked += int(same_latency.sum())
    assert checked >= len(rows)  # (at least one loop order of each tiling)
