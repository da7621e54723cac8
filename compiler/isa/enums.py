"""The ISA's enumerations and what each value means (the field table in spec.py refers to them).

Kept apart from the bit layout so each module stays small; ``compiler.isa.spec`` re-exports all
of these names.
"""

from __future__ import annotations

from enum import IntEnum


class Opcode(IntEnum):
    NOP = 0
    LOAD = 1
    STORE = 2
    GEMM = 3
    VEC = 4
    SETREG = 5
    BARRIER = 6
    FINISH = 7


class Engine(IntEnum):
    LD = 0
    EX = 1
    ST = 2


class Buffer(IntEnum):
    SPAD = 0  # int8/uint8 lanes: activations and weight tiles
    ACC = 1  # int32 lanes: GEMM results, partial sums, bias
    CONST = 2  # 32-bit lanes: fp32 scales, int32 values, LUT entries


class Elem(IntEnum):
    """Width of one DRAM element (one lane) of a LOAD/STORE."""

    B8 = 0
    B16 = 1
    B32 = 2

    @property
    def nbytes(self) -> int:
        return 1 << self.value


class GemmType(IntEnum):
    """Operand types of GEMM: A (activations) x W (weights, always int8) -> int32."""

    S8 = 0
    U8 = 1


class Src1Mode(IntEnum):
    """How VEC's second operand ``y`` is addressed."""

    ROW = 0
    TAP = 1
    FIXED = 2
    REG = 3


class VecOp(IntEnum):
    MOV = 0
    ADD = 1
    SUB = 2
    MUL = 3
    MAX = 4
    MIN = 5
    SHR = 6
    CLAMP = 7
    REQUANT = 8
    REQUANT_DIV = 9
    QADD = 10
    LUT = 11
    LSUM = 12
    LMAX = 13
    RADD = 14
    RMAX = 15
    RMIN = 16
    RMAC = 17
    RFADD = 18
    FDIV = 19
    FQUANT = 20
    RBLEND = 21
    FREQUANT = 22


REDUCE_OPS = frozenset({VecOp.RADD, VecOp.RMAX, VecOp.RMIN, VecOp.RMAC, VecOp.RFADD, VecOp.RBLEND})
"""Ops that reduce over the (L1, L0) taps into one destination element; all others are maps
(one result per (my, mx); they require L0 = L1 = 1)."""

VEC_OP_DOC: dict[VecOp, str] = {
    VecOp.MOV: "`d = x`",
    VecOp.ADD: "`d = x + y`",
    VecOp.SUB: "`d = x - y`",
    VecOp.MUL: "`d = x * y`",
    VecOp.MAX: "`d = max(x, y)` (ReLU: y = a register holding the zero point)",
    VecOp.MIN: "`d = min(x, y)`",
    VecOp.SHR: "`d = x >> y` rounded as register ROUND says (0 half-even, 1 half-up, 2 floor); 0 <= y <= 31",
    VecOp.CLAMP: "`d = min(max(x, CLAMP_LO), CLAMP_HI)`",
    VecOp.REQUANT: "ONNX Runtime's fused requantization: `f = f32(x) * f32bits(y)`, "
    "`f = min(max(f, QMIN - OUT_ZP), QMAX - OUT_ZP)`, `d = rint_half_even(f) + OUT_ZP`",
    VecOp.REQUANT_DIV: "as REQUANT but `f = f32(x) / f32bits(y)` (ONNX QuantizeLinear)",
    VecOp.QADD: "quantized add (QLinearAdd, MLAS's AVX2 kernel): "
    "`f = fma(f32(x), QADD_SA, fma(f32(y), QADD_SB, QADD_OFF))`, two float32 fused multiply-adds "
    "(one rounding each), `d = min(max(rint_half_even(f), QMIN), QMAX)`",
    VecOp.LUT: "`d = LUTENTRY(x - LUT_MIN)`: entry `i` is CONST row `src1 + i // C`, lane `i % C` "
    "(int32); src1_mode must be FIXED and src1_buf CONST",
    VecOp.LSUM: "every lane of d = sum over the lanes of x (a row reduction)",
    VecOp.LMAX: "every lane of d = max over the lanes of x (a row reduction)",
    VecOp.RADD: "`d = (0 if init else d) + sum_t x_t` (average / global pooling)",
    VecOp.RMAX: "`d = max(d if not init, max_t x_t)` (max pooling)",
    VecOp.RMIN: "`d = min(d if not init, min_t x_t)`",
    VecOp.RMAC: "`d = (0 if init else d) + sum_t x_t * y_t` (depthwise convolution)",
    VecOp.RFADD: "float32 dequantize-and-sum, one rounding per step in tap order (onnxruntime's "
    "QLinearAveragePool): `f = 0.0 if init else f32bits(d)`; for t = 0, 1, ...: "
    "`f = f + f32(x_t - DQ_ZP) * f32bits(y_t)`; `d = bits(f)`; d is a 32-bit lane (ACC/CONST)",
    VecOp.FDIV: "`d = bits(f32bits(x) / f32bits(y))` (float32 divide; x and d are 32-bit lanes)",
    VecOp.FQUANT: "quantize a float32 lane as QLinearAveragePool does: `f = f32bits(x) / f32bits(y) + "
    "f32(OUT_ZP)` (two float32 roundings), `d = min(max(rint_half_even(f), QMIN), QMAX)`",
    VecOp.RBLEND: "float32 separable-weight blend of dequantized taps (onnxruntime's bilinear Resize between "
    "DequantizeLinear and QuantizeLinear): `f = 0.0 if init else f32bits(d)`; for each tap (l1, l0) in order: "
    "`c = f32bits(y[l0]) * f32bits(BL_WY{l1})`, `f = f + c * (f32(x_t - DQ_ZP) * DQ_SCALE)` (every operation "
    "rounded to float32); `d = bits(f)`. y is the src1 row (ROW or FIXED, ACC or CONST): lane l0 holds the "
    "weight of inner tap l0; L1 <= 2; d is a 32-bit lane",
    VecOp.FREQUANT: "QuantizeLinear of float32 lanes (MLAS): `f = f32bits(x) / f32bits(y)`, "
    "`f = min(max(f, QMIN - OUT_ZP), QMAX - OUT_ZP)`, `d = rint_half_even(f) + OUT_ZP`",
}


