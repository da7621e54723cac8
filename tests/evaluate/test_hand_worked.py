"""A hand-worked energy/latency example, every number derived in the comments.

Layer: matmul O[m,n] = sum_k I[m,k] W[k,n], M=4 K=2 N=2 -> 16 MACs; I 8 words, W 4, O 8.
Architecture (1 GHz): DRAM (read 10 pJ/word, write 12 pJ/word, 1 word/cycle each way) above a
buffer ``buf`` (read 1, write 2 pJ/word, unlimited bandwidth, leakage 1 mW, double-buffered) that
fans out to 2 MACs (0.1 pJ each) over a multicast network costing 0.5 pJ per word delivered.
Mapping: DRAM: for m in 4 | buf: for k in 2, parallel_for n in 2 (one MAC per n).
"""

import math
from types import SimpleNamespace as NS

import pytest

from costmodel.evaluate import evaluate_batch
from costmodel.mapping import LevelMapping, Mapping, MappingBatch
from costmodel.problem import matmul
from tests.evaluate.hand_levels import level

ARCH = NS(name="hand", clock_hz=1e9, num_pes=2, systolic=None, mac=NS(energy_pj=0.1, leak_mw=0.0), levels=(
    level("DRAM", read_pj=10.0, write_pj=12.0, read_bw=1, write_bw=1),
    level("buf", read_pj=1.0, write_pj=2.0, fanout_x=2, hop_pj=0.5, leak_mw=1.0),
))
PROBLEM = matmul(m=4, k=2, n=2)
MAPPING = Mapping((LevelMapping(temporal={"M": 4}), LevelMapping(temporal={"K": 2}, spatial_x={"N": 2})))


@pytest.fixture(scope="module")
def batch():
    return MappingBatch.from_mappings([MAPPING], PROBLEM, ARCH)


def test_access_counts(batch):
    acc = evaluate_batch(PROBLEM, ARCH, batch).accesses
    # tiles in buf: I = 1 row x K2 = 2 words, W = K2 x N2 = 4, O = 1 row x N2 = 2.
    # DRAM's m loop brings a new I tile each step (4 x 2 = 8), W once (4); O tiles are new each step
    # and never written before, so no read-back: DRAM reads I 8, W 4, O 0; O written back 4 x 2 = 8.
    assert acc.reads[0, 0].tolist() == [8, 4, 0]
    assert acc.updates[0, 0].tolist() == [0, 0, 8]
    assert acc.fills[0, 1].tolist() == [8, 4, 0]
    # 8 temporal steps (m4 x k2), 2 MACs each. I[m,k] is the same for both MACs: multicast, 1 read
    # per step = 8. W[k,n] differs: 2 per step = 16. O[m,n]: read back at k=1 only (k=0 is the first
    # touch) = 4 x 2 = 8 reads; every MAC writes its partial sum each step = 16 updates.
    assert acc.reads[0, 1].tolist() == [8, 16, 8]
    assert acc.updates[0, 1].tolist() == [0, 0, 16]
    # words delivered over buf's network (a multicast word counts once per receiving MAC):
    # I 2 x 8 = 16, W 16, O 8 reads + 16 updates = 24
    assert acc.hops[0, 1].tolist() == [16, 16, 24]


