"""Assembler and disassembler: a readable text form that round-trips with the binary exactly.

One instruction per line, ``mnemonic field=value ...`` with every field printed (token flags only
when set), enums by name, then an optional debug comment ``; "node" "tile"`` (two JSON strings).
``#`` starts a free comment. Directives carry the rest of the container::

    .isa 1
    .fingerprint 0123456789abcdef
    .memmap dram_size=1048576 const_base=65536
    .io {"addr":0,"direction":"input",...}          (one JSON object per tensor)
    .segment {"kind":"bias","name":"conv1.b",...}   (one per constants segment)
    .const 00ff...                                  (constant bytes, hex, 32 per line)

``disassemble`` prints the canonical form; ``assemble(disassemble(p))`` rebuilds ``p`` exactly.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from compiler.isa.encoding import encode, operand_values
from compiler.isa.instructions import CLASSES, Instruction, SetReg
from compiler.isa.program import (
    ConstSegment,
    DebugEntry,
    IOTensor,
    Program,
    fingerprint_problem,
    memmap_problem,
)
from compiler.isa.spec import BY_MNEMONIC, FORMATS, FP32_REGS, ISA_VERSION, TOKEN_NAMES, Field
from costmodel.errors import UserError, placed

CONST_BYTES_PER_LINE = 32
_HEX_FIELDS = frozenset({"dram_addr"})


def _ascii_json(value: object) -> str:
    """JSON with non-ASCII escaped, so no character in a name can act as a line break."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _fmt_value(f: Field, value: object, insn: Instruction) -> str:
    if f.enum is not None:
        return f.enum(value).name.lower()
    if f.flag:
        return str(int(bool(value)))
    if isinstance(insn, SetReg) and f.name == "value" and insn.reg in FP32_REGS:
        x = insn.as_f32
        return str(np.float32(x)) if math.isfinite(x) else f"0x{value & 0xFFFFFFFF:08x}"
    if f.name in _HEX_FIELDS:
        return f"0x{value:x}"
    return str(value)


def format_instruction(insn: Instruction, debug: DebugEntry | None = None) -> str:
    """One canonical assembler line."""
    fmt = FORMATS[insn.OPCODE]
    spec = {f.name: f for f in fmt.operands}
    parts = [fmt.mnemonic]
    tokens = []
    for name, value in operand_values(insn).items():
        if name in TOKEN_NAMES:
            if value:
                tokens.append(name)
        else:
            parts.append(f"{name}={_fmt_value(spec[name], value, insn)}")
    line = " ".join(parts + tokens)
    if debug is not None:
        line += f"  ; {json.dumps(debug.node)} {json.dumps(debug.tile)}"
    return line


def disassemble(program: Program, *, constants: bool = True) -> str:
    """The whole program as canonical assembler text (directives, constants, instructions).

    ``constants=False`` replaces the ``.const`` lines by one comment (for reading a large model; the
    text then no longer rebuilds the binary)."""
    lines = [f"# accel-dse assembler, ISA v{program.isa_version}, {len(program.instructions)} instructions",
             f".isa {program.isa_version}", f".fingerprint {program.fingerprint}",
             f".memmap dram_size={program.dram_size} const_base={program.const_base}"]
    lines += [f".io {_ascii_json(t.to_json())}" for t in program.io]
    lines += [f".segment {_ascii_json(s.to_json())}" for s in program.const_segments]
    data = bytes(program.constants)
    if constants:
        lines += [f".const {data[i : i + CONST_BYTES_PER_LINE].hex()}" for i in range(0, len(data), CONST_BYTES_PER_LINE)]
    elif data:
        lines.append(f"# .const omitted: {len(data)} bytes")
    lines += [format_instruction(insn, program.debug.get(i)) for i, insn in enumerate(program.instructions)]
    return "\n".join(lines) + "\n"


