"""Target (the compilable template) and the DRAM layouts of I/O tensors."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from compiler.isa import Buffer, VecOp
from compiler.isa.layout import nbytes, pack, unpack
from compiler.isa.program import IOTensor
from compiler.target import Target
from costmodel.errors import UserError


def fake_arch(**compilable):
    lv = SimpleNamespace
    levels = (lv(name="DRAM", kind="dram", holds=("I", "W", "O"), capacity_words=None, word_bits=8, read_bw=8.0,
                 instances=1),
              lv(name="GlobalBuffer", kind="sram", holds=("I", "W"), capacity_words=256 * 1024, word_bits=8,
                 read_bw=None, instances=1),
              lv(name="Accumulator", kind="sram", holds=("O",), capacity_words=16 * 1024, word_bits=32,
                 read_bw=None, instances=1))
    return SimpleNamespace(name="tpu_like", source="hwconfigs/tpu_like.yaml", clock_hz=1e9, levels=levels,
                           systolic=SimpleNamespace(dataflow="WS", rows=16, cols=16),
                           compilable=compilable or None, fingerprint=lambda: "abcdef0123456789")


def test_defaults_are_the_tpu_like_template():
    t = Target()
    # 256 KiB / 16 B per row = 16384 SPAD rows; 64 KiB / (16 lanes * 4 B) = 1024 ACC rows
    assert (t.spad_rows, t.acc_rows, t.const_rows) == (16384, 1024, 256)
    assert t.row_bytes(Buffer.ACC) == 64 and t.lane_bytes(Buffer.SPAD) == 1


def test_from_arch_derives_sizes_from_levels():
    t = Target.from_arch(fake_arch(lanes=16, const_kib=8, vector_ops=["mov", "requant"]))
    assert (t.rows, t.cols, t.lanes) == (16, 16, 16)
    assert t.spad_bytes == 256 * 1024 and t.acc_bytes == 16 * 1024 * 4 and t.const_bytes == 8 * 1024
    assert t.dma_bytes_per_cycle == 8  # DRAM read_bw 8 words/cycle * 8 bits / 8
    assert t.vector_ops == {VecOp.MOV, VecOp.REQUANT}
    assert t.fingerprint == "abcdef0123456789"


@pytest.mark.parametrize(("block", "message"), [
    ({}, "no `compilable:` block"),
    ({"lanes": 16, "bogus": 1}, r"unknown key\(s\) \['bogus'\]"),
    ({"lanes": 8}, "rows == cols == lanes"),
    ({"lanes": 16, "spad_level": "Nope"}, "spad_level = 'Nope': no such level"),
    ({"lanes": 16, "vector_ops": ["fly"]}, "unknown op 'fly'"),
    ({"lanes": 16, "isa_version": 3}, "isa_version = 3"),
    ({"lanes": 16, "token_depth": -1}, "token_depth = -1"),
    ({"lanes": 16, "gemm_timing": "fast"}, "gemm_timing"),
])
def test_from_arch_errors(block, message):
    with pytest.raises(UserError, match=message) as info:
        Target.from_arch(fake_arch(**block))
    assert "tpu_like.yaml" in str(info.value) or "target" in str(info.value)


def test_shipped_tpu_like_config():
    from costmodel.arch import load_architecture

    arch = load_architecture("tpu_like")
    assert arch.compilable is not None
    t = Target.from_arch(arch)
    assert (t.rows, t.cols) == (16, 16) and t.spad_bytes == 256 * 1024 and t.acc_bytes == 64 * 1024
    assert t.fingerprint == arch.fingerprint()


def test_blocked_layout_positions_by_hand():
    t = IOTensor("x", "input", "int8", (1, 20, 3, 2), "NCHWc16", 0, 0.5, -1)
    a = np.arange(120, dtype=np.int64).reshape(1, 20, 3, 2) - 60
    data = pack(a.astype(np.int8), t)
    assert len(data) == nbytes(t) == 1 * 2 * 3 * 2 * 16  # C=20 -> 2 blocks of 16 lanes
    sb = np.frombuffer(data, np.int8)
    # byte of (n=0, c=19, h=2, w=1): block 1, lane 3 -> ((1*3 + 2)*2 + 1)*16 + 3 = 179
    assert sb[179] == a[0, 19, 2, 1]
    # channel 20..31 are padding: the zero point -1
    assert sb[((1 * 3 + 0) * 2 + 0) * 16 + 4] == -1
    assert (unpack(data, t) == a).all()


def test_plain_layout_and_bad_inputs():
    t = IOTensor("y", "output", "int32", (2, 3), "NC", 0)
    a = np.arange(6).reshape(2, 3) - 3
    assert pack(a, t) == a.astype("<i4").tobytes()
    assert (unpack(pack(a, t), t) == a).all()
    with pytest.raises(UserError, match="shape"):
        pack(np.zeros((3, 2), np.int32), t)
    with pytest.raises(UserError, match="quantize first"):
        pack(np.zeros((1, 20, 3, 2), np.float32), IOTensor("x", "input", "int8", (1, 20, 3, 2), "NCHW", 0))
    with pytest.raises(UserError, match="outside the int8 range"):
        pack(np.full((2, 3), 200), IOTensor("x", "input", "int8", (2, 3), "NC", 0))
    with pytest.raises(UserError, match="zero_point 200 outside"):
        IOTensor("x", "input", "int8", (2, 3), "NC", 0, 1.0, 200)
    with pytest.raises(UserError, match="does not fit the 32-bit"):
        IOTensor("x", "input", "int32", (1 << 20, 1 << 20), "NC", 0)
    with pytest.raises(UserError, match="layout 'NCH'"):
        IOTensor("x", "input", "int8", (2, 3), "NCH", 0)


@pytest.mark.parametrize(("key", "value"), [
    ("token_depth", 0), ("const_kib", 0), ("dma_bytes_per_cycle", 0), ("dram_bytes", 2**32 + 1),
    ("dma_setup_cycles", 2**62),  # (overflowed the simulator's int64 cycle times: a traceback)
    ("lanes", 16.0),
])
def test_from_arch_integer_ranges_name_the_key(key, value):
    """Out of range, these were reported under the Target's own names (const_bytes for const_kib), without
    the file, or not at all (dma_setup_cycles)."""
    block = {"lanes": 16, key: value}
    with pytest.raises(UserError, match=rf"^hwconfigs/tpu_like.yaml.*compilable.{key} = {value!r}, expected an "
                                        rf"integer from \d+ to [\d,]+$"):
        Target.from_arch(fake_arch(**block))


def test_lanes_other_than_the_array_name_the_line():
    with pytest.raises(UserError, match=r"^hwconfigs/tpu_like.yaml.*compilable.lanes = 8: ISA v1 needs a square "
                                        r"array with rows == cols == lanes, and systolic is 16x16"):
        Target.from_arch(fake_arch(lanes=8))
