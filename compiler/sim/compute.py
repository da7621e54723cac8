"""GEMM and VEC on the EX engine: field checks against the config, then one vectorized kernel call.

Each function validates every address the instruction will touch (naming the buffer and the row
range), executes it when ``compute`` is set, and returns the buffer accesses for the race detector.
VEC reads all its operands before writing; a destination row that an *earlier* element of the
same instruction's walk would read after writing it is rejected (the loop semantics and the
vectorized one would differ), in-place updates (element m reads then writes row m) are fine.
"""

from __future__ import annotations

import numpy as np

from compiler.isa.instructions import Gemm, Vec
from compiler.isa.spec import REDUCE_OPS, Buffer, Engine, GemmType, Reg, Src1Mode, VecOp
from compiler.sim import kernels, quant
from compiler.sim.races import BufAccess
from compiler.sim.state import MachineState, SimError

NO_Y = frozenset({VecOp.MOV, VecOp.CLAMP, VecOp.LSUM, VecOp.LMAX, VecOp.RADD, VecOp.RMAX, VecOp.RMIN})
"""VEC ops that do not read src1 (LUT reads it as a table, see _lut)."""
_F32_Y = frozenset({VecOp.REQUANT, VecOp.REQUANT_DIV, VecOp.RFADD, VecOp.FDIV, VecOp.FQUANT, VecOp.RBLEND,
                    VecOp.FREQUANT})
_F32_X = frozenset({VecOp.FDIV, VecOp.FQUANT, VecOp.FREQUANT})
"""Ops whose x is float32 bits (src0 must have 32-bit lanes)."""
_F32_D = frozenset({VecOp.RFADD, VecOp.FDIV, VecOp.RBLEND})
"""Ops whose result is float32 bits (the destination must have 32-bit lanes)."""
_REGS = frozenset(int(r) for r in Reg)


def _check_rows(state: MachineState, buf: Buffer, rows: np.ndarray | slice, what: str, where: str) -> None:
    have = state.target.buffer_rows(buf)
    top = rows.stop - 1 if isinstance(rows, slice) else int(rows.max())
    if top >= have:
        raise SimError(f"{where}: {what} reaches {buf.name} row {top}, but {buf.name} has {have} rows")


def gemm(state: MachineState, insn: Gemm, where: str, compute: bool) -> list:
    t = state.target
    taps, m = insn.l0 * insn.l1, insn.mx * insn.my
    a_rows = kernels.walk(insn.a_base, insn.mx, insn.my, insn.l0, insn.l1,
                          insn.a_sx, insn.a_sy, insn.a_s0, insn.a_s1)
    _check_rows(state, Buffer.SPAD, a_rows, "the A walk", where)
    c_rows = slice(insn.c_base, insn.c_base + m)
    _check_rows(state, Buffer.ACC, c_rows, "the output tile", where)
    out = [BufAccess(Buffer.SPAD, a_rows, write=False)]
    if insn.loadw:
        w_rows = slice(insn.w_base, insn.w_base + taps * t.rows)
        _check_rows(state, Buffer.SPAD, w_rows, f"the {taps} weight tile(s)", where)
        out.append(BufAccess(Buffer.SPAD, w_rows, write=False))
        if not compute:  # (a run without values still knows a tile is loaded: the check below needs it)
            state.weights = np.zeros((t.rows, t.cols), np.int8)
    elif state.weights is None:
        raise SimError(f"{where}: GEMM with loadw = 0 but no weight tile has been loaded yet")
    if insn.acc:
        out.append(BufAccess(Buffer.ACC, c_rows, write=False))
    out.append(BufAccess(Buffer.ACC, c_rows, write=True))
    if compute:
        spad = state.buffers[Buffer.SPAD]
        if insn.loadw:
            tiles = kernels.weight_tiles(spad, insn.w_base, taps, t.rows, bool(insn.w_t))
            state.weights = tiles[-1].copy()
        else:
            tiles = state.weights[None]
        kernels.gemm(spad, state.buffers[Buffer.ACC], a_rows, tiles, insn.c_base,
                     unsigned=insn.dtype == GemmType.U8, accumulate=bool(insn.acc))
    return out


def _hazard(rows: np.ndarray, elem: np.ndarray, dst: int) -> bool:
    """Does some element read a destination row written by an earlier element of the walk?"""
    k = rows - dst
    return bool(((k >= 0) & (k < elem)).any())


