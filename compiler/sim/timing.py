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
    (reference/isa-notes.md section 6.6); a GEMM that directly follows a GEMM on EX overlaps the
    previous one's fill/drain (:func:`gemm_overlap`), so a run of GEMMs pays it once.
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


def gemm_overlap(insn: Instruction, target: Target, mode: str) -> int:
    """Cycles at the end of a GEMM that the next GEMM on the array may overlap (``overlapped`` mode):
    its fill/drain ``R + C - 2``. Back-to-back GEMMs stream through the array like one long GEMM
    (weights double-buffered in the PEs, partial sums added in arrival order), so a run of GEMMs pays
    the fill/drain once; any other instruction waits for the last result. ``scalesim`` mode: 0
    (SCALE-Sim charges every fold in full)."""
    if mode == "scalesim" or not isinstance(insn, Gemm):
        return 0
    return target.rows + target.cols - 2


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


ARRAY, VECTOR = 0, 1
"""The two units behind the EX queue: the systolic array (GEMM) and the vector unit (VEC)."""


def ex_unit(insn: Instruction) -> int | None:
    """Which EX unit runs ``insn`` (None: both must be free, e.g. SETREG changes VEC's registers)."""
    return ARRAY if isinstance(insn, Gemm) else VECTOR if isinstance(insn, Vec) else None


def footprint(insn: Instruction, target: Target) -> tuple[tuple[int, int, int], ...]:
    """(buffer, first row, end row) boxes an EX instruction may touch (a superset: walks as intervals).
    Two instructions on different EX units overlap in time only if their boxes are disjoint."""
    if isinstance(insn, Gemm):
        m, taps = insn.mx * insn.my, insn.l0 * insn.l1
        a_end = (insn.a_base + (insn.my - 1) * insn.a_sy + (insn.mx - 1) * insn.a_sx + (insn.l1 - 1) * insn.a_s1
                 + (insn.l0 - 1) * insn.a_s0 + 1)
        boxes = [(1, insn.c_base, insn.c_base + m), (0, insn.a_base, a_end)]
        if insn.loadw:
            boxes.append((0, insn.w_base, insn.w_base + taps * target.rows))
        return tuple(boxes)
    if isinstance(insn, Vec):
        m, taps = insn.mx * insn.my, insn.l0 * insn.l1
        src_end = insn.src0 + (insn.my - 1) * insn.sy + (insn.mx - 1) * insn.sx + (insn.l1 - 1) * insn.s1 + \
            (insn.l0 - 1) * insn.s0 + 1
        boxes = [(int(insn.dst_buf), insn.dst, insn.dst + m), (int(insn.src0_buf), insn.src0, src_end)]
        if insn.op == VecOp.LUT:
            boxes.append((int(insn.src1_buf), insn.src1, insn.src1 + 256))
        elif insn.src1_mode == Src1Mode.ROW:
            boxes.append((int(insn.src1_buf), insn.src1, insn.src1 + m))
        elif insn.src1_mode == Src1Mode.TAP:
            boxes.append((int(insn.src1_buf), insn.src1, insn.src1 + taps))
        elif insn.src1_mode == Src1Mode.FIXED:
            boxes.append((int(insn.src1_buf), insn.src1, insn.src1 + 1))
        return tuple(boxes)
    return ()
