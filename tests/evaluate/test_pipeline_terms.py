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


def _two_level(read_bw, write_bw):
    return NS(name="two", clock_hz=1e9, num_pes=1, systolic=None, mac=NS(energy_pj=0.0, leak_mw=0.0), levels=(
        level("DRAM", read_bw=read_bw, write_bw=write_bw), level("buf")))


@pytest.mark.parametrize("m,k,read_bw,write_bw,total", [
    # O[m] = sum_k I[m,k] W[k]; DRAM: for m in M | buf (double-buffered, unlimited ports): for k in K.
    # M2 K4, DRAM read 3 / write 2 words per cycle. compute 8; one tile per m: 2 tiles, c_tile 4.
    #   fill: buf's first I tile (4 words) and W (4) over DRAM's read port: 8 / 3 = 2.667 (no rounding)
    #   drain: the last O tile, 1 word over DRAM's write port: 1 / 2 = 0.5
    #   DRAM ports: reads I 2 x 4 + W 4 (kept across m) = 12 -> ceil(12 / 3) = 4; writes O 2 -> 1
    #   array-bound 2.667 + 8 + 0.5 = 11.17; vector-bound 2.667 + 4 + 0.5 = 7.17;
    #   transfer-bound max(4 + 0.5, 1 + 2.667) + 4 = 8.5 -> ceil(11.17) = 12 (no overlap: 8 + 4 = 12)
    (2, 4, 3, 2, 12),
    # M4 K2, DRAM read 10 / write 0.25: compute 8, 4 tiles, c_tile 2.
    #   fill (2 + 2) / 10 = 0.4; drain 1 / 0.25 = 4; DRAM reads (8 + 2) / 10 = 1, writes 4 / 0.25 = 16
    #   array-bound 0.4 + 8 + 4 = 12.4; vector-bound 0.4 + 2 + 4 = 6.4;
    #   transfer-bound max(1 + 4, 16 + 0.4) + 2 = 18.4: the write port starts after the first fill
    #   -> 19 (no overlap: 8 + max(1, 16) = 24)
    (4, 2, 10, 0.25, 19),
])
def test_a_fractional_pipeline_rounds_up_and_the_write_port_waits_for_the_fill(m, k, read_bw, write_bw, total):
    problem = matmul(m=m, k=k, n=1)
    mapping = Mapping((LevelMapping(temporal={"M": m}), LevelMapping(temporal={"K": k})))
    arch = _two_level(read_bw, write_bw)
    ev = evaluate_batch(problem, arch, MappingBatch.from_mappings([mapping], problem, arch))
    assert ev.lat.compute[0] == m * k
    assert ev.lat.fill[0] == pytest.approx(2 * k / read_bw) and ev.lat.drain[0] == pytest.approx(1 / write_bw)
    assert ev.lat.total[0] == total


def test_a_staged_level_fills_from_the_nearest_level_that_keeps_the_tensor():
    """DRAM (read 2, write 1) -> glb (read 64) -> buf, both below DRAM double-buffered (staged).
    O[m] = sum_k I[m,k] W[k], M2 K4: glb: for m in 2 | buf: for k in 4.
      fill: glb's first tiles, I 8 + W 4 words, from DRAM: 12 / 2 = 6; then buf's, I 4 + W 4, from
            glb (which keeps both), not from DRAM: 8 / 64 = 0.125 -> 6.125
      drain: buf's last O tile (1 word) into glb (unlimited ports): 0; glb's (2 words) to DRAM: 2
      compute 8; one tile at glb (nothing above it): c_tile = array = max(8, glb's ports: reads
      I 8 + W 4 = 12 / 64 -> 1) = 8; DRAM: reads 12 / 2 = 6, writes 2 / 1 = 2.
      array-bound 6.125 + 8 + 2 = 16.125 = vector-bound; transfer-bound max(6 + 2, 2 + 6.125) + 8
      = 16.125 -> 17; capped by no overlap: 8 + DRAM 6 + glb 1 + buf 0 = 15."""
    problem = matmul(m=2, k=4, n=1)
    arch = NS(name="three", clock_hz=1e9, num_pes=1, systolic=None, mac=NS(energy_pj=0.0, leak_mw=0.0), levels=(
        level("DRAM", read_bw=2, write_bw=1), level("glb", read_bw=64), level("buf")))
    mapping = Mapping((LevelMapping(), LevelMapping(temporal={"M": 2}), LevelMapping(temporal={"K": 4})))
    ev = evaluate_batch(problem, arch, MappingBatch.from_mappings([mapping], problem, arch))
    assert ev.lat.fill[0] == pytest.approx(6.125) and ev.lat.drain[0] == pytest.approx(2.0)
    assert ev.lat.total[0] == 15


def test_the_last_output_tile_at_a_vector_unit_counts_every_busy_copy():
    """A 1-lane vector unit at `buf`, whose two instances work on different outputs (DRAM: for m in 2,
    parallel_for n in 2 | buf: for k in 8; O[m,n] = sum_k I[m,k] W[k,n], M2 K8 N2, DRAM 4 words/cycle):
      v_last = 2 passes x ceil(min(1 word x 2 busy copies, |O| 4) / 1 lane) = 4 (one copy's tile: 2)
      V = 2 x ceil(4 / 1) = 8; compute 16, 2 tiles (DRAM's m), c_tile 8
      fill: I[m, 0:8] once over the multicast network + two W columns: (8 + 16) / 4 = 6
      drain: the last O tiles, 1 word in each instance: 2 / 4 = 0.5
      DRAM reads I 16 + W 16 = 32 / 4 = 8, writes 4 / 4 = 1
      array-bound 6 + 16 + 4 + 0.5 = 26.5; vector-bound 6 + 8 + 8 + 0.5 = 22.5;
      transfer-bound max(8 + 0.5, 1 + 6) + 8 + 4 = 20.5 -> 27 (no overlap: 16 + 8 + 8 = 32)"""
    problem = matmul(m=2, k=8, n=2)
    mapping = Mapping((LevelMapping(temporal={"M": 2}, spatial_x={"N": 2}), LevelMapping(temporal={"K": 8})))
    arch = _fanout_arch(True)
    arch.levels[0].read_bw = arch.levels[0].write_bw = 4
    arch.vector_unit = NS(lanes=1, level="buf", leak_mw=0.0, op_pj=0.0, area_mm2=0.0, datatype="int8")
    ev = evaluate_batch(problem, arch, MappingBatch.from_mappings([mapping], problem, arch))
    assert ev.lat.vector[0] == 8 and ev.lat.fill[0] == 6 and ev.lat.drain[0] == 0.5
    assert ev.lat.total[0] == 27
