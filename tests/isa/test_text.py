"""Assembler/disassembler: exact round trips with the binary, and errors that name the line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.isa import Buffer, Engine, Finish, Gemm, Reg, SetReg, Src1Mode, Vec, VecOp, encode
from compiler.isa.binary import from_bytes, to_bytes
from compiler.isa.program import ConstSegment, Program
from compiler.isa.text import assemble, disassemble, format_instruction, parse_instruction
from costmodel.errors import UserError
from tests.isa.isa_strategies import instructions, programs

HAND = """\
# a depthwise 3x3 tap loop and its requantization, written by hand
.fingerprint 0123456789abcdef
.memmap dram_size=4096 const_base=0
vec op=rmac init=1 src1_mode=tap dst_buf=acc src0_buf=spad src1_buf=spad dst=0 src0=0 src1=900 mx=4 my=4 l0=3 l1=3 sx=1 sy=6 s0=1 s1=6 pop_prev  ; "dw1" "c0"
setreg engine=ex reg=out_zp value=-5
setreg engine=ex reg=qadd_sa value=0.25
vec op=requant src1_mode=fixed dst_buf=spad src0_buf=acc src1_buf=const dst=100 src0=0 src1=3 mx=16 sx=1 sy=0
finish
"""


def test_hand_written_program():
    p = assemble(HAND)
    dw, zp, sa, rq, fin = p.instructions
    assert dw == Vec(op=VecOp.RMAC, init=True, src1_mode=Src1Mode.TAP, dst_buf=Buffer.ACC, src1=900, mx=4, my=4,
                     l0=3, l1=3, sx=1, sy=6, s0=1, s1=6, pop_prev=True)
    assert zp == SetReg(engine=Engine.EX, reg=Reg.OUT_ZP, value=-5)
    assert sa.value == 0x3E800000  # 0.25 = 2**-2: exponent 125 -> 0x3E800000
    assert rq.op == VecOp.REQUANT and rq.src1_buf == Buffer.CONST and rq.my == 1  # omitted -> smallest legal
    assert fin == Finish()
    assert p.debug[0].node == "dw1" and p.debug[0].tile == "c0"
    assert p.fingerprint == "0123456789abcdef"


def test_canonical_text_round_trips_through_the_binary():
    text = disassemble(assemble(HAND))
    data = to_bytes(assemble(text))
    assert disassemble(from_bytes(data)) == text  # text -> binary -> text
    assert to_bytes(assemble(disassemble(from_bytes(data)))) == data  # binary -> text -> binary


@settings(max_examples=300, deadline=None)
@given(instructions())
def test_format_parse_round_trip(insn):
    line = format_instruction(insn)
    assert parse_instruction(line) == insn
    assert encode(parse_instruction(line)) == encode(insn)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_round_trip(p):
    text = disassemble(p)
    q = assemble(text)
    assert q == p
    assert to_bytes(q) == to_bytes(p)
    assert disassemble(from_bytes(to_bytes(q))) == text


def test_fp32_register_special_values():
    for bits in (0x7FC00001, 0x7F800000, -0x80000000, 1):  # NaN payload, +inf, -0.0, smallest subnormal
        insn = SetReg(engine=Engine.EX, reg=Reg.QADD_OFF, value=bits - (1 << 32) if bits >= 1 << 31 else bits)
        assert parse_instruction(format_instruction(insn)) == insn
    for text, bits in (("inf", 0x7F800000), ("-Infinity", 0xFF800000 - (1 << 32))):  # (written as infinities)
        assert parse_instruction(f"setreg engine=ex reg=qadd_off value={text}").value == bits


@pytest.mark.parametrize(("line", "message"), [
    ("frob x=1", "unknown instruction 'frob'"),
    ("gemm mx=300", "field mx=300 out of range"),
    ("gemm nosuch=1", "gemm has no field 'nosuch'"),
    ("gemm mx=1 mx=2", "field 'mx' given twice"),
    ("gemm mx=abc", "'abc' is not an integer"),
    ("vec op=explode", "op='explode', expected one of"),
    ("load pop_prev", "LD has no neighbour"),
    ("gemm mx", "'mx' is not field=value"),
    ('gemm  ; "node"', "debug comment must be two JSON strings"),
    # past float32's range as written (1e400 was Python's inf, and assembled as +inf)
    ("setreg engine=ex reg=qadd_sa value=1e400", "value='1e400' is not a float32 literal"),
    ("setreg engine=ex reg=qadd_sa value=-1e39", "value='-1e39' is not a float32 literal"),
])
def test_errors_name_source_and_line(line, message):
    with pytest.raises(UserError, match=message) as info:
        assemble(f"finish\n{line}\n", "prog.s")
    assert str(info.value).startswith("prog.s:2: ")


def test_directive_errors():
    with pytest.raises(UserError, match="prog.s:1: .isa 7"):
        assemble(".isa 7\n", "prog.s")
    with pytest.raises(UserError, match="unknown directive '.bogus'"):
        assemble(".bogus 1\n", "prog.s")
    with pytest.raises(UserError, match="^prog.s:2: fingerprint 'xyz' must be 16 lowercase hex"):
        assemble("finish\n.fingerprint xyz\n", "prog.s")
    with pytest.raises(UserError, match=r"^prog.s:2: dram_size = -5, expected an integer in \[0, 2\*\*32\]"):
        assemble("finish\n.memmap dram_size=-5 const_base=0\n", "prog.s")  # (the line was missing)
    with pytest.raises(UserError, match=".const needs hex"):
        assemble(".const zz\n", "prog.s")
    for directive in (".isa 1", ".fingerprint 23c3da2618c19b49", ".memmap dram_size=64 const_base=0"):
        with pytest.raises(UserError, match=rf"^prog.s:3: {directive.split()[0]} given twice \(first on line 1\)$"):
            assemble(f"{directive}\nfinish\n{directive}\n", "prog.s")  # (the last one had won silently)


def test_an_io_tensor_outside_the_memory_map_is_refused_at_its_line():
    """It assembled, and the simulator refused it later without the binary's name; a binary read
    from bytes is checked the same way."""
    io = ('{"addr":2000,"direction":"input","dtype":"int8","layout":"NC","name":"x","scale":1.0,'
          '"shape":[1,16],"zero_point":0}')
    text = f".isa 1\n.io {io}\n.memmap dram_size=1024 const_base=0\nfinish\n"
    why = r"io tensor 'x' \[2000, \+16\) lies outside the 1024-byte memory map$"
    with pytest.raises(UserError, match=rf"^prog.s:2: {why}"):
        assemble(text, "prog.s")
    program = assemble(text.replace("dram_size=1024", "dram_size=2016"), "prog.s")
    program.dram_size = 1024
    with pytest.raises(UserError, match=rf"^{why}"):
        from_bytes(to_bytes(program))


def test_free_comments_are_ignored():
    p = assemble("# header\n\n  gemm mx=2   # trailing ; not a debug entry\nfinish\n")
    assert p.instructions == [Gemm(mx=2), Finish()] and p.debug == {}
    assert isinstance(p, Program)


def test_what_the_assembler_accepts_the_reader_accepts():
    with pytest.raises(UserError, match="dram_size = -5"):
        assemble(".memmap dram_size=-5 const_base=0\n")
    with pytest.raises(UserError, match="constants .* exceed dram_size 4"):
        assemble(".memmap dram_size=4 const_base=0\n.const 0011223344\n")
    with pytest.raises(UserError, match=r"^prog.s:2: constant segment 't' \[0, \+9\) lies outside the 1-byte"):
        assemble('finish\n.segment {"kind":"lut","name":"t","offset":0,"size":9}\n.const 00\n', "prog.s")
    ok = assemble('finish\n.memmap dram_size=64 const_base=0\n.segment {"kind":"lut","name":"t","offset":0,"size":1}\n'
                  '.const 00\n', "prog.s")
    ok.const_segments[0] = ConstSegment(name="t", kind="lut", offset=1, size=1)  # (no line: a Program built in code)
    with pytest.raises(UserError, match=r"^constant segment 't' \[1, \+1\) lies outside the 1-byte"):
        ok.validate()


def test_disassemble_without_constants():
    p = assemble(".memmap dram_size=64 const_base=0\n.const 00112233\nfinish\n")
    text = disassemble(p, constants=False)
    assert ".const" not in text.replace("# .const omitted: 4 bytes", "") and "# .const omitted: 4 bytes" in text
    assert assemble(text).instructions == p.instructions


_CANON = disassemble(assemble(HAND))


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200), st.integers(0, len(_CANON)), st.integers(0, 20))
def test_fuzz_assembler_only_raises_user_errors(junk, at, cut):
    for text in (junk, _CANON[:at] + junk + _CANON[at + cut:]):
        try:
            assemble(text)
        except UserError:
            pass


_IO = '{"addr":0,"direction":"input","dtype":"uint8","layout":"NC","name":"x","scale":1.0,"shape":[1,4],"zero_point":0}'


@pytest.mark.parametrize(("line", "message"), [
    # tracebacks before (RecursionError, OverflowError, UnicodeEncodeError when writing the binary)
    (".io " + "[" * 100_000 + "]" * 100_000, r".io needs one JSON object"),
    ('finish ; "n" ' + "[" * 100_000, "debug comment must be two JSON strings"),
    (".io " + _IO.replace('"scale":1.0', '"scale":1' + "0" * 400), r"io tensor 'x': scale 1000.* must be a finite"),
    ('finish ; "\\ud800" "t"', r"debug entry: '\\ud800' holds a lone surrogate"),
    (".io " + _IO.replace('"name":"x"', '"name":"\\udc80"'), r"field 'name': '\\udc80' holds a lone surrogate"),
    # the line was missing from the checks of an io entry's and a segment's values
    (".io " + _IO.replace('"zero_point":0', '"zero_point":300'), r"io tensor 'x': zero_point 300 outside \[0, 255\]"),
    ('.segment {"kind":"blah","name":"a","offset":0,"size":1}', r"constant segment 'a': kind 'blah'"),
])
def test_bad_io_and_debug_text_name_the_line(line, message):
    with pytest.raises(UserError, match=message) as info:
        assemble(f".memmap dram_size=64 const_base=0\n{line}\n", "prog.s")
    assert str(info.value).startswith("prog.s:2: ")


def test_binary_with_an_unconvertible_scale_is_a_user_error():
    """The reader promises UserError whatever the bytes: a scale of 400 digits raised OverflowError."""
    import json
    import zlib

    from compiler.isa.binary import HEADER, SECTION, Section

    data = bytearray(to_bytes(assemble(f".memmap dram_size=64 const_base=0\n.io {_IO}\nfinish\n")))
    pos = HEADER.size
    while True:  # find the IO section and give it a huge integer scale, with a matching CRC
        sid, length, _ = SECTION.unpack_from(data, pos)
        if Section(sid) == Section.IO:
            io = json.loads(data[pos + SECTION.size: pos + SECTION.size + length])
            io[0]["scale"] = 10 ** 400
            payload = json.dumps(io).encode()
            data[pos: pos + SECTION.size + length] = SECTION.pack(sid, len(payload), zlib.crc32(payload)) + payload
            break
        pos += SECTION.size + length
    with pytest.raises(UserError, match=r"io entry 0: io tensor 'x': scale 1000.* must be a finite"):
        from_bytes(bytes(data))
