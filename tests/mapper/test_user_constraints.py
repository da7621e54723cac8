"""What a user's constraints promise holds for the mapping returned: an `order:` constraint (the fast
mapper had drawn orders freely, and the exhaustive search kept that answer), an allowed-dims list
naming none of the layer's dims (a conv config's `spatial_y: [C]` had left a matmul's Y fan-out
idle), and limits that only a few mappings meet (the fast seed's failure had stopped the
exhaustive search, blaming the budget)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate_batch
from costmodel.mapping import Mapping, MappingBatch
from costmodel.problem import conv2d, matmul
from dse.mappers import map_layer
from dse.mappers.objectives import Objective

TINY = load_architecture("tiny")
LAYER = conv2d(4, 4, 4, 1, kernel=(3, 1), padding=(1, 0))  # K4 C4 P4 R3: 192 MACs


def _active_order(m: Mapping, level: int) -> list[str]:
    """The level's loops with a factor above 1, outer to inner."""
    lv = m.levels[level]
    return [d for d in lv.order if lv.temporal.get(d, 1) > 1]


@pytest.mark.parametrize("mapper", ["fast", "exhaustive"])
@pytest.mark.parametrize(("level", "order"), [("DRAM", ["R", "C"]), ("DRAM", ["C", "R"]), ("buffer", ["K", "P"]),
                                              ("buffer", ["P", "K"])])
def test_an_order_constraint_is_kept_and_its_answer_is_the_best_such_order(mapper, level, order):
    constraints = [{"level": level, "temporal": {d: 3 if d == "R" else 2 for d in order}, "order": order}]
    res = map_layer(LAYER, TINY, "edp", mapper=mapper, constraints=constraints, seed=1)
    li = [lv.name for lv in TINY.levels].index(level)
    assert _active_order(res.mapping, li)[-2:] == order
    if mapper == "fast":
        return
    # independent of the order classes: every permutation of every level, the constraint's loops
    # innermost, with the answer's factors and keep choices; none may beat it
    m = res.mapping
    dims = LAYER.dim_names
    per_level = []
    for i, lv in enumerate(m.levels):
        active = [d for d in dims if lv.temporal.get(d, 1) > 1]
        tail = order if i == li else []
        heads = itertools.permutations([d for d in active if d not in tail])
        per_level.append([[*(d for d in dims if d not in active), *h, *tail] for h in heads])
    combos = list(itertools.product(*per_level))
    batch = MappingBatch.from_mappings([replace(m, levels=tuple(replace(lv, order=tuple(o)) for lv, o in zip(m.levels, c)))
                                        for c in combos], LAYER, TINY)
    ev = evaluate_batch(LAYER, TINY, batch)
    assert (ev.energy_pj * ev.latency_cycles).min() >= res.metrics["energy_pj"] * res.metrics["latency_cycles"] * (1 - 1e-12)


@pytest.mark.parametrize("hw", ["nvdla_small_like", "simba_like", "eyeriss_like"])
def test_a_conv_configs_allowed_dims_do_not_idle_a_matmul(hw):
    """The same 262,144 MACs as a 64x64x64 matmul and a 1x1 conv: a list naming only conv dims
    constrains nothing for the matmul, so it is mapped at least as well as the conv."""
    arch = load_architecture(hw)
    mm = map_layer(matmul(64, 64, 64), arch, "latency", seed=0)
    pw = map_layer(conv2d(64, 64, 8, 8, kernel=1), arch, "latency", seed=0)
    assert mm.metrics["utilization"] >= 0.9 * pw.metrics["utilization"], (mm.metrics, pw.metrics)


def test_an_empty_allowed_dims_list_still_allows_nothing():
    res = map_layer(matmul(8, 8, 8), TINY, "edp", constraints=[{"level": "buffer", "spatial_x": [], "spatial_y": []}])
    assert all(f == 1 for f in (*res.mapping.levels[1].spatial_x.values(), *res.mapping.levels[1].spatial_y.values()))


def test_a_latency_limit_few_mappings_meet_is_found_by_the_exhaustive_search():
    """The reviewer's case: 48 cycles is the fewest any mapping of LAYER on tiny takes (192 MACs on 4
    PEs); the fast mapper's budget misses those mappings, the exhaustive search must not."""
    assert LAYER.macs // TINY.num_pes == 48
    obj = Objective.parse({"energy": 1, "latency": 0, "max_latency_cycles": 48})
    res = map_layer(LAYER, TINY, obj, mapper="exhaustive")
    assert res.metrics["latency_cycles"] == 48
    with pytest.raises(UserError, match=r"no mapping found meets the objective's limits \(max_latency_cycles 47\).*none exists"):
        map_layer(LAYER, TINY, Objective.parse({"energy": 1, "latency": 0, "max_latency_cycles": 47}), mapper="exhaustive")
    with pytest.raises(UserError, match=r"meets the objective's limits \(max_latency_cycles 47\); the lowest latency "
                                        r"among the [\d,]+ valid mappings evaluated is (4[89]|[5-9]\d|\d{3,}) cycles"):
        map_layer(LAYER, TINY, Objective.parse({"energy": 1, "latency": 0, "max_latency_cycles": 47}), mapper="fast",
                  max_evaluations=2000)
    assert np.isfinite(res.metrics["energy_pj"])
