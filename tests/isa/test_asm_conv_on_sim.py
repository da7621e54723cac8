"""Recipes of docs/isa.md (conv, depthwise, nearest resize), written as assembler text, run on the simulator
and equal numpy.

An end-to-end check of the text form: assemble -> .axb -> simulate. The reference below is a plain
numpy convolution (zero-point-corrected, padded with the zero point) followed by the documented
REQUANT formula; it shares no code with the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.isa.binary import read_binary, write_binary
from compiler.isa.text import assemble

sim = pytest.importorskip("compiler.sim")

L, H, W, K = 16, 6, 6, 3  # 16 channels in and out, 6x6 image, 3x3 kernel, stride 1, padding 1


def conv_program(w: np.ndarray, bias: np.ndarray, scale: np.ndarray, x_zp: int, y_zp: int) -> str:
    # DRAM map: x at 0 (6*6*16 = 576 B), y at 1024, constants at 4096: weights 9 taps * 16 rows * 16 B = 2304,
    # then the folded int32 bias (64 B) at 4096+2304 = 6400, then fp32 scales (64 B) at 6464.
    taps = np.stack([w[:, :, kh, kw].T for kh in range(K) for kw in range(K)])  # [t][k=in][j=out]
    folded = bias.astype(np.int64) - x_zp * w.astype(np.int64).sum(axis=(1, 2, 3))  # -x_zp * sum(w) folded in
    const = taps.astype(np.int8).tobytes() + folded.astype("<i4").tobytes() + scale.astype("<f4").tobytes()
    hexlines = "\n".join(f".const {const[i:i + 32].hex()}" for i in range(0, len(const), 32))
    io = ('.io {"addr":0,"direction":"input","dtype":"int8","layout":"NCHWc16","name":"x","scale":0.05,'
          f'"shape":[1,16,6,6],"zero_point":{x_zp}}}\n'
          '.io {"addr":1024,"direction":"output","dtype":"int8","layout":"NCHWc16","name":"y","scale":0.1,'
          f'"shape":[1,16,6,6],"zero_point":{y_zp}}}')
    return f"""\