def test_latency_and_energy(batch):
    ev = evaluate_batch(PROBLEM, ARCH, batch)
    # compute: 8 steps. DRAM: reads 8 + 4 = 12 words at 1/cycle = 12 cycles; writes 8 = 8 cycles.
    # buf unlimited. Double buffered: a pipeline of 4 tiles (DRAM's m loop), one tile computes 8 / 4 = 2.
    # fill: buf's first tile, I 2 + W 4 = 6 words over DRAM's read port = 6 cycles; drain: the last O
    # tile, 2 words over DRAM's write port = 2 cycles (costmodel/pipeline.py).
    #   array-bound     6 + 8 + 2                  = 16
    #   transfer-bound  max(12 + 2, 8 + 6) + 2     = 16   (DRAM's read port is the busiest stage)
    assert ev.lat.compute[0] == 8
    assert (ev.lat.fill[0], ev.lat.drain[0]) == (6, 2)
    assert ev.latency_cycles[0] == 16
    assert ev.lat.bound_by()[0] == 0
    # energy:
    #   DRAM reads 12 x 10 = 120, DRAM writes 8 x 12 = 96                -> 216
    #   buf reads (8 + 16 + 8) x 1 = 32, fills 12 x 2 = 24, updates 16 x 2 = 32 -> 88
    #   MACs 16 x 0.1 = 1.6; network (16 + 16 + 24) x 0.5 = 28
    #   leakage 1 mW x 16 ns = 1e-3 W x 16e-9 s = 16e-12 J = 16 pJ
    #   total 216 + 88 + 1.6 + 28 + 16 = 349.6 pJ
    assert math.isclose(ev.energy_pj[0], 349.6)
    assert ev.en.per_level()[0].tolist() == pytest.approx([216.0, 88.0 + 28.0 + 16.0])
    assert math.isclose(ev.en.mac[0], 1.6)
    # utilization 16 MACs / (2 PEs x 16 cycles) = 1/2; power 349.6 pJ / 16 ns = 21.85 mW
    assert math.isclose(ev.utilization[0], 1 / 2)
    assert math.isclose(ev.power_mw[0], 21.85)
    assert math.isclose(ev.edp[0], 349.6 * 16e-9)


def test_no_overlap_and_single_buffering(batch):
    # no overlap: 8 compute + 12 DRAM cycles (buf adds 0) = 20; leakage 20 pJ instead of 16 at 16
    # cycles -> 349.6 - 16 + 20 = 353.6
    ev = evaluate_batch(PROBLEM, ARCH, batch, overlap=False)
    assert ev.latency_cycles[0] == 20
    assert math.isclose(ev.energy_pj[0], 353.6)
    # a single-buffered buf with a 2-word/cycle write port: its writes (fills 12 + updates 16 = 28)
    # take 14 cycles that stall compute: max(8, DRAM 12) + 14 = 26
    slow = NS(**{**vars(ARCH), "levels": (ARCH.levels[0], NS(**{**vars(ARCH.levels[1]), "double_buffered": False,
                                                                   "write_bw": 2}))})
    assert evaluate_batch(PROBLEM, slow, batch).latency_cycles[0] == 26


def test_vector_unit_leaks_through_a_mac_layer(batch):
    # Convention (costmodel/energy.py, costmodel/vector.py): the whole chip leaks for the layer's
    # duration. Give ARCH a 2-lane vector unit at buf leaking 2 mW. It adds the post-GEMM vector
    # stage (costmodel/pipeline.py): 8 outputs x 2 passes / 2 lanes = 8 cycles, the last O tile
    # (2 words) 2 x 2 / 2 = 2 cycles after the last MAC:
    #   array-bound     6 + 8 + 2 + 2                 = 18
    #   vector-bound    6 + 2 + 8 + 2                 = 18
    #   transfer-bound  max(12 + 2, 8 + 6) + 2 + 2    = 18
    # leakage over 18 ns: vector unit 2 mW -> 36 pJ, buf 1 mW -> 18 pJ;
    # energy 216 + 88 + 1.6 + 28 + 18 + 36 = 387.6 pJ
    with_vu = NS(**{**vars(ARCH), "vector_unit": NS(leak_mw=2.0, lanes=2, level="buf")})
    ev = evaluate_batch(PROBLEM, with_vu, batch)
    assert ev.lat.vector[0] == 8
    assert ev.latency_cycles[0] == 18
    assert math.isclose(ev.en.vector_leakage[0], 36.0)
    assert math.isclose(ev.energy_pj[0], 387.6)
    # no overlap adds the vector passes: 8 + 8 + 12 = 28
    assert evaluate_batch(PROBLEM, with_vu, batch, overlap=False).latency_cycles[0] == 28
    # without a vector unit there is nothing to charge
    assert evaluate_batch(PROBLEM, ARCH, batch).en.vector_leakage[0] == 0.0
