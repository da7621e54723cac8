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

from compiler.isa.enums import (  # re-exported: spec is the one place to import the ISA's names from
    ENUM_DOC,
    FP32_REGS,
    REDUCE_OPS,
    REG_RESET,
    VEC_OP_DOC,
    Buffer,
    Elem,
    Engine,
    GemmType,
    Opcode,
    Reg,
    Src1Mode,
    VecOp,
)
from costmodel.errors import UserError

__all__ = [
    "BY_MNEMONIC", "ENUM_DOC", "FORMATS", "FP32_REGS", "ILLEGAL_TOKENS", "INSN_BITS", "INSN_BYTES", "ISA_VERSION",
    "REDUCE_OPS", "REG_RESET", "TOKENS", "TOKEN_NAMES", "VEC_OP_DOC", "Buffer", "Elem", "Engine", "Field", "Format",
    "GemmType", "IsaError", "Opcode", "Reg", "Src1Mode", "VecOp",
]

ISA_VERSION = 1
INSN_BITS = 128
INSN_BYTES = INSN_BITS // 8


class IsaError(UserError, ValueError):
    """A field out of range, an unknown opcode or enum value, a reserved bit set, an illegal token."""


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