.memmap dram_size=8192 const_base=4096
{io}
{hexlines}
setreg engine=ld reg=padval value={x_zp}
load buf=spad sram=0 y_size=6 x_size=6 dram_addr=0 dram_pitch=96 padsel=1 y_pad0=1 y_pad1=1 x_pad0=1 x_pad1=1
load buf=spad sram=64 y_size=1 x_size=144 dram_addr=4096
load buf=acc elem=b32 sram=0 y_size=36 x_size=1 dram_addr=6400 dram_pitch=0
load buf=const elem=b32 sram=0 y_size=1 x_size=1 dram_addr=6464 push_next
gemm pop_prev loadw=1 acc=1 a_base=0 w_base=64 c_base=0 mx=6 my=6 l0=3 l1=3 a_sx=1 a_sy=8 a_s0=1 a_s1=8  ; "conv" "all"
setreg engine=ex reg=out_zp value={y_zp}
vec op=requant src1_mode=fixed dst_buf=spad src0_buf=acc src1_buf=const dst=300 src0=0 src1=0 mx=36 sx=1 push_next
store pop_prev buf=spad sram=300 y_size=6 x_size=6 dram_addr=1024 dram_pitch=96
finish
"""


def test_assembled_conv_equals_numpy(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, L, H, W)).astype(np.int8)
    w = rng.integers(-127, 128, (L, L, K, K)).astype(np.int8)
    bias = rng.integers(-5000, 5000, L).astype(np.int32)
    scale = rng.uniform(2e-4, 1e-3, L).astype(np.float32)
    x_zp, y_zp = 3, -7

    path = write_binary(assemble(conv_program(w, bias, scale, x_zp, y_zp), "conv.s"), tmp_path / "conv.axb")
    result = sim.simulate(path, {"x": x})

    xp = np.pad(x[0].astype(np.int64) - x_zp, ((0, 0), (1, 1), (1, 1)))  # padding with x_zp contributes 0
    acc = np.zeros((L, H, W), np.int64)
    for kh in range(K):
        for kw in range(K):
            acc += np.einsum("jk,khw->jhw", w[:, :, kh, kw].astype(np.int64), xp[:, kh:kh + H, kw:kw + W])
    acc += bias[:, None, None]
    f = acc.astype(np.float32) * scale[:, None, None]  # docs/isa.md REQUANT
    expect = np.rint(np.clip(f, np.float32(-128 - y_zp), np.float32(127 - y_zp))) + y_zp
    assert np.array_equal(result.outputs["y"], expect.astype(np.int8)[None])
    assert read_binary(path).debug[5].node == "conv"


def test_nearest_resize_by_interleaved_stores(tmp_path):
    # 1x16x3x4 -> 1x16x6x8: one STORE per phase (py, px) with x_gap=1 and dram_pitch = 2 output rows.
    # Output row pitch 8 vectors * 16 B = 128 B; phase (py, px) starts at 1024 + py*128 + px*16.
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (1, L, 3, 4)).astype(np.int8)
    io = ('.io {"addr":0,"direction":"input","dtype":"int8","layout":"NCHWc16","name":"x","scale":1.0,'
          '"shape":[1,16,3,4],"zero_point":0}\n'
          '.io {"addr":1024,"direction":"output","dtype":"int8","layout":"NCHWc16","name":"y","scale":1.0,'
          '"shape":[1,16,6,8],"zero_point":0}')
    stores = "\n".join(
        f"store buf=spad sram=0 y_size=3 x_size=4 dram_addr={1024 + py * 128 + px * 16} dram_pitch=256 x_gap=1"
        + (" pop_prev" if py == px == 0 else "") for py in (0, 1) for px in (0, 1))
    text = (f".memmap dram_size=2048 const_base=0\n{io}\n"
            "load buf=spad sram=0 y_size=3 x_size=4 dram_addr=0 dram_pitch=64 push_next\n"
            "nop engine=ex pop_prev push_next\n"
            f"{stores}\nfinish\n")
    out = sim.simulate(write_binary(assemble(text), tmp_path / "resize.axb"), {"x": x}).outputs["y"]
    assert np.array_equal(out, x.repeat(2, axis=2).repeat(2, axis=3))


def test_depthwise_stride2_on_the_vector_unit(tmp_path):
    # 16 channels in lanes, 7x7 -> 4x4 (3x3, stride 2, pad 1: (7 + 2 - 3)//2 + 1 = 4), padded tile 9x9 in SPAD 0..80,
    # tap weights as SPAD rows 100..108 (row t = kh*3+kw, lane c), bias (zp folded) preloaded into ACC 0..15.
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (1, L, 7, 7)).astype(np.int8)
    w = rng.integers(-127, 128, (L, 3, 3)).astype(np.int8)
    bias = rng.integers(-300, 300, L).astype(np.int32)
    scale = rng.uniform(5e-3, 2e-2, L).astype(np.float32)
    x_zp, y_zp = -4, 5
    folded = bias.astype(np.int64) - x_zp * w.astype(np.int64).sum(axis=(1, 2))
    const = (w.reshape(L, 9).T.copy().tobytes() + folded.astype("<i4").tobytes()
             + scale.astype("<f4").tobytes())  # taps at 4096 (144 B), bias at 4240, scales at 4304
    hexlines = "\n".join(f".const {const[i:i + 32].hex()}" for i in range(0, len(const), 32))
    io = ('.io {"addr":0,"direction":"input","dtype":"int8","layout":"NCHWc16","name":"x","scale":0.05,'
          f'"shape":[1,16,7,7],"zero_point":{x_zp}}}\n'
          '.io {"addr":1024,"direction":"output","dtype":"int8","layout":"NCHWc16","name":"y","scale":0.1,'
          f'"shape":[1,16,4,4],"zero_point":{y_zp}}}')
    text = f"""\
.memmap dram_size=8192 const_base=4096
{io}
{hexlines}
setreg engine=ld reg=padval value={x_zp}
load buf=spad sram=0 y_size=7 x_size=7 dram_addr=0 dram_pitch=112 padsel=1 y_pad0=1 y_pad1=1 x_pad0=1 x_pad1=1
load buf=spad sram=100 y_size=1 x_size=9 dram_addr=4096
load buf=acc elem=b32 sram=0 y_size=16 x_size=1 dram_addr=4240 dram_pitch=0
load buf=const elem=b32 sram=0 y_size=1 x_size=1 dram_addr=4304 push_next
vec op=rmac src1_mode=tap dst_buf=acc src0_buf=spad src1_buf=spad dst=0 src0=0 src1=100 mx=4 my=4 l0=3 l1=3 sx=2 sy=18 s0=1 s1=9 pop_prev
setreg engine=ex reg=out_zp value={y_zp}
vec op=requant src1_mode=fixed dst_buf=spad src0_buf=acc src1_buf=const dst=200 src0=0 src1=0 mx=16 sx=1 push_next
store pop_prev buf=spad sram=200 y_size=4 x_size=4 dram_addr=1024 dram_pitch=64
finish
"""
    out = sim.simulate(write_binary(assemble(text), tmp_path / "dw.axb"), {"x": x}).outputs["y"]

    xp = np.pad(x[0].astype(np.int64) - x_zp, ((0, 0), (1, 1), (1, 1)))
    acc = np.zeros((L, 4, 4), np.int64) + bias[:, None, None]
    for kh in range(3):
        for kw in range(3):
            acc += w[:, kh, kw, None, None].astype(np.int64) * xp[:, kh:kh + 7:2, kw:kw + 7:2]
    f = acc.astype(np.float32) * scale[:, None, None]
    expect = np.rint(np.clip(f, np.float32(-128 - y_zp), np.float32(127 - y_zp))) + y_zp
    assert np.array_equal(out, expect.astype(np.int8)[None])
