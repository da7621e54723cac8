"""The .axb container: byte-exact round trips, every documented failure, and fuzzing the reader."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.isa import Finish, Gemm, Load, Store
from compiler.isa.binary import HEADER, MAGIC, SECTION, from_bytes, read_binary, to_bytes, write_binary
from compiler.isa.program import ConstSegment, DebugEntry, IOTensor, Program
from costmodel.errors import UserError
from tests.isa.isa_strategies import programs


def small_program() -> Program:
    return Program(
        instructions=[Load(y_size=4, x_size=2, dram_addr=64, dram_pitch=32, push_next=True),
                      Gemm(pop_prev=True, loadw=True, mx=2, my=4, push_next=True),
                      Store(pop_prev=True, buf=1, elem=2, y_size=8, dram_addr=1024, dram_pitch=64), Finish()],
        fingerprint="00112233aabbccdd", constants=bytes(range(48)), const_base=4096,
        const_segments=[ConstSegment("conv.w", "weights", 0, 32), ConstSegment("conv.b", "bias", 32, 16)],
        io=[IOTensor("x", "input", "int8", (1, 16, 4, 2), "NCHWc16", 0, 0.02, -3),
            IOTensor("y", "output", "int32", (1, 16, 4, 2), "NCHWc16", 1024, 1.0, 0)],
        dram_size=8192, debug={1: DebugEntry("/conv/Conv", "k0 y0:4 x0:2")})


def sections(data: bytes) -> list[tuple[int, int, int]]:
    """(id, payload offset, payload length) of every section, parsed independently of the reader."""
    out, pos = [], HEADER.size
    while pos < len(data):
        sid, length, _ = SECTION.unpack_from(data, pos)
        out.append((sid, pos + SECTION.size, length))
        pos += SECTION.size + length
    return out


def test_write_read_round_trip(tmp_path):
    p = small_program()
    path = write_binary(p, tmp_path / "m.axb")
    q = read_binary(path)
    assert q == p
    assert path.read_bytes() == to_bytes(q)
    assert [f.name for f in tmp_path.iterdir()] == ["m.axb"]  # no temp file left behind


def test_header_layout():
    data = to_bytes(small_program())
    assert data[:4] == MAGIC
    assert struct.unpack_from("<H", data, 4)[0] == 1  # ISA version
    assert data[8:24] == b"00112233aabbccdd"
    assert [s[0] for s in sections(data)] == [1, 2, 3, 4, 5, 6]
    insn = sections(data)[0]
    assert insn[2] == 4 * 16  # four 16-byte instructions


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip_byte_exactly(p):
    data = to_bytes(p)
    q = from_bytes(data)
    assert q == p
    assert to_bytes(q) == data


def test_wrong_magic(tmp_path):
    path = tmp_path / "x.axb"
    path.write_bytes(b"\x7fELF" + bytes(100))
    with pytest.raises(UserError, match=r"x\.axb: not an \.axb binary \(wrong magic"):
        read_binary(path)


def test_unsupported_version():
    data = bytearray(to_bytes(small_program()))
    data[4:6] = struct.pack("<H", 2)
    with pytest.raises(UserError, match="unsupported ISA version 2"):
        from_bytes(bytes(data))


def test_every_truncation_is_reported():
    data = to_bytes(small_program())
    for n in range(4, len(data)):
        with pytest.raises(UserError, match="truncated|missing section"):
            from_bytes(data[:n])


def test_corrupted_sections_name_the_section():
    data = to_bytes(small_program())
    names = {1: "INSN", 2: "CONST", 3: "CONSTMAP", 4: "IO", 5: "MEMMAP", 6: "DEBUG"}
    for sid, off, length in sections(data):
        if length == 0:
            continue
        bad = bytearray(data)
        bad[off + length // 2] ^= 0x01
        with pytest.raises(UserError, match=f"corrupted section {names[sid]} \\(CRC32"):
            from_bytes(bytes(bad))
    bad = bytearray(data)
    bad[10] ^= 0x01  # inside the fingerprint
    with pytest.raises(UserError, match="corrupted header"):
        from_bytes(bytes(bad))


def _recrc(data: bytearray) -> bytes:
    """Recompute the header and section CRCs, so a mutation reaches the table and instruction decoders."""
    struct.pack_into("<I", data, HEADER.size - 4, zlib.crc32(bytes(data[: HEADER.size - 4])))
    for _, off, length in sections(bytes(data)):
        struct.pack_into("<I", data, off - 4, zlib.crc32(bytes(data[off : off + length])))
    return bytes(data)


def test_bad_instruction_with_valid_crc_names_the_index():
    data = bytearray(to_bytes(small_program()))
    _, off, _ = sections(bytes(data))[0]
    data[off + 16] = 0x0F  # instruction 1 gets opcode 15
    with pytest.raises(UserError, match="instruction 1: unknown opcode 15"):
        from_bytes(_recrc(data))


def test_trailing_bytes_and_bad_tables():
    data = to_bytes(small_program())
    with pytest.raises(UserError, match="unexpected bytes after the last section"):
        from_bytes(data + b"\0")
    p = small_program()
    p.debug = {7: DebugEntry("n")}
    with pytest.raises(UserError, match="debug map: entry for instruction 7"):
        to_bytes(p)


def test_failed_write_leaves_old_file_untouched(tmp_path):
    path = tmp_path / "m.axb"
    write_binary(small_program(), path)
    before = path.read_bytes()
    bad = small_program()
    bad.instructions.append(Load(y_size=0))
    with pytest.raises(UserError, match="y_size=0 out of range"):
        write_binary(bad, path)
    assert path.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["m.axb"]


def test_unreadable_path(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        read_binary(tmp_path / "missing.axb")
    with pytest.raises(UserError, match="cannot read"):
        read_binary(tmp_path)


VALID = to_bytes(small_program())


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(blob):
    for data in (blob, MAGIC + blob, VALID[: HEADER.size] + blob):
        with pytest.raises(UserError):
            from_bytes(data)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=8),
       st.booleans(), st.integers(0, len(VALID)))
def test_fuzz_mutations_of_a_valid_file(edits, fix_crc, cut):
    data = bytearray(VALID)
    for pos, value in edits:
        data[pos] = value
    data = data[: max(cut, HEADER.size)] if cut < len(VALID) // 2 else data
    if fix_crc:
        try:
            data = bytearray(_recrc(data))
        except struct.error:
            pass
    try:
        from_bytes(bytes(data))
    except UserError:
        pass


def _rebuilt(payloads: list[tuple[int, bytes]], count: int | None = None) -> bytes:
    """A file image of these (id, payload) sections in this order, with valid CRCs (written here,
    not by the writer, which emits only the canonical form)."""
    head = bytearray(VALID[:HEADER.size])
    struct.pack_into("<I", head, HEADER.size - 8, len(payloads) if count is None else count)
    body = b"".join(SECTION.pack(sid, len(p), zlib.crc32(p)) + p for sid, p in payloads)
    return _recrc(bytearray(bytes(head) + body))


def test_what_the_format_requires_of_the_section_table():
    """section_count 6, sections in id order, DEBUG sorted by index (binary-format.md): a file that
    broke the order had run, and disasm-asm then gave another file; a wrong count was reported as
    unexpected bytes or a truncated section header."""
    parts = [(sid, VALID[off:off + length]) for sid, off, length in sections(VALID)]
    assert from_bytes(_rebuilt(parts)) == small_program()  # (the helper itself)
    for count in (0, 7, 2**32 - 1):
        with pytest.raises(UserError, match=f"^<bytes>: section_count {count}, expected 6$"):
            from_bytes(_rebuilt(parts, count))
    with pytest.raises(UserError, match="section INSN after section CONST: expected the sections in id order"):
        from_bytes(_rebuilt([parts[1], parts[0], *parts[2:]]))
    debug = b'[[2,"b",""],[1,"a",""]]'
    with pytest.raises(UserError, match=r"section DEBUG: entry 1 \(instruction 1\) after instruction 2: expected"):
        from_bytes(_rebuilt([*parts[:5], (6, debug)]))
