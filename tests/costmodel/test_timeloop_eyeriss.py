"""Timeloop's public Eyeriss exercise (timeloop-accelergy-exercises, 06-mapper-convlayer-eyeriss,
VGG-16 conv5 on hwconfigs/eyeriss_timeloop_32nm.yaml with the mapping of
examples/mappings/eyeriss_vgg16_conv5.yaml): access counts, costed with the exercise's energy
reference table (ERT), against Timeloop v3.0.3's published per-level energies.

With ``model="timeloop"`` every level matches Timeloop. With the exact model, DRAM and the
global buffer differ, and the counts below show by how much and why.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from costmodel.analysis import access_counts
from costmodel.arch import load_architecture
from costmodel.mapping import MappingBatch, load_mapping
from costmodel.problem_io import load_problem

ROOT = Path(__file__).resolve().parents[2]
# ERT of the exercise, pJ per vector access / words per access (block): Timeloop charges a word
# read or written the vector energy divided by the block size. Source: the exercise's ERT
# (timeloop-accelergy-exercises, 06-mapper-convlayer-eyeriss, Accelergy 32 nm tables).
ERT = {"DRAM": (512 / 8, 512 / 8), "shared_glb": (18.18 / 8, 14.14 / 8), "ifmap_spad": (0.2024 / 2, 0.1767 / 2),
       "weights_spad": (1.9766 / 2, 1.8817 / 2), "psum_spad": (0.2513, 0.2191)}
# Timeloop v3.0.3's output for this mapping, fJ per MAC per level (shared_glb without its
# 0.0057 pJ/cycle x 5,505,024 cycles = 0.03 fJ/MAC leakage).
TIMELOOP_FJ = {"DRAM": 1000.00, "shared_glb": 89.44 - 0.03, "ifmap_spad": 105.82, "weights_spad": 1105.90,
               "psum_spad": 478.30}


@pytest.fixture(scope="module")
def case():
    arch = load_architecture("eyeriss_timeloop_32nm")
    prob = load_problem(ROOT / "examples/layers/vgg16_conv5.yaml")
    mapping = load_mapping(ROOT / "examples/mappings/eyeriss_vgg16_conv5.yaml", prob, arch)
    return prob, arch, MappingBatch.from_mappings([mapping], prob, arch)


def _fj_per_mac(prob, arch, acc):
    out = {}
    for li, lv in enumerate(arch.levels):
        rd, wr = ERT[lv.name]
        pj = acc.reads[0, li].sum() * rd + (acc.fills[0, li].sum() + acc.updates[0, li].sum()) * wr
        out[lv.name] = pj / prob.macs * 1000
    return out


def test_timeloop_model_reproduces_timeloop_per_level(case):
    prob, arch, batch = case
    got = _fj_per_mac(prob, arch, access_counts(prob, arch, batch, model="timeloop"))
    for name, ref in TIMELOOP_FJ.items():
        # the ERT entries have 4 significant digits: 0.05% is their rounding, plus 0.01 fJ
        assert got[name] == pytest.approx(ref, rel=5e-4, abs=0.01), name


def test_counts_worked_out(case):
    prob, arch, batch = case
    ex = access_counts(prob, arch, batch)
    tl = access_counts(prob, arch, batch, model="timeloop")
    N = 924_844_032  # 256 x 128 x 56 x 56 x 3 x 3 MACs
    I, W, O = 0, 1, 2
    # Scratchpads feed the MACs every MAC (no reuse inside a MAC): reads = N for I and W; the psum
    # spad: N accumulations minus the first of each of its 14,336 outputs per PE
    # (802,816 outputs / 56 PEs that own distinct outputs), over 168 PEs.
    for acc in (ex, tl):
        assert acc.reads[0, 2, I] == N and acc.reads[0, 3, W] == N
        assert acc.reads[0, 4, O] == N - 14_336 * 168 and acc.updates[0, 4, O] == N
        # weights_spad tile R3 x C8 x K8 = 192 words refilled at every GLB (K, C) step:
        # 448 DRAM steps x 8 x 192 x 168 PEs = N / 8
        assert acc.fills[0, 3, W] == N // 8
    # GLB input tile: C 4x8 = 32, rows 8 + 3 - 1 = 10, cols 14 + 3 - 1 = 16: 5120 words. The DRAM
    # loops Q4 C4 P7 K4: at each of the 6 P advances per (q, c) the window slides by 8 rows and
    # keeps 2 (the K4 loop inside it wraps, but I does not depend on K):
    # 16 x (5120 + 6 x 32 x 8 x 16) = 475,136. Timeloop slides only under the innermost
    # nontrivial loop (here K4), so it refetches the whole tile: 16 x 7 x 5120 = 573,440.
    assert ex.reads[0, 0, I] == 475_136 and tl.reads[0, 0, I] == 573_440
    # GLB -> PEs: each PE (q on X, (k, s) on Y) needs its own input column w = q + s. Exact
    # multicast reads a word once for all PEs needing it at the same step (the diagonals
    # share the halo): per (k1, c1) the 8 P steps read 8 x 3 x 16 = 384 words (16 distinct
    # columns q + s), then 8 x 1 x 16 = 128 new ones each: (384 + 7 x 128) x 8 x 448 DRAM steps
    # = 4,587,520. Each PE's ifmap spad takes its C8 x 3-row tile (24 words), then 8 new words at
    # each of the 7 P steps, per (k1, c1) and DRAM step: (24 + 7 x 8) x 8 x 448 = 286,720 fills.
    # Timeloop multicasts identical tiles only (the 4 K rows): 168 x 286,720 / 4 = 12,042,240.
    pe_fills = (24 + 7 * 8) * 8 * 448
    assert ex.fills[0, 2, I] == 168 * pe_fills
    assert ex.reads[0, 1, I] == (384 + 7 * 128) * 8 * 448 and tl.reads[0, 1, I] == 168 * pe_fills // 4
    # every other count is the same in both models
    mask = np.ones(ex.reads.shape, bool)
    mask[0, 0, I] = mask[0, 1, I] = False
    assert np.array_equal(ex.reads[mask], tl.reads[mask])
    assert np.array_equal(ex.updates, tl.updates) and np.array_equal(ex.hops[0, :, W:], tl.hops[0, :, W:])