class Reg(IntEnum):
    """Scalar registers, one 32-bit file per engine, written by SETREG (raw int32 or fp32 bits)."""

    PADVAL = 0
    OUT_ZP = 1
    QMIN = 2
    QMAX = 3
    CLAMP_LO = 4
    CLAMP_HI = 5
    ROUND = 6
    LUT_MIN = 7
    QADD_SA = 8
    QADD_SB = 9
    QADD_OFF = 10
    DQ_ZP = 11
    DQ_SCALE = 12
    BL_WY0 = 13
    BL_WY1 = 14
    S0 = 16
    S1 = 17
    S2 = 18
    S3 = 19
    S4 = 20
    S5 = 21
    S6 = 22
    S7 = 23
    S8 = 24
    S9 = 25
    S10 = 26
    S11 = 27
    S12 = 28
    S13 = 29
    S14 = 30
    S15 = 31


ENUM_DOC: dict[type[IntEnum], dict[IntEnum, str]] = {
    Engine: {Engine.LD: "load DMA engine", Engine.EX: "execute engine (array + vector unit)",
             Engine.ST: "store DMA engine"},
    Buffer: {Buffer.SPAD: "scratchpad: int8 (uint8) lanes; activations and weight tiles",
             Buffer.ACC: "accumulator: int32 lanes; GEMM results, partial sums, bias",
             Buffer.CONST: "constants: 32-bit lanes; fp32 scales, int32 values, LUT entries"},
    Elem: {Elem.B8: "1 byte", Elem.B16: "2 bytes", Elem.B32: "4 bytes"},
    GemmType: {GemmType.S8: "A is int8", GemmType.U8: "A is uint8"},
    Src1Mode: {Src1Mode.ROW: "`src1 + my*Mx + mx` (walks with the destination)",
               Src1Mode.TAP: "`src1 + t`, `t = l1*L0 + l0` (one row per kernel tap: depthwise weights)",
               Src1Mode.FIXED: "row `src1` for every element (per-channel scales, LUT base)",
               Src1Mode.REG: "EX register number `src1`, broadcast to every lane"},
    Reg: {Reg.PADVAL: "LD: value of LOAD padding when padsel = 1 (e.g. the input zero point)",
          Reg.OUT_ZP: "EX: REQUANT/REQUANT_DIV/FQUANT output zero point",
          Reg.QMIN: "EX: REQUANT/QADD/FQUANT lower saturation bound",
          Reg.QMAX: "EX: REQUANT/QADD/FQUANT upper saturation bound",
          Reg.CLAMP_LO: "EX: CLAMP lower bound", Reg.CLAMP_HI: "EX: CLAMP upper bound",
          Reg.ROUND: "EX: SHR rounding: 0 half-even, 1 half-up, 2 floor",
          Reg.LUT_MIN: "EX: the input value of LUT entry 0",
          Reg.QADD_SA: "EX fp32: QADD ratio a_scale / c_scale",
          Reg.QADD_SB: "EX fp32: QADD ratio b_scale / c_scale",
          Reg.QADD_OFF: "EX fp32: QADD offset c_zp - fma(SA, a_zp, SB * b_zp)",
          Reg.DQ_ZP: "EX: RFADD/RBLEND input zero point (subtracted before the float32 dequantization)",
          Reg.DQ_SCALE: "EX fp32: RBLEND input scale (the float32 dequantization)",
          Reg.BL_WY0: "EX fp32: RBLEND weight of outer tap l1 = 0",
          Reg.BL_WY1: "EX fp32: RBLEND weight of outer tap l1 = 1",
          **{Reg(r): "scalar operand (VEC src1_mode = reg)" for r in range(16, 32)}},
}
"""Meaning of every enum value, for docs/isa.md (VecOp: VEC_OP_DOC)."""

FP32_REGS = frozenset({Reg.QADD_SA, Reg.QADD_SB, Reg.QADD_OFF, Reg.DQ_SCALE, Reg.BL_WY0, Reg.BL_WY1})
"""Registers whose value is fp32 bits (the assembler reads and prints them as floats)."""

REG_RESET: dict[Reg, int] = {Reg.QMIN: -128, Reg.QMAX: 127, Reg.CLAMP_LO: -(2**31), Reg.CLAMP_HI: 2**31 - 1,
                             Reg.LUT_MIN: -128}
"""Register values after reset; registers not listed reset to 0."""