def _operand_y(state: MachineState, insn: Vec, taps: int, m: int, where: str):
    """(y values broadcastable to [T, M, L] or None, accesses, rows-with-element for hazards)."""
    if insn.op in NO_Y:
        return None, [], None
    mode = insn.src1_mode
    if mode == Src1Mode.REG:
        if insn.src1 not in _REGS:
            raise SimError(f"{where}: src1 = {insn.src1} is not a register number")
        raw = np.int64(state.reg(Engine.EX, insn.src1))
        y = kernels.f32_bits(raw) if insn.op in _F32_Y else raw
        return y, [], None
    elem = np.arange(m, dtype=np.int64)
    if mode == Src1Mode.ROW:
        rows, shape, by_elem = insn.src1 + elem, (1, m, -1), (insn.src1 + elem, elem)
    elif mode == Src1Mode.TAP:
        rows = insn.src1 + np.arange(taps, dtype=np.int64)
        shape, by_elem = (taps, 1, -1), (rows[:, None], elem[None, :])
    else:
        rows, shape = np.array([insn.src1], dtype=np.int64), (1, 1, -1)
        by_elem = (rows[:, None], elem[None, :])
    _check_rows(state, insn.src1_buf, rows, "src1", where)
    buf = state.buffers[insn.src1_buf]
    if insn.op in _F32_Y:
        if insn.src1_buf == Buffer.SPAD:
            raise SimError(f"{where}: {insn.op.name} reads fp32 scales; src1 must be ACC, CONST or a register")
        y = buf[rows].view(np.float32).reshape(shape)
    else:
        y = kernels.lanes(buf, insn.u8)[rows].astype(np.int64).reshape(shape)
    return y, [BufAccess(insn.src1_buf, rows, write=False)], by_elem


def vec(state: MachineState, insn: Vec, where: str, compute: bool) -> list:
    t = state.target
    op = insn.op
    if op not in t.vector_ops:
        raise SimError(f"{where}: the vector unit of {t.name} does not implement {op.name}")
    taps, m = insn.l0 * insn.l1, insn.mx * insn.my
    if op not in REDUCE_OPS and taps != 1:
        raise SimError(f"{where}: {op.name} is a map; it needs l0 = l1 = 1, got {insn.l0} x {insn.l1}")
    if op == VecOp.LUT and (insn.src1_mode != Src1Mode.FIXED or insn.src1_buf != Buffer.CONST):
        raise SimError(f"{where}: LUT needs src1_mode FIXED and src1_buf CONST (the table's first row)")
    if op == VecOp.RBLEND and (insn.l1 > 2 or insn.l0 > t.lanes or insn.src1_mode not in (Src1Mode.ROW, Src1Mode.FIXED)):
        raise SimError(f"{where}: RBLEND needs l1 <= 2, l0 <= {t.lanes} and src1_mode ROW or FIXED")
    if op in _F32_X and insn.src0_buf == Buffer.SPAD:
        raise SimError(f"{where}: {op.name} reads float32 bits; src0 must be ACC or CONST, not SPAD")
    if op in _F32_D and insn.dst_buf == Buffer.SPAD:
        raise SimError(f"{where}: {op.name} writes float32 bits; the destination must be ACC or CONST, not SPAD")
    x_rows = kernels.walk(insn.src0, insn.mx, insn.my, insn.l0, insn.l1, insn.sx, insn.sy, insn.s0, insn.s1)
    _check_rows(state, insn.src0_buf, x_rows, "the src0 walk", where)
    dst_rows = slice(insn.dst, insn.dst + m)
    _check_rows(state, insn.dst_buf, dst_rows, "the destination", where)
    elem = np.arange(m, dtype=np.int64)
    if insn.src0_buf == insn.dst_buf and _hazard(x_rows, elem[None, :], insn.dst):
        raise SimError(f"{where}: src0 reads {insn.dst_buf.name} rows that earlier elements already overwrote")
    y, y_acc, y_elem = _operand_y(state, insn, taps, m, where) if op != VecOp.LUT else (None, [], None)
    if y_elem is not None and insn.src1_buf == insn.dst_buf and _hazard(y_elem[0], y_elem[1], insn.dst):
        raise SimError(f"{where}: src1 reads {insn.dst_buf.name} rows that earlier elements already overwrote")
    reads_old = op in REDUCE_OPS and not insn.init
    out = [BufAccess(insn.src0_buf, x_rows, write=False), *y_acc]
    if reads_old:
        out.append(BufAccess(insn.dst_buf, dst_rows, write=False))
    if compute:
        x = kernels.lanes(state.buffers[insn.src0_buf], insn.u8)[x_rows]  # [T, M, L]
        dbuf = state.buffers[insn.dst_buf]
        old = kernels.lanes(dbuf, insn.u8)[dst_rows].astype(np.int64) if reads_old else None
        if op == VecOp.LUT:
            result, rows = _lut(state, insn, x[0], where)
            out.append(BufAccess(Buffer.CONST, rows, write=False))
        else:
            result = _apply(state, op, x, y, old, where, insn.l0)
        dbuf[dst_rows] = kernels.to_lanes(result, dbuf.dtype, insn.u8)
    elif op == VecOp.LUT:  # timing-only: the table rows read depend on data; assume the whole table
        out.append(BufAccess(Buffer.CONST, slice(insn.src1, t.const_rows), write=False))
    out.append(BufAccess(insn.dst_buf, dst_rows, write=True))
    return out


