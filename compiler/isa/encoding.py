"""Fixed-width encode/decode, driven only by the field table in :mod:`compiler.isa.spec`.

Both directions check everything the bits alone can tell: field ranges, enum values, reserved
bits (must be 0), and token flags an engine cannot use. Config-dependent checks (buffer bounds,
lane widths) belong to the simulator, which knows the config.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import fields as dc_fields

from compiler.isa.instructions import CLASSES, Instruction, engine_of
from compiler.isa.spec import FORMATS, ILLEGAL_TOKENS, INSN_BYTES, Field, IsaError, Opcode


def _to_bits(f: Field, value: object, insn: object, index: int | None) -> int:
    if f.enum is not None and not isinstance(value, f.enum):
        try:
            value = f.enum(value)
        except ValueError:
            names = ", ".join(m.name.lower() for m in f.enum)
            raise IsaError(f"{_where(insn, index)}: field {f.name}={value!r} is not one of {names}") from None
    if not isinstance(value, int):
        try:
            value = operator.index(value)  # numpy integers from the compiler
        except TypeError:
            raise IsaError(f"{_where(insn, index)}: field {f.name}={value!r} is not an integer") from None
    if not f.min <= value <= f.max:
        raise IsaError(f"{_where(insn, index)}: field {f.name}={value} out of range [{f.min}, {f.max}] "
                       f"({f.width} bits)")
    return (value - f.bias) & ((1 << f.width) - 1)


def _from_bits(f: Field, raw: int, where: str) -> object:
    if f.signed and raw >> (f.width - 1):
        raw -= 1 << f.width
    if f.enum is not None:
        try:
            return f.enum(raw)
        except ValueError:
            raise IsaError(f"{where}: field {f.name} has no meaning for value {raw}") from None
    if f.flag:
        return bool(raw)
    return raw + f.bias


def _check_tokens(insn: Instruction, index: int | None, where: str | None = None) -> None:
    engine = engine_of(insn)
    if engine is None:
        return
    bad = [t for t in ILLEGAL_TOKENS[engine] if getattr(insn, t)]
    if bad:
        raise IsaError(f"{where or _where(insn, index)}: {engine.name} has no neighbour for token flag(s) {', '.join(sorted(bad))}")


@dataclass(frozen=True)
class _Plan:
    """A format's fields flattened for the hot loop (encode/decode run per instruction)."""

    names: tuple[str, ...]
    fields: tuple[Field, ...]
    lows: tuple[int, ...]
    masks: tuple[int, ...]
    reserved_mask: int


_PLANS = {
    opc: _Plan(tuple(f.name for f in fmt.operands), fmt.operands, tuple(f.lo for f in fmt.operands),
               tuple((1 << f.width) - 1 for f in fmt.operands),
               sum(((1 << f.width) - 1) << f.lo for f in fmt.fields if f.reserved))
    for opc, fmt in FORMATS.items()
}


def _where(insn: object, index: int | None) -> str:
    name = type(insn).__name__.lower()
    return f"instruction {index} ({name})" if index is not None else name


def encode(insn: Instruction, index: int | None = None) -> bytes:
    """The 16 little-endian bytes of one instruction; IsaError names the field out of range."""
    opc = getattr(insn, "OPCODE", None)
    if opc not in FORMATS or CLASSES[opc] is not type(insn):
        raise IsaError(f"{_where(insn, index)}: not an instruction object: {insn!r}")
    plan = _PLANS[opc]
    word = int(opc)
    for f, lo in zip(plan.fields, plan.lows, strict=True):
        word |= _to_bits(f, getattr(insn, f.name), insn, index) << lo
    _check_tokens(insn, index)
    return word.to_bytes(INSN_BYTES, "little")


def decode(data: bytes, index: int | None = None) -> Instruction:
    """One instruction from 16 bytes; IsaError on an unknown opcode, bad enum, or set reserved bit."""
    where = f"instruction {index}" if index is not None else "instruction"
    if len(data) != INSN_BYTES:
        raise IsaError(f"{where}: {len(data)} bytes, expected {INSN_BYTES}")
    word = int.from_bytes(data, "little")
    opc = word & 0xF
    if opc not in FORMATS:
        raise IsaError(f"{where}: unknown opcode {opc}")
    fmt = FORMATS[Opcode(opc)]
    plan = _PLANS[fmt.opcode]
    if word & plan.reserved_mask:
        bad = next(f for f in fmt.fields if f.reserved and (word >> f.lo) & ((1 << f.width) - 1))
        raise IsaError(f"{where} ({fmt.mnemonic}): reserved bits {bad.hi}:{bad.lo} are not zero")
    values = {f.name: _from_bits(f, (word >> lo) & mask, f"{where} ({fmt.mnemonic})")
              for f, lo, mask in zip(plan.fields, plan.lows, plan.masks, strict=True)}
    insn = CLASSES[fmt.opcode](**values)
    _check_tokens(insn, index, f"{where} ({fmt.mnemonic})")
    return insn


def encode_program(insns: Iterable[Instruction]) -> bytes:
    """Concatenated encodings; errors name the instruction index."""
    return b"".join(encode(insn, i) for i, insn in enumerate(insns))


def decode_program(data: bytes) -> list[Instruction]:
    """Every 16-byte word of ``data`` decoded; errors name the instruction index."""
    if len(data) % INSN_BYTES:
        raise IsaError(f"instruction section: {len(data)} bytes is not a multiple of {INSN_BYTES}")
    return [decode(data[i : i + INSN_BYTES], i // INSN_BYTES) for i in range(0, len(data), INSN_BYTES)]


def operand_values(insn: Instruction) -> dict[str, object]:
    """The instruction's fields as a dict, in spec (bit) order."""
    order = [f.name for f in FORMATS[insn.OPCODE].operands]
    have = {f.name: getattr(insn, f.name) for f in dc_fields(insn)}
    return {name: have[name] for name in order}

