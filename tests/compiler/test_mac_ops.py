"""Conv (dense, strided, padded, 3-channel first layer, depthwise), Gemm and MatMul: 0 LSB vs onnxruntime."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler.target import Target
from tests.compiler import graphs

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(cin=st.integers(1, 40), cout=st.integers(1, 36), k=st.sampled_from([1, 3, 5]), stride=st.integers(1, 2),
       h=st.integers(5, 14), w=st.integers(5, 14), relu=st.booleans(), seed=st.integers(0, 1000), data=st.data())
def test_conv_bit_exact(cin, cout, k, stride, h, w, relu, seed, data):
    pad = data.draw(st.integers(0, k // 2))
    rng = np.random.default_rng(seed)
    m = graphs.conv(rng, cin, cout, (k, k), (stride, stride), (pad,) * 4, (h, w), relu=relu)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, _ = graphs.lsb_vs_ort(m, Path(tmp), seed)
    assert lsb == 0


def test_first_layer_rows_tiled():
    """3 input channels, 3x3 stride 2 pad 1 on 64x60 with a small SPAD: several row tiles, halo rows."""
    small = Target(spad_bytes=16 * 1024, acc_bytes=16 * 1024)
    m = graphs.conv(np.random.default_rng(3), 3, 24, (3, 3), (2, 2), (1, 1, 1, 1), (64, 60), relu=True)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), 3, small)
    tiles = {e.tile for e in program.debug.values() if " rows " in e.tile}
    assert len(tiles) >= 3  # the output (32 rows) does not fit in one tile of this SPAD
    assert lsb == 0


@pytest.mark.parametrize("cin,cout,stride,hw,spad_kib", [
    (20, 24, (2, 2), (13, 11), 256), (16, 40, (3, 2), (14, 9), 256), (33, 16, (2, 3), (15, 16), 256),
    (24, 32, (2, 2), (40, 38), 4),  # a small SPAD: several row tiles of the compact input
])
def test_strided_1x1_loads_only_the_pixels_it_reads(cin, cout, stride, hw, spad_kib):
    """A strided 1x1 conv LOADs every s-th row (pitch) and column (x_gap = s - 1), walks them at stride
    1, and stays 0 LSB; odd sizes leave the last row and column of the input unread."""
    from compiler.isa import Load

    m = graphs.conv(np.random.default_rng(cin), cin, cout, (1, 1), stride, (0, 0, 0, 0), hw)
    target = Target(spad_bytes=spad_kib * 1024, acc_bytes=16 * 1024)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), cin, target)
    ho, wo = (hw[0] - 1) // stride[0] + 1, (hw[1] - 1) // stride[1] + 1
    boxes = [i for i in program.instructions if isinstance(i, Load) and i.padsel]
    read = [b.dram_addr + y * b.dram_pitch + x * (1 + b.x_gap) * 16 for b in boxes
            for y in range(b.y_size) for x in range(b.x_size)]
    base, plane = min(read), hw[0] * hw[1] * 16
    want = [base + i * plane + (r * stride[0] * hw[1] + c * stride[1]) * 16
            for i in range(-(-cin // 16)) for r in range(ho) for c in range(wo)]
    assert sorted(read) == want  # every pixel the conv reads, once, and nothing else
    tiles = {e.tile for e in program.debug.values() if " rows " in e.tile}
    assert (len(tiles) > 1) == (spad_kib < 16)  # row tiles only where the SPAD is small
    assert lsb == 0


def test_unpadded_rows_of_every_input_block_load_as_one_box():
    """1x1 conv, 40 channels (3 input blocks) in row tiles: each tile's rows are contiguous in every
    block's plane, so one LOAD (rows = blocks, a plane apart) brings them all; 0 LSB."""
    from compiler.isa import Load

    m = graphs.conv(np.random.default_rng(5), 40, 24, (1, 1), (1, 1), (0, 0, 0, 0), (30, 20))
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), 5, Target(spad_bytes=8 * 1024, acc_bytes=16 * 1024))
    boxes = [i for i in program.instructions if isinstance(i, Load) and i.padsel]
    tiles = {e.tile for e in program.debug.values() if " rows " in e.tile}
    assert len(tiles) > 1 and len(boxes) == len(tiles)
    assert all(b.y_size == 3 and b.dram_pitch == 30 * 20 * 16 for b in boxes)
    assert sum(b.x_size for b in boxes) == 30 * 20  # every pixel of the three planes once
    assert lsb == 0


