"""The instruction set as one table: every format, every field's bits and meaning.

The encoder, decoder, assembler, disassembler and ``docs/isa.md`` all read ``FORMATS``, so
they cannot disagree. Instructions are 128 bits, little-endian, and their layout does not depend
on the hardware config (field widths are fixed for the largest supported config; the config
named in the binary header is checked at load/simulation time, not by the encoding).

Machine model (v1): three in-order engines LD (DMA DRAM -> on-chip), EX (R x C weight-stationary
array + vector unit), ST (DMA on-chip -> DRAM), linked by four information-less token FIFOs
(LD->EX, EX->LD, EX->ST, ST->EX). ``pop_*`` waits for a token before the instruction starts,
``push_*`` sends one when it completes. "prev"/"next" are the neighbouring engines in the order
LD, EX, ST: LD has no prev, ST has no next.

On-chip buffers are row-addressed; one row is one vector of ``L`` lanes (``L = R = C`` in v1):
``SPAD`` (int8/uint8 lanes; activations and weight tiles, one weight tile = ``R`` rows),
``ACC`` (int32 lanes), ``CONST`` (32-bit lanes: int32 bias, fp32 scales, LUT entries).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from functools import cached_property

from costmodel.errors import UserError

ISA_VERSION = 1
INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8


class IsaError(UserError, ValueError):
    """A field out of range, an unknown opcode or enum value, a reserved bit set, an illegal token."""


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


REDUCE_OPS = frozenset({VecOp.RADD, VecOp.RMAX, VecOp.RMIN, VecOp.RMAC})
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
    VecOp.QADD: "quantized add (QLinearAdd, the MLAS SSE2 order): "
    "`f = (QADD_OFF + f32(x) * QADD_SA) + f32(y) * QADD_SB` in fp32, "
    "`d = min(max(rint_half_even(f), QMIN), QMAX)`",
    VecOp.LUT: "`d = LUTENTRY(x - LUT_MIN)`: entry `i` is CONST row `src1 + i // C`, lane `i % C` "
    "(int32); src1_mode must be FIXED and src1_buf CONST",
    VecOp.LSUM: "every lane of d = sum over the lanes of x (a row reduction)",
    VecOp.LMAX: "every lane of d = max over the lanes of x (a row reduction)",
    VecOp.RADD: "`d = (0 if init else d) + sum_t x_t` (average / global pooling)",
    VecOp.RMAX: "`d = max(d if not init, max_t x_t)` (max pooling)",
    VecOp.RMIN: "`d = min(d if not init, min_t x_t)`",
    VecOp.RMAC: "`d = (0 if init else d) + sum_t x_t * y_t` (depthwise convolution)",
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
          Reg.OUT_ZP: "EX: REQUANT/REQUANT_DIV output zero point",
          Reg.QMIN: "EX: REQUANT/QADD lower saturation bound",
          Reg.QMAX: "EX: REQUANT/QADD upper saturation bound",
          Reg.CLAMP_LO: "EX: CLAMP lower bound", Reg.CLAMP_HI: "EX: CLAMP upper bound",
          Reg.ROUND: "EX: SHR rounding: 0 half-even, 1 half-up, 2 floor",
          Reg.LUT_MIN: "EX: the input value of LUT entry 0",
          Reg.QADD_SA: "EX fp32: QADD ratio a_scale / c_scale",
          Reg.QADD_SB: "EX fp32: QADD ratio b_scale / c_scale",
          Reg.QADD_OFF: "EX fp32: QADD offset c_zp - (SA * a_zp + SB * b_zp)",
          **{Reg(r): "scalar operand (VEC src1_mode = reg)" for r in range(16, 32)}},
}
"""Meaning of every enum value, for docs/isa.md (VecOp: VEC_OP_DOC)."""

FP32_REGS = frozenset({Reg.QADD_SA, Reg.QADD_SB, Reg.QADD_OFF})
"""Registers whose value is fp32 bits (the assembler reads and prints them as floats)."""

REG_RESET: dict[Reg, int] = {Reg.QMIN: -128, Reg.QMAX: 127, Reg.CLAMP_LO: -(2**31), Reg.CLAMP_HI: 2**31 - 1,
                             Reg.LUT_MIN: -128}
"""Register values after reset; registers not listed reset to 0."""


@dataclass(frozen=True)
class Field:
    """One bit field. The instruction object holds ``value``; the bits hold ``value - bias``."""

    name: str
    width: int
    doc: str
    bias: int = 0
    signed: bool = False
    enum: type[IntEnum] | None = None
    lo: int = -1  # first bit, assigned by _layout

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1

    @cached_property
    def flag(self) -> bool:
        return self.width == 1 and self.enum is None

    @cached_property
    def reserved(self) -> bool:
        return self.name.startswith("_")

    @cached_property
    def min(self) -> int:
        return self.bias - (1 << (self.width - 1) if self.signed else 0)

    @cached_property
    def max(self) -> int:
        return self.min + (1 << self.width) - 1


@dataclass(frozen=True)
class Format:
    """One instruction format: its mnemonic, opcode, engine and field layout."""

    mnemonic: str
    opcode: Opcode
    engine: Engine | None  # None: routed by its ``engine`` field (NOP, SETREG) or to all (BARRIER, FINISH)
    doc: str
    semantics: str
    fields: tuple[Field, ...]

    @property
    def operands(self) -> tuple[Field, ...]:
        """Fields the instruction object carries (not the opcode, not reserved bits)."""
        return tuple(f for f in self.fields if f.name != "opc" and not f.reserved)


def _layout(*fields: Field) -> tuple[Field, ...]:
    """Place fields one after another from bit 0 and pad the rest of the word as reserved."""
    out, lo = [], 0
    for f in fields:
        out.append(replace(f, lo=lo))
        lo += f.width
    assert lo <= INSN_BITS, f"{fields[1].name}...: {lo} bits"
    if lo < INSN_BITS:
        out.append(Field(f"_rsv{lo}", INSN_BITS - lo, "reserved, must be 0", lo=lo))
    return tuple(out)


def _rsv(width: int, at: int) -> Field:
    return Field(f"_rsv{at}", width, "reserved, must be 0")


OPC = Field("opc", 4, "opcode", enum=Opcode)
TOKENS = (
    Field("pop_prev", 1, "wait for a token from the previous engine before starting"),
    Field("pop_next", 1, "wait for a token from the next engine before starting"),
    Field("push_prev", 1, "send a token to the previous engine on completion"),
    Field("push_next", 1, "send a token to the next engine on completion"),
)
TOKEN_NAMES = tuple(f.name for f in TOKENS)

_DMA = (
    Field("buf", 2, "on-chip buffer", enum=Buffer),
    Field("elem", 2, "DRAM element (lane) width", enum=Elem),
    Field("uns", 1, "LOAD: zero-extend (instead of sign-extend) when elem is narrower than the buffer lane"),
    Field("padsel", 1, "LOAD: pad value 0 = zero, 1 = the LD register PADVAL"),
    Field("sram", 16, "first buffer row"),
    Field("y_size", 12, "rows of the 2-D box", bias=1),
    Field("x_size", 12, "vectors per row of the box", bias=1),
    Field("dram_addr", 32, "DRAM byte address of vector (0, 0)"),
    Field("dram_pitch", 24, "DRAM bytes between rows; 0 = every row reads the same DRAM row (broadcast)"),
    Field("x_gap", 6, "DRAM vectors skipped between two vectors of a row (0 = contiguous)"),
    Field("y_pad0", 3, "LOAD: pad rows before the box"),
    Field("y_pad1", 3, "LOAD: pad rows after the box"),
    Field("x_pad0", 3, "LOAD: pad vectors before each row"),
    Field("x_pad1", 3, "LOAD: pad vectors after each row"),
)

_DMA_SEM = """\
A vector is one buffer row: `lanes(buf)` elements (`L`), `vbytes = lanes(buf) * bytes(elem)` in DRAM.
DRAM vector `(y, x)` is at `dram_addr + y*dram_pitch + x*(1 + x_gap)*vbytes`.
"""

FORMATS: dict[Opcode, Format] = {
    f.opcode: f
    for f in (
        Format(
            "nop", Opcode.NOP, None, "no operation; carries tokens only", "Pops, then pushes, on `engine`.",
            _layout(OPC, *TOKENS, Field("engine", 2, "engine whose queue runs it", enum=Engine)),
        ),
        Format(
            "load", Opcode.LOAD, Engine.LD, "2-D strided DMA box DRAM -> buffer, with on-chip padding",
            _DMA_SEM + """\
