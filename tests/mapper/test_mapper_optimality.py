"""The exhaustive mapper against plain unpruned enumeration (mapper_reference.py), on configs the
other exhaustive tests do not cover: a config with no spatial array, and every shipped config."""

import os

import numpy as np
import pytest
from mapper_configs import scalar
from mapper_reference import enumerate_all, honours_constraints

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from dse.mappers import map_layer
from dse.mappers.exhaustive import exhaustive_map
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


SHIPPED = ["ar_glasses_npu", "edge_tpu_like", "eyeriss_like", "eyeriss_timeloop_32nm", "nvdla_small_like",
           "simba_like", "tiny", "tpu_like"]
SMALL = [conv2d(1, 2, 3, 1, kernel=(3, 1), padding=(1, 0)),   # K2 P3 R3: sliding window with halo
         conv2d(2, 2, 3, 1, kernel=1),                         # 1x1: K2 C2 P3
         depthwise_conv2d(2, 3, 1, kernel=(3, 1), padding=(1, 0)),  # depthwise: G2 P3 R3
         matmul(2, 2, 2)]
SLOW = os.environ.get("ACCEL_DSE_SLOW") == "1"
if SLOW:  # a larger sweep: strided, more primes
    SMALL += [conv2d(1, 2, 5, 1, kernel=(3, 1), stride=(2, 1)), conv2d(2, 2, 4, 1, kernel=(3, 1), padding=(1, 0)),
              matmul(4, 2, 2, batch=2)]


def _reference_scores(problem, arch):
    e, lat = [], []
    for batch, ev in enumerate_all(problem, arch):
        ok = honours_constraints(problem, arch, batch)
        e.append(ev.energy_pj[ok])
        lat.append(ev.latency_cycles[ok].astype(np.float64))
    return np.concatenate(e), np.concatenate(lat)


@pytest.mark.parametrize("cfg", SHIPPED)
@pytest.mark.parametrize("unconstrained", [False, True], ids=["constrained", "unconstrained"])
def test_exhaustive_is_optimal_on_shipped_configs(cfg, unconstrained):
    # the shipped config as is (dataflow constraints honoured by both sides), and with its constraints
    # removed (the full mapspace of the same hierarchy, capacities, bandwidths and energies)
    arch = load_architecture(cfg)
    if unconstrained:
        arch = arch.model_copy(update={"constraints": ()})
    checked = 0
    for p in SMALL:
        e, lat = _reference_scores(p, arch)
        if len(e) == 0:  # no valid mapping under the constraints: the mapper must say so
            with pytest.raises(UserError):
                exhaustive_map(p, arch, "edp")
            continue
        for name in ("edp", "energy", "latency"):
            obj = Objective.parse(name)
            res = exhaustive_map(p, arch, obj)
            ev = evaluate(p, arch, res.mapping)
            got = obj.score(np.array([ev.energy_pj]), np.array([float(ev.latency_cycles)]))[0]
            assert got == pytest.approx(obj.score(e, lat).min(), rel=1e-12, abs=1e-12), (cfg, p.describe(), name)
            checked += 1
    assert checked >= 3 * (len(SMALL) - 1)
