"""Hand-worked access counts, one per level kind and feature; the arithmetic is in the comments.

Each example is checked on both the analytical model and the brute-force walker, so a wrong
spec (walker) and a wrong implementation cannot agree by accident on these.
"""

from __future__ import annotations

import numpy as np
import pytest
from bruteforce import walk
from standin import Arch, Level

from costmodel import problem as P
from costmodel.analysis import access_counts
from costmodel.mapping import LevelMapping, Mapping, MappingBatch

I, W, O = 0, 1, 2


def counts(prob, arch, mapping):
    acc = access_counts(prob, arch, MappingBatch.from_mappings([mapping], prob, arch))
    ref = walk(prob, arch, mapping)
    for f in ("fills", "reads", "updates", "hops", "tile_words"):
        assert np.array_equal(getattr(acc, f)[0], ref[f]), f
    return {f: getattr(acc, f)[0] for f in ("fills", "reads", "updates", "hops", "tile_words")}


def test_dram_and_register_file():
    # O[M,N] = sum_K I[M,K] W[K,N], M=4 K=2 N=3 (24 MACs).
    # DRAM: for m in range(4) | RF: for n in range(3): for k in range(2) | MAC
    prob = P.matmul(m=4, k=2, n=3)
    arch = Arch((Level("DRAM", kind="dram"), Level("RF", kind="regfile")))
    m = Mapping((LevelMapping({"M": 4}, ("M",)), LevelMapping({"N": 3, "K": 2}, ("N", "K"))))
    c = counts(prob, arch, m)
    # RF tiles (loops n, k): I[m, 0:2] = 2 words, W[0:2, 0:3] = 6, O[m, 0:3] = 3.
    assert c["tile_words"][1].tolist() == [2, 6, 3]
    # RF fills over the 4 DRAM steps: I changes with m: 4 x 2 = 8; W ignores m: once, 6.
    # O: 4 x 3 = 12 tiles enter, each for the first time (never written): 12 - 12 = 0 read-backs.
    assert c["fills"][1].tolist() == [8, 6, 0]
    assert c["reads"][0].tolist() == [8, 6, 0]
    # every output leaves the RF once, when m advances or at the end: 12 updates at DRAM.
    assert c["updates"][0].tolist() == [0, 0, 12]
    # MACs read operands every MAC: 24 each; O: 24 accesses - 12 first ones (never written) = 12.
    assert c["reads"][1].tolist() == [24, 24, 12]
    assert c["updates"][1].tolist() == [0, 0, 24]
    # hops = words over each fan-out (here 1x1): DRAM->RF I 8, W 6, O 0 down + 12 up;
    # RF->MAC I 24, W 24, O 12 down + 24 up.
    assert c["hops"].tolist() == [[8, 6, 12], [24, 24, 36]]
    assert c["fills"][0].tolist() == [0, 0, 0]  # DRAM starts with its data


@pytest.mark.parametrize("multicast", [True, False])
def test_sram_buffer_with_multicast(multicast):
    # M=2 K=1 N=4. DRAM: for m in range(2) | GLB: parallel_for n in range(4) (X) | RF: nothing.
    prob = P.matmul(m=2, k=1, n=4)
    arch = Arch((Level("DRAM", kind="dram"),
                 Level("GLB", fanout_x=4, multicast=multicast, kind="sram"),
                 Level("RF", kind="regfile")))
    m = Mapping((LevelMapping({"M": 2}, ("M",)), LevelMapping(spatial_x={"N": 4}), LevelMapping()))
    c = counts(prob, arch, m)
    # GLB tile (spatial n): I[m,0] 1 word, W[0,0:4] 4, O[m,0:4] 4; each RF: 1, 1, 1.
    assert c["tile_words"].tolist() == [[2, 4, 8], [1, 4, 4], [1, 1, 1]]
    # 4 RFs x 2 steps: I[m,0] is new each step for each RF: 8 fills; W[0,n] once per RF: 4.
    assert c["fills"][2].tolist() == [8, 4, 0]
    # all 4 RFs need the same I[m,0] at once: multicast reads it once per step (2), else 8.
    assert c["reads"][1].tolist() == [2 if multicast else 8, 4, 0]
    # words crossing the GLB fan-out count per receiving RF: 8 I, 4 W, O 8 up (4 RFs x 2 m).
    assert c["hops"][1].tolist() == [8, 4, 8]
    assert c["updates"][1].tolist() == [0, 0, 8]
    assert c["updates"][0].tolist() == [0, 0, 8]


