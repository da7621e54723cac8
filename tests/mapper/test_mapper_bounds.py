"""The branch-and-bound's lower bounds never exceed what the cost model evaluates."""

import numpy as np
import pytest

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate_batch
from costmodel.problem import conv2d, conv_transpose2d, depthwise_conv2d, matmul
from costmodel.random_mappings import random_mappings
from dse.mappers.bounds import lower_bounds, touched
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
        try:
            b = random_mappings(p, arch, 400, seed=i)
        except RuntimeError:  # a tightly constrained config may reject random draws; nothing to check
            continue
        ev = evaluate_batch(p, arch, b)
        e, lat = lower_bounds(Mapspace(p, arch), b.temporal, b.spatial_x, b.spatial_y, b.keep)
        assert (e <= ev.energy_pj * (1 + 1e-9)).all(), (cfg, p.describe())
        assert (lat <= ev.latency_cycles).all(), (cfg, p.describe())
        assert (e > 0).all() and np.isfinite(e).all()
