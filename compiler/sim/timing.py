"""Cycle cost of one instruction, from its fields and the Target (no data needed).

* LOAD/STORE: ``dma_setup_cycles`` + DRAM bursts + on-chip pad rows. A contiguous DRAM row
  (``x_gap = 0``) is one burst of ``x_size * vbytes`` bytes, ``ceil(bytes / dma_bytes_per_cycle)``
  cycles; with gaps every vector is its own burst. Pad vectors cost one SRAM write cycle each.
* GEMM on the R x C weight-stationary array, T = L0*L1 taps, M = My*Mx streamed rows:
  - ``scalesim``: ``T * (R*loadw + R + C + M - 2)``. With ``loadw`` this is SCALE-Sim's WS fold
    cost ``2R + C + M - 2`` per tap (weight preload R, stream M, skew R-1, drain C-1), so a layer
    covered by GEMMs of full M costs ``ceil(K/R)*ceil(N/C)*(2R+C+M-2)``, SCALE-Sim's formula
    (reference/scalesim-notes.md section 4.3).
  - ``overlapped``: ``T * max(M, R*loadw) + R + C - 2``: double-buffered PE weights (the next tap's
    tile loads while the current one streams), one fill/drain per instruction
    (reference/isa-notes.md section 6.6).
* VEC: ``VEC_PIPELINE_CYCLES + T * M * ii``, ``ii = 2`` when src1 is a buffer row read per element
  or tap (two operand reads on one SRAM port, as VTA notes), else 1.
* SETREG, NOP: 1 cycle. BARRIER, FINISH: 0 (they align the engines).
"""

from __future__ import annotations

from compiler.isa.instructions import Barrier, Finish, Gemm, Instruction, Load, Nop, SetReg, Store, Vec
from compiler.isa.spec import Src1Mode, VecOp
from compiler.sim import compute
from compiler.sim.state import ELEM_BYTES
from compiler.target import Target

VEC_PIPELINE_CYCLES = 4
"""Estimate (not from a source): read, ALU, convert and write stages of the vector unit."""

_NO_Y = compute.NO_Y | {VecOp.LUT}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def dma_cycles(insn: Load | Store, target: Target) -> int:
    vbytes = target.lanes * ELEM_BYTES[int(insn.elem)]
    bw = target.dma_bytes_per_cycle
    if insn.x_gap == 0:
        dram = insn.y_size * _ceil(insn.x_size * vbytes, bw)
    else:
        dram = insn.y_size * insn.x_size * _ceil(vbytes, bw)
    xs, ys = insn.x_pad0 + insn.x_size + insn.x_pad1, insn.y_pad0 + insn.y_size + insn.y_pad1
    pads = xs * ys - insn.x_size * insn.y_size
    return target.dma_setup_cycles + dram + pads


def gemm_cycles(insn: Gemm, target: Target, mode: str) -> int:
    taps, m = insn.l0 * insn.l1, insn.mx * insn.my
    r, c = target.rows, target.cols
    w = r if insn.loadw else 0
    if mode == "scalesim":
        return taps * (w + r + c + m - 2)
    return taps * max(m, w) + r + c - 2


def vec_cycles(insn: Vec) -> int:
    ii = 2 if insn.op not in _NO_Y and insn.src1_mode in (Src1Mode.ROW, Src1Mode.TAP) else 1
    return VEC_PIPELINE_CYCLES + insn.l0 * insn.l1 * insn.mx * insn.my * ii


def latency(insn: Instruction, target: Target, gemm_mode: str) -> int:
    """Cycles the instruction occupies its engine."""
    if isinstance(insn, Load | Store):
        return dma_cycles(insn, target)
    if isinstance(insn, Gemm):
        return gemm_cycles(insn, target, gemm_mode)
    if isinstance(insn, Vec):
        return vec_cycles(insn)
    if isinstance(insn, SetReg | Nop):
        return 1
    if isinstance(insn, Barrier | Finish):
        return 0
    raise TypeError(f"not an instruction: {insn!r}")


def gemm_macs(insn: Gemm, target: Target) -> int:
    """MACs the array performs (all R x C PEs, including zero-padded lanes)."""
    return insn.l0 * insn.l1 * insn.mx * insn.my * target.rows * target.cols
