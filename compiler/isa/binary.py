"""The ``.axb`` container: header, then length- and CRC32-checked sections (docs/binary-format.md).

``read_binary`` raises only UserError, whatever the bytes: wrong magic, unsupported version,
truncation, a corrupted section (CRC), a malformed table or instruction. ``write_binary`` writes
a temporary file in the target folder and renames it, so a failed write leaves no partial file.
"""

from __future__ import annotations

import json
import struct
import zlib
from enum import IntEnum
from pathlib import Path
from typing import Any

from compiler.isa.encoding import decode_program, encode_program
from compiler.isa.program import ConstSegment, DebugEntry, IOTensor, Program, canonical_json
from compiler.isa.spec import ISA_VERSION
from costmodel.atomic import atomic_write_bytes
from costmodel.errors import UserError

MAGIC = b"\x89AXB"
HEADER = struct.Struct("<4sHH16sII")  # magic, isa version, flags, fingerprint (ascii hex), sections, crc32
SECTION = struct.Struct("<IQI")  # id, payload length, payload crc32

__all__ = ["MAGIC", "Program", "Section", "from_bytes", "read_binary", "to_bytes", "write_binary"]


class Section(IntEnum):
    INSN = 1
    CONST = 2
    CONSTMAP = 3
    IO = 4
    MEMMAP = 5
    DEBUG = 6


def to_bytes(program: Program) -> bytes:
    """The canonical file image of ``program`` (equal programs give equal bytes)."""
    program.validate()
    payloads = {
        Section.INSN: encode_program(program.instructions),
        Section.CONST: bytes(program.constants),
        Section.CONSTMAP: canonical_json([s.to_json() for s in program.const_segments]),
        Section.IO: canonical_json([t.to_json() for t in program.io]),
        Section.MEMMAP: canonical_json({"dram_size": program.dram_size, "const_base": program.const_base}),
        Section.DEBUG: canonical_json([[i, e.node, e.tile] for i, e in sorted(program.debug.items())]),
    }
    head = HEADER.pack(MAGIC, program.isa_version, 0, program.fingerprint.encode(), len(payloads), 0)
    head = head[:-4] + struct.pack("<I", zlib.crc32(head[:-4]))
    body = b"".join(SECTION.pack(sid, len(p), zlib.crc32(p)) + p for sid, p in payloads.items())
    return head + body


def write_binary(program: Program, path: str | Path) -> Path:
    """Write ``program`` to ``path`` atomically (temp file in the same folder, then rename)."""
    path = Path(path)
    return atomic_write_bytes(path, to_bytes(program))


def read_binary(path: str | Path) -> Program:
    """Load and fully validate an ``.axb`` file; any defect raises UserError naming the file."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return from_bytes(data, str(path))


def from_bytes(data: bytes, name: str = "<bytes>") -> Program:
    """Parse a file image; UserError (prefixed with ``name``) on anything malformed."""
    try:
        return _parse(data)
    except UserError as exc:
        raise UserError(f"{name}: {exc}") from None


def _parse(data: bytes) -> Program:
    if len(data) < 4 or data[:4] != MAGIC:
        raise UserError("not an .axb binary (wrong magic bytes)")
    if len(data) < HEADER.size:
        raise UserError(f"truncated: {len(data)} bytes, the header alone is {HEADER.size}")
    _, version, flags, fp_raw, count, crc = HEADER.unpack_from(data)
    if version != ISA_VERSION:
        raise UserError(f"unsupported ISA version {version} (this toolkit reads version {ISA_VERSION})")
    if zlib.crc32(data[: HEADER.size - 4]) != crc:
        raise UserError("corrupted header (CRC32 mismatch)")
    if flags:
        raise UserError(f"unknown header flags 0x{flags:04x}")
    fingerprint = fp_raw.decode("ascii", errors="replace")
    if count != len(Section):  # (0 had read as "N unexpected bytes after the last section")
        raise UserError(f"section_count {count}, expected {len(Section)}")
    payloads: dict[Section, bytes] = {}
    pos = HEADER.size
    for k in range(count):
        if pos + SECTION.size > len(data):
            raise UserError(f"truncated in the header of section {k + 1} of {count}")
        sid, length, crc = SECTION.unpack_from(data, pos)
        pos += SECTION.size
        try:
            section = Section(sid)
        except ValueError:
            raise UserError(f"unknown section id {sid} (section {k + 1})") from None
        if section in payloads:
            raise UserError(f"section {section.name} appears twice")
        if payloads and section < max(payloads):  # (the format's order: equal programs, equal files)
            raise UserError(f"section {section.name} after section {max(payloads).name}: expected the sections "
                            "in id order")
        if pos + length > len(data):
            raise UserError(f"truncated: section {section.name} declares {length} bytes, {len(data) - pos} remain")
        payload = data[pos : pos + length]
        pos += length
        if zlib.crc32(payload) != crc:
            raise UserError(f"corrupted section {section.name} (CRC32 mismatch)")
        payloads[section] = payload
    if pos != len(data):
        raise UserError(f"{len(data) - pos} unexpected bytes after the last section")
    missing = [s.name for s in Section if s not in payloads]
    if missing:
        raise UserError(f"missing section(s) {', '.join(missing)}")
    program = Program(
        instructions=decode_program(payloads[Section.INSN]),
        fingerprint=fingerprint,
        constants=payloads[Section.CONST],
        const_segments=[ConstSegment.from_json(v, f"constant segment {i}")
                        for i, v in enumerate(_list(payloads[Section.CONSTMAP], "CONSTMAP"))],
        io=[IOTensor.from_json(v, f"io entry {i}") for i, v in enumerate(_list(payloads[Section.IO], "IO"))],
        debug=_debug(_list(payloads[Section.DEBUG], "DEBUG")),
        **_memmap(_load_json(payloads[Section.MEMMAP], "MEMMAP")),
    )
    program.validate()
    return program


def _load_json(payload: bytes, section: str) -> Any:
    try:
        return json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise UserError(f"section {section} is not valid UTF-8 JSON") from None


def _list(payload: bytes, section: str) -> list:
    value = _load_json(payload, section)
    if not isinstance(value, list):
        raise UserError(f"section {section}: expected a JSON list")
    return value


def _memmap(value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or set(value) != {"dram_size", "const_base"}:
        raise UserError("section MEMMAP: expected {dram_size, const_base}")
    for key, v in value.items():
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 1 << 32:
            raise UserError(f"section MEMMAP: {key} = {v!r}, expected an integer in [0, 2**32]")
    return value


def _debug(rows: list) -> dict[int, DebugEntry]:
    out: dict[int, DebugEntry] = {}
    for k, row in enumerate(rows):
        ok = (isinstance(row, list) and len(row) == 3 and isinstance(row[0], int) and not isinstance(row[0], bool)
              and isinstance(row[1], str) and isinstance(row[2], str))
        if not ok:
            raise UserError(f"section DEBUG: entry {k} is not [index, node, tile]")
        if row[0] in out:
            raise UserError(f"section DEBUG: instruction {row[0]} has two entries")
        if out and row[0] < max(out):  # (the format's order, as the writer's)
            raise UserError(f"section DEBUG: entry {k} (instruction {row[0]}) after instruction {max(out)}: "
                            "expected the entries sorted by index")
        out[row[0]] = DebugEntry(row[1], row[2])
    return out