The box plus padding is written row-major at `sram + yy*X + xx`, `X = x_pad0 + x_size + x_pad1`,
`yy < y_pad0 + y_size + y_pad1`; pad positions get 0 or PADVAL. Elements narrower than the
buffer lane are sign-extended (zero-extended if `uns`); wider elements are an error.
Only pop_next/push_next are legal (LD has no previous engine).""",
            _layout(OPC, *TOKENS, *_DMA),
        ),
        Format(
            "store", Opcode.STORE, Engine.ST, "2-D strided DMA box buffer -> DRAM",
            _DMA_SEM + """\
Buffer row `sram + y*x_size + x` goes to DRAM vector `(y, x)` unchanged: `elem` must equal the
buffer lane width; `uns`, `padsel` and all pads must be 0. Only pop_prev/push_prev are legal.
`x_gap` interleaves: a nearest-neighbour 2x upsample is four STOREs of the same tile with
`x_gap = 1`, `dram_pitch` = two output rows, and the DRAM address offset by the phase.""",
            _layout(OPC, *TOKENS, *_DMA),
        ),
        Format(
            "gemm", Opcode.GEMM, Engine.EX,
            "a whole conv/matmul tile on the R x C weight-stationary array, affine A walk (no im2col)",
            """\
```
for l1 < L1: for l0 < L0:
    t = l1*L0 + l0
    if loadw: W = SPAD[w_base + t*R : +R]   (row k = input channel k, lanes = output channels;
                                              w_t: W[k][j] = SPAD[w_base + t*R + j][k], needs R = C)
    for my < My: for mx < Mx:
        a = a_base + l1*a_s1 + l0*a_s0 + my*a_sy + mx*a_sx
        c = c_base + my*Mx + mx
        init = (acc == 0 and t == 0)
        ACC[c][0:C] = (0 if init else ACC[c]) + sum_{k<R} A(SPAD[a][k]) * W[k][0:C]   (int32, wraps)
```
`A` reads SPAD lanes as int8 (dtype s8) or uint8 (u8); weights are int8. With `loadw = 0` the
tile loaded by the last GEMM with `loadw = 1` is reused. A k x k conv tile: L1 = kh, L0 = kw,
a_sx = stride, a_sy = stride * tile width, a_s0 = dilation, a_s1 = dilation * tile width.""",
            _layout(
                OPC, *TOKENS,
                Field("loadw", 1, "load a weight tile for every tap t (0 = reuse the loaded tile)"),
                Field("w_t", 1, "transpose each weight tile on load (A * B^T, e.g. Q * K^T)"),
                Field("acc", 1, "0 = the first tap overwrites ACC, later taps accumulate; 1 = always accumulate"),
                Field("dtype", 2, "A operand type", enum=GemmType),
                Field("a_base", 16, "SPAD row of the first A vector"),
                Field("w_base", 16, "SPAD row of the first weight tile (tile t at w_base + t*R)"),
                Field("c_base", 16, "ACC row of output (0, 0)"),
                Field("mx", 8, "Mx: output columns (inner M walk)", bias=1),
                Field("my", 8, "My: output rows (outer M walk)", bias=1),
                Field("l0", 5, "L0: inner tap loop count", bias=1),
                Field("l1", 5, "L1: outer tap loop count", bias=1),
                Field("a_sx", 5, "A row step per output column"),
                Field("a_sy", 12, "A row step per output row"),
                Field("a_s0", 12, "A row step per L0 tap"),
                Field("a_s1", 12, "A row step per L1 tap"),
            ),
        ),
        Format(
            "vec", Opcode.VEC, Engine.EX, "lane-parallel vector operation over a 2-D walk with taps",
            """\
