"""The float32 VEC ops (RFADD, FDIV, FQUANT, RBLEND, FREQUANT) on hand-worked values, through the
simulator's instruction execution (compiler.sim.compute.vec), where the order of the float32
roundings decides the result.

The whole-layer checks against onnxruntime are in tests/compiler (test_vector_ops, test_pool_numerics,
test_resize_linear); these pin the ISA definitions in docs/isa.md.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from compiler.isa import Buffer, Engine, Reg, Src1Mode, Vec, VecOp
from compiler.sim import compute
from compiler.sim.state import MachineState, SimError
from compiler.target import Target


def _bits(v: float) -> int:
    return struct.unpack("<i", struct.pack("<f", float(np.float32(v))))[0]


def _f(bits) -> np.ndarray:
    return np.asarray(bits, np.int64).astype(np.int32).view(np.float32)


@pytest.fixture
def state():
    return MachineState.create(Target(), 1024)


def _set(state, reg: Reg, value: int) -> None:
    state.regs[int(Engine.EX), int(reg)] = value


def test_rfadd_rounds_after_every_add(state):
    """Codes 255, 255, 1, zero point 0, scale 65537 (exact in float32). Products: 16711935 (exact,
    < 2**24), 16711935, 65537. Sum in tap order, float32: 16711935 + 16711935 = 33423870, a tie between
    33423868 and 33423872 (spacing 4 above 2**25) -> 33423872 (even mantissa); + 65537 = 33489409 ->
    33489408. The exact sum is 33489407, which float32 cannot hold: RFADD must give 33489408."""
    spad = state.buffers[Buffer.SPAD].view(np.uint8)
    spad[0:3, :] = np.array([255, 255, 1], np.uint8)[:, None]
    _set(state, Reg.DQ_ZP, 0)
    _set(state, Reg.S1, _bits(65537.0))
    compute.vec(state, Vec(op=VecOp.RFADD, init=True, u8=True, dst_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                           src1=int(Reg.S1), l0=3, s0=1), "t", True)
    assert _f(state.buffers[Buffer.ACC][0, 0]) == np.float32(33489408.0)


def test_fdiv_then_fquant_is_two_float32_roundings(state):
    """FDIV by 3 into ACC row 1, then FQUANT of that row (f = x / y + zp in float32, rint half even,
    clamp) with y = 1, zp 0: 0.5 / 3 = 0.1666... -> 0; 2.5 / 3 = 0.8333... -> 1; 1.5 / 3 = 0.5 -> 0
    (even). And the zero point added before rounding: row 0 itself with zp 1: 0.5 + 1 = 1.5 -> 2,
    2.5 + 1 = 3.5 -> 4, 1.5 + 1 = 2.5 -> 2."""
    acc = state.buffers[Buffer.ACC]
    spad = state.buffers[Buffer.SPAD].view(np.uint8)
    acc[0, :3] = [_bits(0.5), _bits(2.5), _bits(1.5)]
    _set(state, Reg.S2, _bits(3.0))
    compute.vec(state, Vec(op=VecOp.FDIV, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                           src1=int(Reg.S2), dst=1, src0=0), "t", True)
    assert list(_f(acc[1, :3])) == [np.float32(0.5) / np.float32(3), np.float32(2.5) / np.float32(3), 0.5]
    _set(state, Reg.S3, _bits(1.0))
    _set(state, Reg.QMIN, 0)
    _set(state, Reg.QMAX, 255)
    for row, zp, want in ((1, 0, [0, 1, 0]), (0, 1, [2, 4, 2])):
        _set(state, Reg.OUT_ZP, zp)
        compute.vec(state, Vec(op=VecOp.FQUANT, u8=True, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                               src1=int(Reg.S3), dst=row, src0=row), "t", True)
        assert list(spad[row, :3]) == want, (row, zp)


def test_frequant_clamps_before_rounding(state):
    """FREQUANT (MLAS QuantizeLinear) clamps and rounds *before* adding the zero point; FQUANT
    (QLinearAveragePool) adds it first. x = 254.6, zp = 1: both give 255. x = 0.49999997 (the float32
    below 0.5), zp = 1: FREQUANT rint(0.49999997) + 1 = 1; FQUANT first rounds 0.49999997 + 1 to the
    float32 1.5 (spacing 2**-23 there), then rint(1.5) = 2."""
    acc = state.buffers[Buffer.ACC]
    acc[0, :2] = [_bits(254.6), _bits(np.nextafter(np.float32(0.5), np.float32(0)))]
    _set(state, Reg.S1, _bits(1.0))
    _set(state, Reg.OUT_ZP, 1)
    _set(state, Reg.QMIN, 0)
    _set(state, Reg.QMAX, 255)
    compute.vec(state, Vec(op=VecOp.FREQUANT, u8=True, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                           src1=int(Reg.S1)), "t", True)
    assert list(state.buffers[Buffer.SPAD].view(np.uint8)[0, :2]) == [255, 1]
    compute.vec(state, Vec(op=VecOp.FQUANT, u8=True, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                           src1=int(Reg.S1), dst=1), "t", True)
    assert list(state.buffers[Buffer.SPAD].view(np.uint8)[1, :2]) == [255, 2]


def test_rblend_weights_are_products_in_order(state):
    """One element, 2 x 2 taps with codes 10, 20 / 30, 40 (zp 0, scale 0.5: 5, 10, 15, 20), x weights
    (0.25, 0.75) from CONST, y weights (0.5, 0.5): 0.125*5 + 0.375*10 + 0.125*15 + 0.375*20 = 13.75."""
    spad = state.buffers[Buffer.SPAD].view(np.uint8)
    spad[0:4, :] = np.array([10, 20, 30, 40], np.uint8)[:, None]
    state.buffers[Buffer.CONST][0, :2] = [_bits(0.25), _bits(0.75)]
    for reg, v in ((Reg.DQ_ZP, 0), (Reg.DQ_SCALE, _bits(0.5)), (Reg.BL_WY0, _bits(0.5)), (Reg.BL_WY1, _bits(0.5))):
        _set(state, reg, v)
    compute.vec(state, Vec(op=VecOp.RBLEND, init=True, u8=True, dst_buf=Buffer.ACC, src1_buf=Buffer.CONST,
                           src1_mode=Src1Mode.ROW, l0=2, l1=2, s0=1, s1=2), "t", True)
    assert _f(state.buffers[Buffer.ACC][0, 0]) == np.float32(13.75)


def test_float_ops_reject_8bit_float_lanes(state):
    with pytest.raises(SimError, match="FDIV writes float32 bits"):
        compute.vec(state, Vec(op=VecOp.FDIV, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG, src1=int(Reg.S1)), "t", True)
    with pytest.raises(SimError, match="RBLEND needs l1 <= 2"):
        compute.vec(state, Vec(op=VecOp.RBLEND, dst_buf=Buffer.ACC, src1_buf=Buffer.CONST, l1=3), "t", True)
