"""costmodel.vector on hand-worked examples (tests/network/helpers.vector_arch has round costs)."""

from __future__ import annotations

import pytest

from compiler.frontend.workload import Layer
from costmodel.vector import layer_cost, post_ops_pj, vector_cost
from tests.network.helpers import vector_arch

# An element-wise Add of two 1x8x6x6 int8 tensors: 576 input and 288 output elements, 288 ops.
# DRAM words are 8 bits: 576 read, 288 written. 'buf' words are 16 bits: int8 packs two per word,
# so 288 input words filled + read and 144 output words written + read.
# Cycles: compute 288 / lanes; DRAM read 576 / 4 = 144, DRAM write 288 / 2 = 144;
# buf (288 + 144) / 8 = 54 each way. 100 MHz -> 144 cycles = 1.44 us.
DRAM_PJ = 576 * 10.0 + 288 * 20.0  # 11,520
BUF_PJ = 288 * 2.0 + 288 * 1.0 + 144 * 2.0 + 144 * 1.0  # fills/updates 2 pJ, reads 1 pJ: 1,296
LEAK_PJ = 1.0 * 1.44e-6 * 1e9  # buf leaks 1 mW (everything else 0) for 1.44 us: 1,440


def test_add_on_a_vector_unit_by_hand() -> None:
    arch = vector_arch(lanes=4, op_pj=0.25, leak_mw=0.0)
    c = vector_cost(arch, 288, 576, 288)
    assert c["compute_cycles"] == 72  # 288 ops / 4 lanes
    assert c["latency_cycles"] == 144  # DRAM-bound
    assert c["latency_s"] == pytest.approx(1.44e-6)
    assert c["accesses"]["DRAM"]["I"]["reads"] == 576
    assert c["accesses"]["DRAM"]["O"]["writes"] == 288
    assert c["accesses"]["buf"]["I"] == {"reads": 288, "writes": 288, "fills": 288, "updates": 0}
    assert c["accesses"]["buf"]["O"] == {"reads": 144, "writes": 144, "fills": 0, "updates": 144}
    assert c["energy_breakdown_pj"]["vector_unit"] == pytest.approx(288 * 0.25)
    assert c["energy_pj"] == pytest.approx(DRAM_PJ + BUF_PJ + 288 * 0.25 + LEAK_PJ)  # 14,328
    assert c["edp"] == pytest.approx(c["energy_pj"] * 1.44e-6)
    assert c["macs"] == 0 and c["utilization"] == 0.0


def test_compute_bound_when_lanes_are_few() -> None:
    arch = vector_arch(lanes=1, op_pj=0.25, leak_mw=0.0)
    c = vector_cost(arch, 288, 576, 288)
    assert c["latency_cycles"] == 288  # 288 ops on 1 lane > 144 DRAM cycles
    assert c["energy_pj"] == pytest.approx(DRAM_PJ + BUF_PJ + 72 + 2 * LEAK_PJ)


def test_without_a_vector_unit_the_mac_array_does_the_ops() -> None:
    arch = vector_arch()  # no vector unit: 4 lanes (the 2x2 MACs), 0.5 pJ per op (one MAC)
    c = vector_cost(arch, 288, 576, 288)
    assert c["vector_on_mac_array"] and c["vector_lanes"] == 4
    assert c["energy_pj"] == pytest.approx(DRAM_PJ + BUF_PJ + 288 * 0.5 + LEAK_PJ)
    assert post_ops_pj(arch, 100) == pytest.approx(50.0)


def test_layout_layers() -> None:
    arch = vector_arch(lanes=4, op_pj=0.25, leak_mw=0.0)
    view = Layer("v", "Reshape", "layout", None, ((1, 8, 6, 6),), ((1, 288),))
    assert layer_cost(arch, view) is None  # a view moves nothing
    host = Layer("h", "NonMaxSuppression", "host", None, ((1, 8),), ((1, 8),))
    assert layer_cost(arch, host) is None
    tr = Layer("t", "Transpose", "layout", None, ((1, 8, 6, 6),), ((1, 6, 6, 8),), vector_ops=7)
    c = layer_cost(arch, tr)
    # a copy: 288 elements in and out; DRAM 288*10 + 288*20; buf 144 words each way (2+1 pJ); no ops
    # cycles: DRAM read 288/4 = 72, write 288/2 = 144 -> 144 cycles, leakage 1,440 pJ
    assert c["energy_breakdown_pj"]["vector_unit"] == 0.0
    assert c["energy_pj"] == pytest.approx(288 * 30.0 + 144 * 3.0 * 2 + LEAK_PJ)
