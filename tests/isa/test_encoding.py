"""Encode/decode: hand-worked bit patterns, range checks naming the field, and random round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.isa import (
    Buffer,
    Engine,
    Finish,
    Gemm,
    IsaError,
    Load,
    Reg,
    SetReg,
    Store,
    Vec,
    VecOp,
    decode,
    decode_program,
    encode,
    encode_program,
)
from compiler.isa.instructions import CLASSES
from compiler.isa.spec import FORMATS, INSN_BITS
from costmodel.errors import UserError
from tests.isa.isa_strategies import instructions


def test_every_format_tiles_128_bits_without_overlap():
    for fmt in FORMATS.values():
        covered = [0] * INSN_BITS
        for f in fmt.fields:
            for b in range(f.lo, f.lo + f.width):
                covered[b] += 1
        assert covered == [1] * INSN_BITS, fmt.mnemonic
        assert fmt.fields[0].name == "opc" and fmt.fields[0].lo == 0 and fmt.fields[0].width == 4


def test_dataclass_fields_match_the_table():
    from dataclasses import fields

    for opc, cls in CLASSES.items():
        assert {f.name for f in fields(cls)} == {f.name for f in FORMATS[opc].operands}


def test_finish_bytes():
    # opcode 7 in bits 3:0, everything else zero
    assert encode(Finish()) == bytes([7]) + bytes(15)


def test_load_bytes_by_hand():
    # opc 1 | push_next (bit 7) = 0x81; sram=3 at bit 14 -> 0xC000; y_size=2 stored as 1 at bit 30 -> 0x4000_0000
    word = 0x81 | (3 << 14) | (1 << 30)
    assert word == 0x4000C081
    assert encode(Load(push_next=True, sram=3, y_size=2)) == word.to_bytes(16, "little")


def test_setreg_negative_value_bytes():
    # opc 5; engine EX=1 at bit 8 -> 0x100; reg OUT_ZP=1 at bit 10 -> 0x400; value -1 -> 0xFFFFFFFF in bits 63:32
    assert encode(SetReg(engine=Engine.EX, reg=Reg.OUT_ZP, value=-1)) == bytes([5, 5, 0, 0]) + b"\xff" * 4 + bytes(8)


def test_gemm_conv_tile_bytes():
    # 3x3 conv tile: pop_prev(4) push_prev(6) loadw(8) acc(10); mx=my=14 -> 13 at bits 61 and 69;
    # l0=l1=3 -> 2 at bits 77 and 82; a_sx=1 at 87; a_sy=16 at 92; a_s0=1 at 104; a_s1=16 at 116
    g = Gemm(pop_prev=True, push_prev=True, loadw=True, acc=True, mx=14, my=14, l0=3, l1=3,
             a_sx=1, a_sy=16, a_s0=1, a_s1=16)
    word = (3 | 1 << 4 | 1 << 6 | 1 << 8 | 1 << 10 | 13 << 61 | 13 << 69 | 2 << 77 | 2 << 82 | 1 << 87 | 16 << 92
            | 1 << 104 | 16 << 116)
    assert encode(g) == word.to_bytes(16, "little")
    assert decode(encode(g)) == g


@pytest.mark.parametrize("opc", list(FORMATS))
def test_out_of_range_names_the_field(opc):
    cls = CLASSES[opc]
    for f in FORMATS[opc].operands:
        if f.enum is not None or f.flag:
            continue
        for bad in (f.max + 1, f.min - 1):
            with pytest.raises(IsaError, match=rf"field {f.name}={bad} out of range"):
                encode(cls(**{f.name: bad}))
    with pytest.raises(ValueError):  # IsaError is also a ValueError
        encode(Vec(mx=0))


def test_bad_enum_and_type():
    with pytest.raises(IsaError, match="field op=99 is not one of"):
        encode(Vec(op=99))
    with pytest.raises(IsaError, match="field sram='7' is not an integer"):
        encode(Load(sram="7"))


def test_numpy_integers_are_accepted():
    import numpy as np

    g = Gemm(mx=np.int64(14), a_sy=np.int32(16), dtype=np.uint8(1))
    assert encode(g) == encode(Gemm(mx=14, a_sy=16, dtype=1))
    with pytest.raises(IsaError, match="is not an integer"):
        encode(Gemm(mx=np.float64(2.0)))


def test_illegal_tokens_rejected_both_ways():
    with pytest.raises(IsaError, match="LD has no neighbour for token flag"):
        encode(Load(pop_prev=True))
    with pytest.raises(IsaError, match="ST has no neighbour"):
        encode(Store(push_next=True))
    raw = bytearray(encode(Store()))
    raw[0] |= 1 << 5  # pop_next on a store
    with pytest.raises(IsaError, match="ST has no neighbour"):
        decode(bytes(raw))


def test_decode_rejects_unknown_opcode_and_reserved_bits():
    with pytest.raises(IsaError, match="unknown opcode 9"):
        decode(bytes([9]) + bytes(15))
    raw = bytearray(encode(Finish()))
    raw[15] = 0x80
    with pytest.raises(IsaError, match="reserved bits 127:4"):
        decode(bytes(raw))
    raw = bytearray(encode(Vec()))
    raw[1] = 31 << 0  # op field (bits 12:8) = 31: no such VecOp
    with pytest.raises(IsaError, match="field op has no meaning for value 31"):
        decode(bytes(raw))
    with pytest.raises(IsaError, match="not a multiple of 16"):
        decode_program(bytes(17))


def test_program_errors_name_the_index():
    with pytest.raises(IsaError, match="instruction 1"):
        encode_program([Finish(), Load(y_size=0)])
    with pytest.raises(IsaError, match="instruction 2"):
        decode_program(encode_program([Finish(), Finish()]) + bytes([15]) + bytes(15))


@settings(max_examples=400, deadline=None)
@given(instructions())
def test_encode_decode_round_trip(insn):
    data = encode(insn)
    assert len(data) == 16
    assert decode(data) == insn


@settings(max_examples=1500, deadline=None)
@given(st.binary(min_size=16, max_size=16))
def test_random_words_decode_or_fail_cleanly_and_the_encoding_is_canonical(data):
    try:
        insn = decode(data)
    except UserError:
        return
    assert encode(insn) == data  # every accepted word has exactly one instruction


def test_vec_defaults_are_the_smallest_legal_values():
    v = Vec()
    assert (v.op, v.mx, v.my, v.l0, v.l1, v.dst_buf) == (VecOp.MOV, 1, 1, 1, 1, Buffer.SPAD)
    assert encode(v) == bytes([4]) + bytes(15)
