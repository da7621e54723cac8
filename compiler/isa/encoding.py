"""Fixed-width encode/decode, driven only by the field table in :mod:`compiler.isa.spec`.

Both directions check everything the bits alone can tell: field ranges, enum values, reserved
bits (must be 0), and token flags an engine cannot use. Config-dependent checks (buffer bounds,
lane widths) belong to the simulator, which knows the config.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields as dc_fields

from compiler.isa.instructions import CLASSES, Instruction, engine_of
from compiler.isa.spec import FORMATS, ILLEGAL_TOKENS, INSN_BYTES, Field, IsaError, Opcode


def _to_bits(f: Field, value: object, where: str) -> int:
    if f.enum is not None:
        try:
            value = f.enum(value)
        except ValueError:
            names = ", ".join(m.name.lower() for m in f.enum)
            raise IsaError(f"{where}: field {f.name}={value!r} is not one of {names}") from None
    if isinstance(value, bool):
        value = int(value)
    if not isinstance(value, int):
        raise IsaError(f"{where}: field {f.name}={value!r} is not an integer")
    if not f.min <= value <= f.max:
        raise IsaError(f"{where}: field {f.name}={value} out of range [{f.min}, {f.max}] ({f.width} bits)")
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


def _check_tokens(insn: Instruction, where: str) -> None:
    engine = engine_of(insn)
    if engine is None:
        return
    bad = [t for t in ILLEGAL_TOKENS[engine] if getattr(insn, t)]
    if bad:
        raise IsaError(f"{where}: {engine.name} has no neighbour for token flag(s) {', '.join(sorted(bad))}")


def encode(insn: Instruction, index: int | None = None) -> bytes:
    """The 16 little-endian bytes of one instruction; IsaError names the field out of range."""
    where = f"instruction {index} ({type(insn).__name__.lower()})" if index is not None else type(insn).__name__
    fmt = FORMATS.get(getattr(insn, "OPCODE", None))  # type: ignore[arg-type]
    if fmt is None or CLASSES[fmt.opcode] is not type(insn):
        raise IsaError(f"{where}: not an instruction object: {insn!r}")
    _check_tokens(insn, where)
    word = int(fmt.opcode)
    for f in fmt.operands:
        word |= _to_bits(f, getattr(insn, f.name), where) << f.lo
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
    values = {}
    for f in fmt.fields:
        raw = (word >> f.lo) & ((1 << f.width) - 1)
        if f.reserved:
            if raw:
                raise IsaError(f"{where} ({fmt.mnemonic}): reserved bits {f.hi}:{f.lo} are not zero")
        elif f.name != "opc":
            values[f.name] = _from_bits(f, raw, f"{where} ({fmt.mnemonic})")
    insn = CLASSES[fmt.opcode](**values)
    _check_tokens(insn, f"{where} ({fmt.mnemonic})")
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