def _parse_int(text: str, where: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise UserError(f"{where}: {text!r} is not an integer") from None


def _parse_value(f: Field, text: str, mnemonic: str, reg: object, where: str) -> object:
    if f.enum is not None:
        try:
            return f.enum[text.upper()]
        except KeyError:
            names = ", ".join(m.name.lower() for m in f.enum)
            raise UserError(f"{where}: {f.name}={text!r}, expected one of {names}") from None
    if mnemonic == "setreg" and f.name == "value" and reg in FP32_REGS and not text.lower().startswith("0x"):
        try:
            x = float(text)
            if math.isinf(x) and text.lower().lstrip("+-") not in ("inf", "infinity"):
                raise OverflowError  # (1e400 is inf to Python, but a number past float32's range as written)
            (bits,) = struct.unpack("<i", struct.pack("<f", x))
        except (ValueError, OverflowError):
            raise UserError(f"{where}: value={text!r} is not a float32 literal") from None
        return bits
    if f.name == "value" and text.lower().startswith("0x"):
        raw = _parse_int(text, where)  # raw 32-bit pattern -> signed int32
        return raw - (1 << 32) if 1 << 31 <= raw < 1 << 32 else raw
    return _parse_int(text, where)


def parse_instruction(line: str, where: str = "line") -> Instruction:
    """One instruction line (no comment); UserError names the line and field."""
    words = line.split()
    fmt = BY_MNEMONIC.get(words[0].lower())
    if fmt is None:
        raise UserError(f"{where}: unknown instruction {words[0]!r}; expected one of {sorted(BY_MNEMONIC)}")
    spec = {f.name: f for f in fmt.operands}
    pairs: dict[str, str] = {}
    for w in words[1:]:
        name, eq, value = w.partition("=")
        if not eq:
            if name not in TOKEN_NAMES:
                raise UserError(f"{where}: {w!r} is not field=value")
            value = "1"
        if name not in spec:
            raise UserError(f"{where}: {fmt.mnemonic} has no field {name!r}; fields: {', '.join(spec)}")
        if name in pairs:
            raise UserError(f"{where}: field {name!r} given twice")
        pairs[name] = value
    reg_text = pairs.get("reg")
    reg = _parse_value(spec["reg"], reg_text, fmt.mnemonic, None, where) if reg_text is not None else None
    values = {n: _parse_value(spec[n], v, fmt.mnemonic, reg, where) for n, v in pairs.items()}
    values = {n: bool(v) if spec[n].flag and v in (0, 1) else v for n, v in values.items()}
    insn = CLASSES[fmt.opcode](**values)
    encode(insn)  # range checks now, with the line in the message
    return insn


def _split_comment(line: str, where: str) -> tuple[str, DebugEntry | None]:
    hash_at, semi_at = line.find("#"), line.find(";")
    if semi_at < 0 or 0 <= hash_at < semi_at:
        return line.split("#", 1)[0].strip(), None
    code, rest = line[:semi_at].strip(), line[semi_at + 1 :]
    dec = json.JSONDecoder()
    try:
        rest = rest.strip()
        node, end = dec.raw_decode(rest)
        tile, end2 = dec.raw_decode(rest[end:].lstrip())
        trailing = rest[end:].lstrip()[end2:].strip()
    except (ValueError, RecursionError):
        raise UserError(f'{where}: debug comment must be two JSON strings: ; "node" "tile"') from None
    if not (isinstance(node, str) and isinstance(tile, str)) or trailing:
        raise UserError(f'{where}: debug comment must be two JSON strings: ; "node" "tile"')
    try:
        return code, DebugEntry(node, tile)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None


_ONCE = (".isa", ".fingerprint", ".memmap")
"""Directives that set one header field each."""


def assemble(text: str, source: str = "<text>", lines: list[int] | None = None) -> Program:
    """Parse assembler text into a Program (validated); UserError names ``source`` and the line.
    ``lines`` gets each instruction's line number (for later messages about an instruction)."""
    program = Program(instructions=[])
    const = bytearray()
    segment_lines: list[int] = []  # the line of each .segment, for a message about it
    io_lines: list[int] = []  # and of each .io
    first: dict[str, int] = {}  # the line of each directive of _ONCE
    for lineno, raw in enumerate(text.split("\n"), 1):
        raw = raw.removesuffix("\r")
        where = f"{source}:{lineno}"
        if raw.lstrip().startswith("."):
            name = raw.split(maxsplit=1)[0]
            if name in _ONCE:  # (the last one had silently won: a fingerprint check then read another)
                if name in first:
                    raise UserError(f"{where}: {name} given twice (first on line {first[name]})")
                first[name] = lineno
            _directive(raw.split("#", 1)[0].strip() if not raw.lstrip().startswith((".io", ".segment"))
                       else raw.strip(), program, const, where)
            segment_lines += [lineno] * (len(program.const_segments) - len(segment_lines))
            io_lines += [lineno] * (len(program.io) - len(io_lines))
            continue
        code, debug = _split_comment(raw, where)
        if not code:
            if debug is not None:
                raise UserError(f"{where}: debug comment without an instruction")
            continue
        if debug is not None:
            program.debug[len(program.instructions)] = debug
        try:
            program.instructions.append(parse_instruction(code, where))
            if lines is not None:
                lines.append(lineno)
        except UserError as exc:
            raise placed(exc, where) from None
    program.constants = bytes(const)
    for seg, lineno in zip(program.const_segments, segment_lines, strict=True):
        if why := seg.outside(len(const)):  # (named by its line: .const lines may follow it)
            raise UserError(f"{source}:{lineno}: {why}")
    for io, lineno in zip(program.io, io_lines, strict=True):
        if why := io.outside(program.dram_size):  # (.memmap may follow it)
            raise UserError(f"{source}:{lineno}: {why}")
    try:
        program.validate()
    except UserError as exc:
        raise UserError(f"{source}: {exc}") from None
    return program


def _directive(line: str, program: Program, const: bytearray, where: str) -> None:
    name, _, arg = line.partition(" ")
    arg = arg.strip()
    if name == ".isa":
        if _parse_int(arg, where) != ISA_VERSION:
            raise UserError(f"{where}: .isa {arg}, this assembler emits ISA version {ISA_VERSION}")
    elif name == ".fingerprint":
        if why := fingerprint_problem(arg):
            raise UserError(f"{where}: {why}")
        program.fingerprint = arg
    elif name == ".memmap":
        for item in arg.split():
            key, eq, value = item.partition("=")
            if key not in ("dram_size", "const_base") or not eq:
                raise UserError(f"{where}: .memmap takes dram_size=N const_base=N, got {item!r}")
            number = _parse_int(value, where)
            if why := memmap_problem(key, number):
                raise UserError(f"{where}: {why}")
            setattr(program, key, number)
    elif name in (".io", ".segment"):
        try:
            value = json.loads(arg)
        except (ValueError, RecursionError):
            raise UserError(f"{where}: {name} needs one JSON object") from None
        if name == ".io":
            program.io.append(IOTensor.from_json(value, where))
        else:
            program.const_segments.append(ConstSegment.from_json(value, where))
    elif name == ".const":
        try:
            const.extend(bytes.fromhex(arg))
        except ValueError:
            raise UserError(f"{where}: .const needs hex bytes") from None
    else:
        raise UserError(f"{where}: unknown directive {name!r}; expected .isa .fingerprint .memmap .io .segment .const")
