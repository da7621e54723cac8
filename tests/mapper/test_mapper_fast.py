"""The fast mapper: deterministic per seed, and close to the exhaustive optimum."""

import math

import pytest

from costmodel.arch import load_architecture
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from dse.mappers import map_layer
from dse.mappers.exhaustive import exhaustive_map
from dse.mappers.fast import fast_map


def test_same_seed_same_result():
    arch = load_architecture("tiny")
    p = conv2d(8, 8, 6, 6, kernel=3, padding=1)
    a = fast_map(p, arch, seed=7, max_evaluations=4000)
    b = fast_map(p, arch, seed=7, max_evaluations=4000)
    assert a.mapping == b.mapping and a.metrics == b.metrics
    assert a.mappings_evaluated == b.mappings_evaluated <= 4000


# small enough for the exhaustive mapper on the tiny config within a few seconds each
LAYERS = [matmul(8, 8, 8), matmul(4, 8, 2, batch=2), conv2d(4, 4, 4, 4, kernel=1),
          conv2d(2, 4, 6, 2, kernel=(3, 1), stride=(2, 1)), depthwise_conv2d(4, 4, 4, kernel=(3, 1))]


def test_fast_within_a_few_percent_of_exhaustive():
    arch = load_architecture("tiny")
    ratios = []
    for p in LAYERS:
        opt = exhaustive_map(p, arch).metrics["edp"]
        got = fast_map(p, arch, seed=0, max_evaluations=6000).metrics["edp"]
        assert got >= opt * (1 - 1e-9)  # the optimum really is optimal
        ratios.append(got / opt)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    assert max(ratios) <= 1.05 and geo <= 1.01, ratios


def test_map_layer_front_door_and_bad_mapper():
    from costmodel.errors import UserError

    arch = load_architecture("tiny")
    p = matmul(4, 4, 4)
    ex = map_layer(p, arch, "energy", mapper="exhaustive")
    fa = map_layer(p, arch, "energy", mapper="fast", max_evaluations=3000)
    assert ex.metrics["energy_pj"] <= fa.metrics["energy_pj"] * (1 + 1e-12)
    assert ex.mappings_evaluated > 0 and ex.search_seconds > 0
    with pytest.raises(UserError, match="mapper"):
        map_layer(p, arch, mapper="genetic")
    with pytest.raises(UserError, match="objective"):
        map_layer(p, arch, objective="speed")


@pytest.mark.parametrize("budget", [1, 2, 3, 5])
def test_a_tiny_budget_gives_a_mapping_within_it(budget):
    """Budgets below 4 gave the exploring phase 0 evaluations (a quarter of the budget, rounded
    down): nothing was evaluated, so the search walked every tiling to explain why nothing fit, which
    on a ResNet-50 layer did not end in minutes. Now each budget gets a valid mapping, spending at
    most itself."""
    arch = load_architecture("tpu_like")
    prob = conv2d(64, 64, 56, 56, kernel=3, padding=1)
    res = fast_map(prob, arch, "edp", seed=0, max_evaluations=budget)
    assert 1 <= res.mappings_evaluated <= budget
    res.mapping.validate(prob, arch)
    assert math.isfinite(res.metrics["edp"])