```
for my < My: for mx < Mx:
    d = dst + my*Mx + mx
    for l1 < L1: for l0 < L0:                      (maps: L0 = L1 = 1)
        t = l1*L0 + l0
        x = src0_buf[src0 + l1*s1 + l0*s0 + my*sy + mx*sx]
        y = src1 per src1_mode (ROW: src1_buf[src1 + my*Mx + mx], TAP: src1_buf[src1 + t],
            FIXED: src1_buf[src1], REG: EX register src1 in every lane)
        dst_buf[d] = op(x, y, dst_buf[d])          (see the op table)
```
Lanes: SPAD rows are int8 (uint8 if `u8`), ACC rows int32, CONST rows 32-bit (int32, or fp32 bits
where an op says so). Integer arithmetic is exact; the result is converted to the destination lane:
8-bit destinations saturate (to int8, or uint8 if `u8`), 32-bit destinations wrap (two's complement).
`init` starts a reduction from its first tap instead of the old destination value.""",
            _layout(
                OPC, *TOKENS,
                Field("op", 5, "vector operation", enum=VecOp),
                Field("init", 1, "reductions: start from the first tap (ignore the old destination)"),
                Field("src1_mode", 2, "addressing of the second operand", enum=Src1Mode),
                Field("u8", 1, "8-bit lanes are uint8 (reads and destination saturation)"),
                Field("dst_buf", 2, "destination buffer", enum=Buffer),
                Field("src0_buf", 2, "first operand buffer", enum=Buffer),
                Field("src1_buf", 2, "second operand buffer", enum=Buffer),
                Field("dst", 16, "destination row of element (0, 0)"),
                Field("src0", 16, "first operand row of element (0, 0), tap 0"),
                Field("src1", 16, "second operand row (or register number in REG mode)"),
                Field("mx", 8, "Mx: elements per output row", bias=1),
                Field("my", 8, "My: output rows", bias=1),
                Field("l0", 4, "L0: inner tap count", bias=1),
                Field("l1", 4, "L1: outer tap count", bias=1),
                Field("sx", 4, "src0 row step per output column"),
                Field("sy", 12, "src0 row step per output row"),
                Field("s0", 6, "src0 row step per L0 tap"),
                Field("s1", 11, "src0 row step per L1 tap"),
            ),
        ),
        Format(
            "setreg", Opcode.SETREG, None, "write a scalar register of one engine",
            "Runs in order on `engine`'s queue: `engine.reg = value` (32 bits; fp32 registers hold the "
            "bits of a float32).",
            _layout(
                OPC, *TOKENS,
                Field("engine", 2, "engine whose register file is written", enum=Engine),
                Field("reg", 8, "register", enum=Reg),
                _rsv(14, 18),
                Field("value", 32, "value (two's complement int32, or fp32 bits)", signed=True),
            ),
        ),
        Format(
            "barrier", Opcode.BARRIER, None, "wait until every engine is idle",
            "Every engine finishes all earlier instructions before any later instruction starts.",
            _layout(OPC),
        ),
        Format(
            "finish", Opcode.FINISH, None, "end of program",
            "All engines drain; the program ends. Must be the last instruction.",
            _layout(OPC),
        ),
    )
}

BY_MNEMONIC: dict[str, Format] = {f.mnemonic: f for f in FORMATS.values()}

ILLEGAL_TOKENS: dict[Engine, frozenset[str]] = {
    Engine.LD: frozenset({"pop_prev", "push_prev"}),
    Engine.EX: frozenset(),
    Engine.ST: frozenset({"pop_next", "push_next"}),
}
"""Token flags an engine cannot use (it has no neighbour on that side)."""


def _check_table() -> None:
    for fmt in FORMATS.values():
        bits = 0
        for f in fmt.fields:
            mask = ((1 << f.width) - 1) << f.lo
            assert not bits & mask, f"{fmt.mnemonic}.{f.name} overlaps"
            bits |= mask
        assert bits == (1 << INSN_BITS) - 1, f"{fmt.mnemonic} does not tile {INSN_BITS} bits"


_check_table()
