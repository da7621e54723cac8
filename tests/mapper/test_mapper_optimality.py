"""The exhaustive mapper against plain unpruned enumeration (mapper_reference.py), on configs the
other exhaustive tests do not cover: a config with no spatial array, and every shipped config."""

import numpy as np
import pytest
from mapper_configs import scalar
from mapper_reference import enumerate_all

from costmodel.evaluate import evaluate
from costmodel.problem import conv2d
from dse.mappers import map_layer
from dse.mappers.objectives import Objective


def _best(problem, arch, obj):
    scores = [obj.score(ev.energy_pj, ev.latency_cycles.astype(np.float64)) for _, ev in enumerate_all(problem, arch)]
    return float(np.concatenate(scores).min())


@pytest.mark.parametrize("mapper", ["fast", "exhaustive"])
def test_no_spatial_array(mapper):
    # every fan-out is 1: the mapspace has one (empty) spatial unrolling; this used to raise
    # "cannot reshape array of size 0" in Mapspace._spatial_groups
    arch = scalar()
    p = conv2d(1, 2, 3, 1, kernel=(3, 1), padding=(1, 0))
    res = map_layer(p, arch, "edp", mapper=mapper)
    ev = evaluate(p, arch, res.mapping)
    got = Objective.parse("edp").score(np.array([ev.energy_pj]), np.array([float(ev.latency_cycles)]))[0]
    best = _best(p, arch, Objective.parse("edp"))
    if mapper == "exhaustive":
        assert got == pytest.approx(best, rel=1e-12)
    else:
        assert got >= best - 1e-12