def _lut(state: MachineState, insn: Vec, x: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    lanes = state.target.lanes
    table = state.buffers[Buffer.CONST][insn.src1 :].ravel()
    lut_min = state.reg(Engine.EX, int(Reg.LUT_MIN))
    idx = x.astype(np.int64) - lut_min
    if idx.min() < 0 or idx.max() >= table.size:
        bad = int(x.ravel()[np.argmax(((idx < 0) | (idx >= table.size)).ravel())])
        raise SimError(f"{where}: LUT input {bad} is outside the table (LUT_MIN {lut_min}, "
                       f"{table.size} entries from CONST row {insn.src1})")
    return kernels.lut(x, table, lut_min), insn.src1 + np.unique(idx // lanes)


def _apply(state: MachineState, op: VecOp, x: np.ndarray, y, old, where: str, l0: int = 1) -> np.ndarray:
    """The exact result of a VEC op (int64 or int32), before conversion to the destination lanes."""
    reg = lambda r: state.reg(Engine.EX, int(r))
    if op == VecOp.RFADD:
        if not np.isfinite(y).all():
            raise SimError(f"{where}: RFADD scale is not a finite float32")
        return kernels.fp32_tap_sum(x, np.broadcast_to(y, x.shape), reg(Reg.DQ_ZP), old)
    if op == VecOp.RBLEND:
        wx = np.broadcast_to(y[0], x.shape[1:])[:, :l0]  # [M, L0]: lane l0 of each element's src1 row
        wy = [state.reg_f32(Engine.EX, int(r)) for r in (Reg.BL_WY0, Reg.BL_WY1)]
        return kernels.fp32_blend(x, wx, wy, reg(Reg.DQ_ZP), state.reg_f32(Engine.EX, int(Reg.DQ_SCALE)), old)
    if op in REDUCE_OPS:
        yy = None if y is None else np.broadcast_to(y, x.shape)
        return kernels.reduce_taps(op.name, x, yy, old)
    x0 = x[0].astype(np.int64)
    y0 = None if y is None else (y[0] if np.ndim(y) == 3 else y)
    if op == VecOp.MOV:
        return x0
    if op == VecOp.ADD:
        return x0 + y0
    if op == VecOp.SUB:
        return x0 - y0
    if op == VecOp.MUL:
        return x0 * y0
    if op == VecOp.MAX:
        return np.maximum(x0, y0)
    if op == VecOp.MIN:
        return np.minimum(x0, y0)
    if op == VecOp.SHR:
        sh = np.broadcast_to(y0, x0.shape)
        if sh.min() < 0 or sh.max() > 31:
            raise SimError(f"{where}: SHR amount {int(sh.min() if sh.min() < 0 else sh.max())} outside [0, 31]")
        mode = reg(Reg.ROUND)
        if mode not in (quant.ROUND_HALF_EVEN, quant.ROUND_HALF_UP, quant.ROUND_FLOOR):
            raise SimError(f"{where}: register ROUND = {mode}, expected 0, 1 or 2")
        return quant.rounding_shift(x0, sh, mode)
    if op == VecOp.CLAMP:
        return np.clip(x0, reg(Reg.CLAMP_LO), reg(Reg.CLAMP_HI))
    if op in (VecOp.REQUANT, VecOp.REQUANT_DIV):
        if not np.isfinite(y0).all() or (op == VecOp.REQUANT_DIV and (np.asarray(y0) == 0).any()):
            raise SimError(f"{where}: {op.name} scale is not a finite (non-zero, for a divide) float32")
        return quant.requantize_range(x0, y0, reg(Reg.OUT_ZP), reg(Reg.QMIN), reg(Reg.QMAX),
                                      divide=op == VecOp.REQUANT_DIV)
    if op == VecOp.FDIV:
        with np.errstate(all="ignore"):  # IEEE float32: x / 0 = +-inf, 0 / 0 = NaN
            return kernels.bits_f32((kernels.f32_bits(x0) / y0).astype(np.float32))
    if op == VecOp.FQUANT:
        with np.errstate(all="ignore"):
            f = ((kernels.f32_bits(x0) / y0).astype(np.float32) + np.float32(reg(Reg.OUT_ZP))).astype(np.float32)
        if np.isnan(f).any():
            raise SimError(f"{where}: FQUANT of NaN (x or the scale is not a number)")
        return np.clip(np.rint(f), reg(Reg.QMIN), reg(Reg.QMAX)).astype(np.int64)
    if op == VecOp.FREQUANT:
        if not np.isfinite(y0).all() or (np.asarray(y0) == 0).any():
            raise SimError(f"{where}: FREQUANT scale is not a finite non-zero float32")
        fx = kernels.f32_bits(x0)
        if np.isnan(fx).any():
            raise SimError(f"{where}: FREQUANT of NaN")
        return quant.requantize_range(fx, y0, reg(Reg.OUT_ZP), reg(Reg.QMIN), reg(Reg.QMAX), divide=True)
    if op == VecOp.QADD:
        f = lambda r: state.reg_f32(Engine.EX, int(r))
        return quant.qadd(x0, y0, f(Reg.QADD_SA), f(Reg.QADD_SB), f(Reg.QADD_OFF), reg(Reg.QMIN), reg(Reg.QMAX))
    if op == VecOp.LSUM:
        return kernels.lane_sum(x0)
    if op == VecOp.LMAX:
        return kernels.lane_max(x0)
    raise SimError(f"{where}: VEC op {op!r} is not implemented")
