"""Timing mode: GEMM cycles equal SCALE-Sim's WS fold formula; DMA and timeline by hand."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.isa import Buffer, Elem, Finish, Gemm, Load, Src1Mode, Store, Vec, VecOp
from compiler.isa.program import Program
from compiler.sim import simulate
from compiler.target import Target

from .sim_programs import L, conv_program, matmul_program


def scalesim_ws_cycles(m: int, k: int, n: int, r: int, c: int) -> int:
    """SCALE-Sim v3 WS compute cycles (+1, see reference/scalesim-notes.md 4.3): ifmap M x K,
    filter K x N on an R x C array; folds = ceil(K/R) * ceil(N/C), each 2R + C + M - 2 cycles."""
    return -(-k // r) * -(-n // c) * (2 * r + c + m - 2)


def gemm_cycles(result, program) -> int:
    return sum(int(result.end[i] - result.start[i]) for i, x in enumerate(program.instructions)
               if isinstance(x, Gemm))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 200), kb=st.integers(1, 4), nb=st.integers(1, 3))
def test_matmul_gemm_cycles_equal_scalesim_formula(m, kb, nb):
    a = np.zeros((m, kb * L), np.int8)
    b = np.zeros((kb * L, nb * L), np.int8)
    program, _ = matmul_program(a, b)
    r = simulate(program, {}, functional=False, gemm_timing="scalesim")
    assert gemm_cycles(r, program) == scalesim_ws_cycles(m, kb * L, nb * L, L, L)
    # overlapped mode: per instruction T*max(M, R) + R + C - 2, never more than the SCALE-Sim count
    o = simulate(program, {}, functional=False, gemm_timing="overlapped")
    assert gemm_cycles(o, program) == nb * (kb * max(m, L) + 2 * L - 2)
    assert gemm_cycles(o, program) <= gemm_cycles(r, program)


def test_conv_gemm_cycles_equal_scalesim_formula():
    # 3x3 conv, 16 -> 16 channels, 12x12 input, pad 1: SCALE-Sim's im2col GEMM has M = 12*12 = 144 pixels,
    # K = 3*3*16 = 144, N = 16 -> ceil(144/16) * ceil(16/16) * (32 + 16 + 144 - 2) = 9 * 190 = 1710
    x = np.zeros((1, 16, 12, 12), np.int8)
    w = np.zeros((16, 16, 3, 3), np.int8)
    program, _ = conv_program(x, w, stride=1, pad=1)
    r = simulate(program, {}, functional=False, gemm_timing="scalesim")
    assert gemm_cycles(r, program) == scalesim_ws_cycles(144, 144, 16, 16, 16) == 1710


def test_dma_cycles_and_timeline_by_hand():
    t = Target(dma_bytes_per_cycle=16, dma_setup_cycles=32)
    insns = [
        # 3 rows of 5 16-byte vectors, 1 pad vector before each row:
        # 32 setup + 3 * ceil(80 / 16) = 15 burst cycles + (3*6 - 15) = 3 pad writes = 50
        Load(buf=Buffer.SPAD, y_size=3, x_size=5, x_pad0=1, dram_pitch=80, push_next=True),
        # GEMM: pops at 50; overlapped: T*max(M, R) + R + C - 2 = 1*max(4, 16) + 30 = 46 -> ends at 96
        Gemm(pop_prev=True, push_next=True, loadw=True, w_base=0, mx=4, a_sx=1),
        # STORE of 4 ACC rows (64-byte vectors, strided): 32 + 4 * ceil(64 / 16) = 48 -> 96..144
        Store(pop_prev=True, buf=Buffer.ACC, elem=Elem.B32, y_size=4, dram_pitch=64, dram_addr=256),
        Finish(),
    ]
    r = simulate(Program(instructions=insns, dram_size=1024), {}, arch=t)
    assert (r.start[:3].tolist(), r.end[:3].tolist()) == ([0, 50, 96], [50, 96, 144])
    assert r.cycles == 144
    assert r.busy == {"LD": 50, "EX": 46, "ST": 48}
    assert r.stall == {"LD": 0, "EX": 50, "ST": 96}
    assert r.idle == {"LD": 94, "EX": 48, "ST": 0}


def test_independent_engines_overlap():
    # a load and an unrelated GEMM start together; the program takes the longer of the two
    insns = [Load(buf=Buffer.SPAD, y_size=64, dram_pitch=16, sram=1000), Gemm(loadw=True, mx=100, a_sx=1), Finish()]
    r = simulate(Program(instructions=insns, dram_size=2048), {})
    load, gemm = 32 + 64 * 1, 1 * max(100, 16) + 16 + 16 - 2
    assert r.start[:2].tolist() == [0, 0] and r.cycles == max(load, gemm)


def test_dma_bursts_round_up_when_the_bytes_do_not_divide():
    """dma_bytes_per_cycle defaults to the DRAM's read_bw x word_bits / 8, which need not divide a
    vector (docs/simulator.md: per DRAM row ceil(x_size * vbytes / bw); with x_gap, per vector)."""
    t = Target(dma_bytes_per_cycle=24, dma_setup_cycles=32)
    # contiguous int8 rows: 3 rows x ceil(5 * 16 / 24) = ceil(3.33) = 4 -> 32 + 12 = 44
    # gapped int32 vectors: 3 x 5 vectors x ceil(16 * 4 / 24) = ceil(2.67) = 3 -> 32 + 45 = 77
    insns = [Load(buf=Buffer.SPAD, y_size=3, x_size=5, dram_pitch=80),
             Load(buf=Buffer.ACC, elem=Elem.B32, y_size=3, x_size=5, x_gap=1, dram_pitch=640, sram=64), Finish()]
    r = simulate(Program(instructions=insns, dram_size=4096), {}, arch=t, functional=False)
    assert (r.end[:2] - r.start[:2]).tolist() == [44, 77]


def test_vec_initiation_interval_by_its_second_operand():
    """docs/simulator.md: 4 + T * M * ii cycles, ii = 2 when src1 is a buffer row per element or a
    tap, else 1 (a register operand, or an op without a second operand)."""
    insns = [Vec(op=VecOp.ADD, src1_mode=Src1Mode.ROW, mx=16, src1=32, dst=64),
             Vec(op=VecOp.ADD, src1_mode=Src1Mode.REG, mx=16, dst=64),
             Vec(op=VecOp.MOV, src1_mode=Src1Mode.ROW, mx=16, dst=64), Finish()]
    r = simulate(Program(instructions=insns, dram_size=1024), {}, functional=False)
    assert (r.end[:3] - r.start[:3]).tolist() == [4 + 16 * 2, 4 + 16, 4 + 16]
