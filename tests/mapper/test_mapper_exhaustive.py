"""The exhaustive mapper against plain unpruned enumeration (tests/mapper/mapper_reference.py)."""

import numpy as np
import pytest
from mapper_configs import three_level, two_level
from mapper_reference import enumerate_all

from costmodel.evaluate import evaluate
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from dse.mappers.exhaustive import exhaustive_map
from dse.mappers.objectives import Objective, pareto_mask

LAYERS = [
    conv2d(2, 2, 2, 1, kernel=1),                                  # 1x1: K2 C2 P2
    conv2d(1, 2, 3, 1, kernel=(3, 1), padding=(1, 0)),             # 3x1 window: K2 P3 R3 (halo reuse)
    conv2d(1, 2, 5, 1, kernel=(3, 1), stride=(2, 1)),              # strided: K2 P2 R3
    depthwise_conv2d(2, 3, 1, kernel=(3, 1), padding=(1, 0)),      # depthwise: G2 P3 R3
    matmul(2, 2, 3),                                               # M2 K2 N3
]
OBJECTIVES = ("edp", "energy", "latency", "energy:1,latency:2")


def _reference(problem, arch):
    """Every valid mapping's (energy, latency), and the best score per objective."""
    es, ls = [], []
    for _, ev in enumerate_all(problem, arch):
        es.append(ev.energy_pj)
        ls.append(ev.latency_cycles.astype(np.float64))
    e, lat = np.concatenate(es), np.concatenate(ls)
    return e, lat


@pytest.mark.parametrize("problem", LAYERS, ids=lambda p: p.describe())
@pytest.mark.parametrize("arch_name", ["two_level", "two_level_ws"])
def test_exhaustive_equals_unpruned_enumeration(problem, arch_name):
    arch = two_level(systolic=arch_name.endswith("ws"))
    e, lat = _reference(problem, arch)
    for name in OBJECTIVES:
        obj = Objective.parse(name)
        best = obj.score(e, lat).min()
        res = exhaustive_map(problem, arch, obj)
        # the returned mapping re-evaluated from scratch has the reference optimum's score
        ev = evaluate(problem, arch, res.mapping)
        got = obj.score(np.array([ev.energy_pj]), np.array([float(ev.latency_cycles)]))[0]
        assert got == pytest.approx(best, rel=1e-12, abs=1e-12), name
        # never more than plain enumeration (which already skips permutations of bound-1 loops)
        assert res.mappings_evaluated <= len(e)


@pytest.mark.parametrize("problem", LAYERS[:2] + LAYERS[4:], ids=lambda p: p.describe())
def test_exhaustive_three_levels_and_pareto(problem):
    arch = three_level()
    e, lat = _reference(problem, arch)
    res = exhaustive_map(problem, arch, "edp", pareto=True)
    assert res.metrics["energy_pj"] * res.metrics["latency_s"] == pytest.approx(res.metrics["edp"])
    best = Objective.parse("edp").score(e, lat).min()
    assert Objective.parse("edp").score(res.metrics["energy_pj"], res.metrics["latency_cycles"]) == \
        pytest.approx(best, rel=1e-12)
    front = pareto_mask(e, lat)
    ref = sorted(set(zip(e[front].round(6), lat[front])))
    got = sorted({(round(p.energy_pj, 6), p.latency_cycles) for p in res.pareto})
    assert got == ref


def test_no_fit_names_the_level():
    from costmodel.errors import UserError
    from dse.mapspace import Mapspace

    arch = three_level()
    # keeping all three tensors at buf with K=64 there: W and O tiles are 64 words each, the buffer's
    # usable half (double-buffered) is 16 words -> no mapping, and the message names the buffer
    cons = [{"level": "buf", "keep": ["I", "W", "O"], "temporal": {"K": 64}}]
    with pytest.raises(UserError, match="level buf"):
        exhaustive_map(conv2d(1, 64, 1, 1, kernel=1), arch, constraints=cons)
    assert Mapspace(conv2d(1, 64, 1, 1, kernel=1), arch, cons).num_tilings > 0


def test_a_time_limit_that_finds_nothing_says_so_not_that_no_mapping_exists():
    """Stopped before any evaluation, the search must not claim the layer has no valid mapping (which
    its no-fit diagnosis would then scan the whole mapspace to explain)."""
    from costmodel.errors import UserError

    arch = three_level()
    with pytest.raises(UserError, match=r"reached its time limit \(1e-09 s\) before it evaluated a valid mapping"):
        exhaustive_map(matmul(4, 8, 4), arch, "edp", time_limit_s=1e-9)
    res = exhaustive_map(matmul(4, 8, 4), arch, "edp", time_limit_s=60)
    assert res.stats["complete"] == 1
