"""Hand-worked pipeline terms of the overlapped latency (costmodel.pipeline): the first tile's fill,
the last tile's drain, distinct words over a multicast network, and the post-GEMM vector stage.
Every number is derived in the comments from the layer, the mapping and the config."""

from types import SimpleNamespace as NS

import pytest

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate, evaluate_batch
from costmodel.mapping import LevelMapping, Mapping, MappingBatch
from costmodel.problem import conv2d, matmul
from tests.evaluate.hand_levels import level


def test_tpu_like_template_conv():
    """1x1 conv, 32 -> 32 channels, 8x8, on tpu_like with the compiler's template mapping: 4 output rows
    per tile (DRAM: P2), both output blocks in one group (scratchpad: K2), accumulator: C2 with
    C16 x K16 on the array, PE: P4 Q8 (compiler.lower.mapped.executed_mapping)."""
    from compiler.lower.mapped import executed_mapping

    arch = load_architecture("tpu_like")
    problem = conv2d(32, 32, 8, 8, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1))
    mapping = executed_mapping(problem, arch, "scratchpad", "accumulator", 16, 4, 2)
    lat = evaluate(problem, arch, mapping, systolic_mode="overlapped").batch.lat
    # compute (WS fold model, overlapped): temporal steps P2 x K2 x C2 x P4 x Q8 = 256; the stream T is the
    # PE level's P4 Q8 = 32 (inner to the innermost loop over a weight dim, C2), folds 256 / 32 = 8;
    # 256 + (2*16 + 16 - 2) + 7 * max(0, 16 - 32) = 302
    assert lat.compute[0] == 302
    # fill: the staged levels are scratchpad and accumulator (double-buffered; pe_weight is inside the
    # array). Scratchpad's first tile: I = C32 x P4 x Q8 = 1024 words, W = 32 x 32 = 1024 words, at 16
    # words/cycle (DRAM read port and scratchpad write port alike): 2048 / 16 = 128. The accumulator
    # holds only O, whose first tile is never read back: nothing to fill.
    assert lat.fill[0] == 128
    # drain: the accumulator's last O tile, P4 x Q8 x K16 = 512 words, to DRAM at 16/cycle = 32
    assert lat.drain[0] == 32
    # vector stage: |O| = 32 x 64 = 2048 outputs x 2 passes (bias add, requantize) / 16 lanes = 256;
    # the last output tile: 2 x 512 / 16 = 64
    assert lat.vector[0] == 256
    # tiles = DRAM's P2 -> one tile of the array stage: array / 2, array = max(compute 302, port times
    # of scratchpad (192 reads, 192 writes) and accumulator (128, 256)) = 302 -> 151.
    # DRAM ports: reads I 2048 + W 1024 = 3072 / 16 = 192, writes O 2048 / 16 = 128.
    assert lat.traffic[0, 0].tolist() == [192, 128]
    #   array-bound     128 + 302 + 64 + 32                      = 526
    #   vector-bound    128 + 151 + 256 + 32                     = 567
    #   transfer-bound  max(192 + 32, 128 + 128) + 151 + 64      = 471
    assert lat.total[0] == 567
    assert lat.bound_by()[0] == -1  # the steady state is compute (vector unit 256 > DRAM 192)
    # no overlap: compute 302 + vector 256 + DRAM 192 + scratchpad 192 + accumulator 256 + pe_weight 0
    assert evaluate(problem, arch, mapping, overlap=False, systolic_mode="overlapped").latency_cycles == 1198


def _fanout_arch(multicast: bool, **buf):
    return NS(name="fan", clock_hz=1e9, num_pes=2, systolic=None, mac=NS(energy_pj=0.0, leak_mw=0.0), levels=(
        level("DRAM", read_bw=1, write_bw=1, fanout_x=2, multicast=multicast),
        level("buf", instances=2, **buf),
    ))


# O[m,n] = sum_k I[m,k] W[k,n], M2 K4 N2. DRAM: for m in 2, parallel_for n in 2 (two buf instances)
# | buf: for k in 4. Per buf instance: I tile I[m, 0:4] = 4 words, W tile W[0:4, n] = 4, O tile 1.
PROBLEM = matmul(m=2, k=4, n=2)
MAPPING = Mapping((LevelMapping(temporal={"M": 2}, spatial_x={"N": 2}), LevelMapping(temporal={"K": 4})))


@pytest.mark.parametrize("multicast,fill,total", [
    # multicast: both instances need the same I tile (n does not index I): 4 words once; W differs: 2 x 4.
    # fill 4 + 8 = 12 at 1 word/cycle. DRAM reads I 2 x 4 + W 8 = 16, writes O 4.
    #   array-bound 12 + 8 + 2 = 22; transfer-bound max(16 + 2, 4 + 12) + 4 = 22
    (True, 12, 22),
    # no multicast: I goes to each instance: fill 8 + 8 = 16; DRAM reads I 16 + W 8 = 24.
    #   array-bound 16 + 8 + 2 = 26; transfer-bound max(24 + 2, 4 + 16) + 4 = 30
    (False, 16, 30),
])
def test_fill_counts_distinct_words_over_the_network(multicast, fill, total):
    arch = _fanout_arch(multicast)
    ev = evaluate_batch(PROBLEM, arch, MappingBatch.from_mappings([MAPPING], PROBLEM, arch))
    assert ev.lat.fill[0] == fill
    # drain: the last O tiles, 1 word in each of the 2 instances (n indexes O: distinct), 2 / 1 = 2
    assert ev.lat.drain[0] == 2
    # compute: M2 x K4 = 8 steps; 2 tiles (DRAM's m loop): one tile computes 4
    assert ev.lat.compute[0] == 8
    assert ev.latency_cycles[0] == total
    # the no-overlap variant (8 + DRAM's reads) is slower: 24 / 32
    assert evaluate_batch(PROBLEM, arch, MappingBatch.from_mappings([MAPPING], PROBLEM, arch),
                          overlap=False).latency_cycles[0] == 8 + (16 if multicast else 24)


def test_ideal_overlap_has_no_fill_or_drain():
    # Timeloop's idealisation: buf overlaps its transfers without a first tile or a last one:
    # max(compute 8, DRAM reads 16) = 16
    arch = _fanout_arch(True, double_buffered=False, ideal_overlap=True)
    ev = evaluate_batch(PROBLEM, arch, MappingBatch.from_mappings([MAPPING], PROBLEM, arch))
    assert ev.lat.fill[0] == 0 and ev.lat.drain[0] == 0
    assert ev.latency_cycles[0] == 16


@pytest.mark.parametrize("seed", [0, 1])
def test_vector_stage_rounds_up_a_last_partial_row_of_lanes(seed):
    """docs/validation.md: the post-GEMM vector stage takes 2 ceil(|O| / lanes) cycles (bias add and
    requantize) on tpu_like's one 16-lane vector unit, whatever the mapping. 3x3 conv 3 -> 5 channels
    on 7x7: |O| = 5 x 5 x 5 = 125 outputs, ceil(125 / 16) = 8 rows of lanes, 16 cycles (not 14: the
    last, partial row takes a cycle too)."""
    from costmodel.random_mappings import random_mappings

    arch = load_architecture("tpu_like")
    problem = conv2d(3, 5, 7, 7, (3, 3))
    assert problem.tensor_elements("O") == 125 and arch.vector_unit.lanes == 16
    ev = evaluate_batch(problem, arch, random_mappings(problem, arch, 50, seed=seed))
    assert (ev.lat.vector == 16).all()