def test_bypass_takes_from_the_nearest_keeper():
    # As test_dram_and_register_file, with a GLB between that bypasses W.
    prob = P.matmul(m=4, k=2, n=3)
    arch = Arch((Level("DRAM", kind="dram"), Level("GLB"), Level("RF", kind="regfile")))
    m = Mapping((LevelMapping({"M": 2}, ("M",)), LevelMapping({"M": 2}, ("M",), bypass=frozenset({"W"})),
                 LevelMapping({"N": 3, "K": 2}, ("N", "K"))))
    c = counts(prob, arch, m)
    # W is not in the GLB (tile 0, no fills, no reads); the RF's W tile (6 words) is filled once
    # (neither M loop touches W), straight from DRAM: DRAM reads 6 W words.
    assert c["tile_words"][1][W] == 0 and c["fills"][1][W] == 0 and c["reads"][1][W] == 0
    assert c["fills"][2][W] == 6 and c["reads"][0][W] == 6
    # the W words cross both fan-outs (DRAM's and GLB's): 6 hops each.
    assert c["hops"][0][W] == 6 and c["hops"][1][W] == 6
    # I: GLB tile I[2 rows of m, 0:2] = 4 words, filled 2 times (DRAM m): 8; RF: 4 steps x 2 = 8.
    assert c["fills"][1][I] == 8 and c["fills"][2][I] == 8 and c["reads"][1][I] == 8


def test_sliding_window_depends_on_loop_order():
    # conv1d, 1 channel, Q=4 outputs, S=3 taps: input w = q + s has 6 elements.
    prob = P.conv1d(1, 1, 6, kernel=3)
    arch = Arch((Level("DRAM", kind="dram"), Level("RF", kind="regfile")))

    def rf_input_fills(dram, order, rf):
        m = Mapping((LevelMapping(dram, order), LevelMapping(rf, tuple(rf))))
        return counts(prob, arch, m)["fills"][1][I]

    # DRAM: for q in range(4) | RF: for s in range(3): RF tile w in [q, q+3), 3 words; each step
    # slides by 1: 3 + 1 + 1 + 1 = 6 (every input element moved once).
    assert rf_input_fills({"Q": 4}, ("Q",), {"S": 3}) == 6
    # DRAM: for q0 in range(2): for s in range(3) | RF: for q1 in range(2): tile [2q0+s, 2q0+s+2).
    # steps (q0,s): (0,0) [0,2) +2, (0,1) [1,3) +1, (0,2) [2,4) +1, (1,0) [2,4) (s wrapped, q0
    # advanced: shift 2 - 2 = 0) +0, (1,1) [3,5) +1, (1,2) [4,6) +1: 6.
    assert rf_input_fills({"Q": 2, "S": 3}, ("Q", "S"), {"Q": 2}) == 6
    # Same loops, s outer: (s,q0): (0,0) [0,2) +2, (0,1) [2,4) +2, (1,0) [1,3) +1 (3rd element
    # 2 still there), (1,1) [3,5) +2, (2,0) [2,4) +1, (2,1) [4,6) +2: 10.
    assert rf_input_fills({"Q": 2, "S": 3}, ("S", "Q"), {"Q": 2}) == 10


def test_strided_window_keeps_only_true_overlap():
    # conv1d stride 2, S=3, Q=3: input w = 2q + s, 7 elements. DRAM: for q | RF: for s.
    prob = P.conv1d(1, 1, 7, kernel=3, stride=2)
    arch = Arch((Level("DRAM", kind="dram"), Level("RF", kind="regfile")))
    m = Mapping((LevelMapping({"Q": 3}, ("Q",)), LevelMapping({"S": 3}, ("S",))))
    # tile [2q, 2q+3): 3 words; each step shifts by 2, keeping 1: 3 + 2 + 2 = 7.
    assert counts(prob, arch, m)["fills"][1][I] == 7


@pytest.mark.parametrize("reduction", [True, False])
def test_spatial_reduction_of_partial_sums(reduction):
    # O[0,0] = sum over K=4 of I[0,k] W[k,0]; the RF's fan-out spreads k over 4 MACs (X).
    prob = P.matmul(m=1, k=4, n=1)
    arch = Arch((Level("DRAM", kind="dram"),
                 Level("RF", fanout_x=4, spatial_reduction=reduction, kind="regfile")))
    m = Mapping((LevelMapping(), LevelMapping(spatial_x={"K": 4})))
    c = counts(prob, arch, m)
    # one step; the 4 MACs read 4 different I and W words; all 4 accumulate into O[0,0], which
    # was never written: no read-back. Reduced in the network: 1 update, else 4.
    assert c["reads"][1].tolist() == [4, 4, 0]
    assert c["updates"][1][O] == (1 if reduction else 4)
    # up the fan-out, every MAC sends its partial sum (the tree reduces after the links): 4 hops.
    assert c["hops"][1][O] == 4


def test_halo_multicast_diagonal():
    # conv1d S=2, Q=2 (w = q + s, 3 elements) with q on X and s on Y below DRAM (one step):
    # the 4 MACs need w = 0, 1, 1, 2. With multicast DRAM reads 3 words, without 4.
    prob = P.conv1d(1, 1, 3, kernel=2)
    for mc, expect in ((True, 3), (False, 4)):
        arch = Arch((Level("DRAM", fanout_x=2, fanout_y=2, multicast=mc, kind="dram"), Level("RF")))
        m = Mapping((LevelMapping(spatial_x={"Q": 2}, spatial_y={"S": 2}), LevelMapping()))
        c = counts(prob, arch, m)
        assert c["reads"][0][I] == expect
        assert c["fills"][1][I] == 4  # each RF gets its own word
