"""Decoded instructions: one frozen dataclass per format of :mod:`compiler.isa.spec`.

Field names and order equal the spec table's operand fields (checked at import), and values are
the real quantities (``mx=14`` means 14 columns, even though the bits hold 13). Every argument is
keyword-only; omitted fields take their smallest legal value (0, or 1 for counts).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import ClassVar

from compiler.isa.spec import (
    FORMATS,
    Buffer,
    Elem,
    Engine,
    GemmType,
    Opcode,
    Reg,
    Src1Mode,
    VecOp,
)


@dataclass(frozen=True, kw_only=True)
class Tokens:
    """Dependency-token flags shared by every engine-queued instruction."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False


@dataclass(frozen=True, kw_only=True)
class Nop(Tokens):
    OPCODE: ClassVar[Opcode] = Opcode.NOP
    engine: Engine = Engine.LD


@dataclass(frozen=True, kw_only=True)
class _Dma(Tokens):
    buf: Buffer = Buffer.SPAD
    elem: Elem = Elem.B8
    uns: bool = False
    padsel: bool = False
    sram: int = 0
    y_size: int = 1
    x_size: int = 1
    dram_addr: int = 0
    dram_pitch: int = 0
    x_gap: int = 0
    y_pad0: int = 0
    y_pad1: int = 0
    x_pad0: int = 0
    x_pad1: int = 0


@dataclass(frozen=True, kw_only=True)
class Load(_Dma):
    OPCODE: ClassVar[Opcode] = Opcode.LOAD


@dataclass(frozen=True, kw_only=True)
class Store(_Dma):
    OPCODE: ClassVar[Opcode] = Opcode.STORE


@dataclass(frozen=True, kw_only=True)
class Gemm(Tokens):
    OPCODE: ClassVar[Opcode] = Opcode.GEMM
    loadw: bool = False
    w_t: bool = False
    acc: bool = False
    dtype: GemmType = GemmType.S8
    a_base: int = 0
    w_base: int = 0
    c_base: int = 0
    mx: int = 1
    my: int = 1
    l0: int = 1
    l1: int = 1
    a_sx: int = 0
    a_sy: int = 0
    a_s0: int = 0
    a_s1: int = 0


@dataclass(frozen=True, kw_only=True)
class Vec(Tokens):
    OPCODE: ClassVar[Opcode] = Opcode.VEC
    op: VecOp = VecOp.MOV
    init: bool = False
    src1_mode: Src1Mode = Src1Mode.ROW
    u8: bool = False
    dst_buf: Buffer = Buffer.SPAD
    src0_buf: Buffer = Buffer.SPAD
    src1_buf: Buffer = Buffer.SPAD
    dst: int = 0
    src0: int = 0
    src1: int = 0
    mx: int = 1
    my: int = 1
    l0: int = 1
    l1: int = 1
    sx: int = 0
    sy: int = 0
    s0: int = 0
    s1: int = 0


@dataclass(frozen=True, kw_only=True)
class SetReg(Tokens):
    OPCODE: ClassVar[Opcode] = Opcode.SETREG
    engine: Engine = Engine.EX
    reg: Reg = Reg.S0
    value: int = 0

    @classmethod
    def f32(cls, engine: Engine, reg: Reg, value: float, **tokens: bool) -> SetReg:
        """A register write of a float32 (its bits, as a signed int32)."""
        (bits,) = struct.unpack("<i", struct.pack("<f", value))
        return cls(engine=engine, reg=reg, value=bits, **tokens)

    @property
    def as_f32(self) -> float:
        return struct.unpack("<f", struct.pack("<i", self.value))[0]


@dataclass(frozen=True, kw_only=True)
class Barrier:
    OPCODE: ClassVar[Opcode] = Opcode.BARRIER


@dataclass(frozen=True, kw_only=True)
class Finish:
    OPCODE: ClassVar[Opcode] = Opcode.FINISH


Instruction = Nop | Load | Store | Gemm | Vec | SetReg | Barrier | Finish

CLASSES: dict[Opcode, type] = {c.OPCODE: c for c in (Nop, Load, Store, Gemm, Vec, SetReg, Barrier, Finish)}


def engine_of(insn: Instruction) -> Engine | None:
    """The engine whose queue runs ``insn``; None for BARRIER/FINISH (seen by all engines)."""
    fixed = FORMATS[insn.OPCODE].engine
    return fixed if fixed is not None else getattr(insn, "engine", None)


def _check_classes() -> None:
    for opc, cls in CLASSES.items():
        names = [f.name for f in fields(cls)]
        spec = [f.name for f in FORMATS[opc].operands]
        assert sorted(names) == sorted(spec), f"{cls.__name__}: {names} != spec {spec}"


_check_classes()