@SETTINGS
@given(c=st.integers(2, 40), k=st.sampled_from([3, 5]), stride=st.integers(1, 2), h=st.integers(5, 16),
       w=st.integers(5, 16), seed=st.integers(0, 1000))
def test_depthwise_bit_exact(c, k, stride, h, w, seed):
    m = graphs.conv(np.random.default_rng(seed), c, c, (k, k), (stride, stride), (k // 2,) * 4, (h, w), group=c,
                    relu=True)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), seed)
    assert lsb == 0
    assert not any(type(i).__name__ == "Gemm" for i in program.instructions)  # on the vector unit


@SETTINGS
@given(m=st.integers(1, 6), k=st.integers(1, 70), n=st.integers(1, 40), matmul=st.booleans(),
       seed=st.integers(0, 1000))
def test_gemm_matmul_bit_exact(m, k, n, matmul, seed):
    mod = graphs.gemm(np.random.default_rng(seed), m, k, n, matmul=matmul)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, _ = graphs.lsb_vs_ort(mod, Path(tmp), seed)
    assert lsb == 0


def test_weight_groups_when_weights_exceed_the_scratchpad():
    """40 -> 70 channels, 3x3: 5 output blocks x 432 weight rows = 2160 rows > the 2048-row SPAD, so the
    weights go in groups (ping-pong copies); the FC's 70 x 600 weights (38 blocks x 5) likewise."""
    small = Target(spad_bytes=32 * 1024, acc_bytes=16 * 1024)
    m = graphs.conv(np.random.default_rng(4), 40, 70, (3, 3), (1, 1), (1, 1, 1, 1), (9, 7), relu=True)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), 4, small)
    groups = {e.tile.split(" rows")[0] for e in program.debug.values() if e.tile.startswith("cout")}
    assert len(groups) >= 2
    assert lsb == 0
    fc = graphs.gemm(np.random.default_rng(5), 2, 70, 600)
    tinier = Target(spad_bytes=8 * 1024)  # 512 rows: 38 output blocks x 80 weight rows need groups
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(fc, Path(tmp), 5, tinier)
    assert len({e.tile for e in program.debug.values() if e.tile.startswith("M ")}) >= 2
    assert lsb == 0


@pytest.mark.parametrize("auto_pad,k,stride,hw", [
    ("SAME_UPPER", 3, 2, (9, 10)), ("SAME_LOWER", 3, 2, (9, 10)),  # odd total padding: the extra row at the end / start
    ("SAME_UPPER", 5, 1, (7, 6)), ("VALID", 3, 1, (8, 8)),
])
def test_conv_with_auto_pad_bit_exact(auto_pad, k, stride, hw):
    """auto_pad (TF-converted models) resolves to explicit pads as ONNX defines them; it was refused."""
    rng = np.random.default_rng(k)
    m = graphs.conv(rng, 3, 20, (k, k), (stride, stride), (0, 0, 0, 0), hw)
    conv_node = m.graph.node[0]
    del conv_node.attribute[[a.name for a in conv_node.attribute].index("pads")]
    conv_node.attribute.append(helper.make_attribute("auto_pad", auto_pad))
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), k)
    out = {t.name: t.shape for t in program.io if t.direction == "output"}
    size = [-(-n // stride) if auto_pad != "VALID" else n - k + 1 for n in hw]
    assert [1, 20, *size] in [list(s) for s in out.values()]
    assert lsb == 0


@pytest.mark.parametrize("depthwise", [False, True])
def test_padding_wider_than_the_kernel_reaches(depthwise):
    """A 1x1 conv with padding 1: its first and last output rows see only padding, and a tile of them
    alone has no input row to LOAD (refused before: 16 of 149 fuzzed models). Such tile heights are
    not chosen. 9 x 40 input, 11 x 42 output; per output row the tile needs 2 x 42 input and 2 x 42
    output SPAD rows (x 16 B), so 900 SPAD rows take at most 5 rows a tile: 5, 5, 1 would leave the
    last row alone, and 4, 4, 3 is taken instead."""
    small = Target(spad_bytes=900 * 16, acc_bytes=64 * 1024)
    c = 16
    m = graphs.conv(np.random.default_rng(5), c, c, (1, 1), (1, 1), (1, 1, 1, 1), (9, 40), group=c if depthwise else 1)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(m, Path(tmp), 5, small)
    tiles = {e.tile for e in program.debug.values() if " rows " in e.tile}
    assert sorted(t.split(" rows ")[1] for t in tiles) == ["0-3", "4-7", "8-10"]
    assert lsb == 0
