"""MAC layers and vector layers charge the same leakage: every component of the chip (each level's
instances, each MAC, the vector unit) for the layer's duration. Checked on the shipped configs
against the config's own per-component figures, summed independently of the code under test."""

import math

import pytest

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate
from costmodel.problem import conv2d
from costmodel.random_mappings import random_mappings
from costmodel.vector import vector_cost


@pytest.mark.parametrize("cfg", ["tpu_like", "edge_tpu_like", "eyeriss_like"])
def test_mac_and_vector_layers_leak_alike(cfg):
    arch = load_architecture(cfg)
    # chip leakage in mW, summed by hand from the resolved config
    chip_mw = (sum(lv.leak_mw * lv.instances for lv in arch.levels) + arch.mac.leak_mw * arch.num_pes
               + (arch.vector_unit.leak_mw if arch.vector_unit is not None else 0.0))
    problem = conv2d(8, 8, 6, 6, kernel=3, padding=1)
    d = evaluate(problem, arch, random_mappings(problem, arch, 1, seed=3).mapping(0, problem)).to_dict()
    leak = d["energy_breakdown_pj"]["leakage"]
    # 1 mW for 1 s = 1e9 pJ
    assert math.isclose(sum(leak.values()), chip_mw * d["latency_s"] * 1e9, rel_tol=1e-12)
    expected_vu = arch.vector_unit.leak_mw if arch.vector_unit is not None else 0.0
    assert math.isclose(leak["vector_unit"], expected_vu * d["latency_s"] * 1e9, rel_tol=1e-12, abs_tol=0.0)
    v = vector_cost(arch, vector_ops=1000, in_elements=500, out_elements=500)
    assert math.isclose(v["energy_breakdown_pj"]["leakage"]["chip"], chip_mw * v["latency_s"] * 1e9, rel_tol=1e-12)
