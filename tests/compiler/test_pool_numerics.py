"""Average pooling with independent input and output quantization (the quantizer makes them equal;
a user's QDQ model need not), with and without count_include_pad, with ceil_mode: 0 LSB vs
onnxruntime, random shapes, scales and zero points.

The model is Q -> DQ -> AveragePool -> Q -> DQ with hypothesis-drawn scales and zero points, so the
float32 steps of VEC RFADD / FDIV / FQUANT (onnxruntime's qlinear_pool.cc) and the global fallback
(kernel = image, no pads: MLAS's integer kernel, RADD + REQUANT) meet arbitrary parameters.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, numpy_helper
from onnx import helper as oh

from compiler.compile import lower_qdq
from compiler.lower.graph import fused_model
from compiler.sim import simulate
from compiler.sim.check import check_outputs
from compiler.target import Target


def _qdq_pool(path: Path, shape, kernel, stride, pads, xs, xz, ys, yz, count_pad=1, ceil=0) -> Path:
    inits = [numpy_helper.from_array(np.float32(xs), "xs"), numpy_helper.from_array(np.uint8(xz), "xz"),
             numpy_helper.from_array(np.float32(ys), "ys"), numpy_helper.from_array(np.uint8(yz), "yz")]
    nodes = [oh.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             oh.make_node("DequantizeLinear", ["q", "xs", "xz"], ["d"]),
             oh.make_node("AveragePool", ["d"], ["a"], kernel_shape=list(kernel), strides=list(stride), pads=list(pads),
                          count_include_pad=count_pad, ceil_mode=ceil),
             oh.make_node("QuantizeLinear", ["a", "ys", "yz"], ["qa"]),
             oh.make_node("DequantizeLinear", ["qa", "ys", "yz"], ["y"])]
    g = oh.make_graph(nodes, "t", [oh.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                      [oh.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)], ir_version=9), path)
    return path


@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 20), h=st.integers(1, 10), w=st.integers(1, 10), kh=st.integers(1, 4), kw=st.integers(1, 4),
       s=st.integers(1, 3), pad=st.booleans(), global_=st.booleans(), xs=st.floats(1e-3, 1.0), ratio=st.floats(0.2, 5.0),
       xz=st.integers(0, 255), yz=st.integers(0, 255), count_pad=st.integers(0, 1), ceil=st.integers(0, 1),
       seed=st.integers(0, 1000))
def test_avgpool_any_quantization_bit_exact(c, h, w, kh, kw, s, pad, global_, xs, ratio, xz, yz, count_pad, ceil,
                                            seed):
    """count_include_pad = 0 with padding or ceil_mode: the divisor is each window's in-image count
    (per-output CONST rows for FDIV); = 1: the kernel size."""
    if global_:  # kernel = image, no padding: onnxruntime's integer fallback
        kh, kw, pads = h, w, (0, 0, 0, 0)
    else:
        kh, kw = min(kh, h), min(kw, w)
        pads = (kh // 2, kw // 2, kh // 2, kw // 2) if pad else (0, 0, 0, 0)
    xs = np.float32(xs)
    with tempfile.TemporaryDirectory() as tmp:
        q = _qdq_pool(Path(tmp) / "q.onnx", (1, c, h, w), (kh, kw), (s, s), pads, xs, xz, np.float32(xs * ratio), yz,
                      count_pad, 0 if global_ else ceil)
        assert "QLinearAveragePool" in {n.op_type for n in fused_model(q).graph.node}
        with warnings.catch_warnings():  # (ceil_mode with count_include_pad: see the test below)
            warnings.simplefilter("ignore", UserWarning)
            program, _ = lower_qdq(q, Target())
        x = {"x": np.random.default_rng(seed).integers(0, 256, (1, c, h, w), dtype=np.uint8)}
        result = simulate(program, x)
        (check,) = check_outputs(program, result.outputs, x, q)
    assert check.max_lsb_ort == 0


def test_ceil_mode_counting_the_padding_warns_where_a_window_overhangs(tmp_path):
    """onnxruntime's int8 kernel divides a last window that overhangs the edge (ceil_mode) by the
    kernel size when count_include_pad = 1, where torch and onnx.reference divide by the count
    inside the padded image, and the binary copies onnxruntime (0 LSB against it, above): the
    compiler says so. 8 wide, kernel 3, stride 2: ceil gives 4 windows, the last covering columns
    6..8 of 0..7 (overhang); 7 wide: 3 windows, none overhangs."""
    import pytest

    for width, overhang in ((8, True), (7, False)):
        q = _qdq_pool(tmp_path / f"w{width}.onnx", (1, 2, width, width), (3, 3), (2, 2), (0, 0, 0, 0),
                      np.float32(0.05), 128, np.float32(0.05), 128, count_pad=1, ceil=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lower_qdq(q, Target())
        said = [str(w.message) for w in caught if "ceil_mode with count_include_pad" in str(w.message)]
        assert len(said) == (1 if overhang else 0), said
    with pytest.warns(UserWarning, match="divides those windows by the kernel size"):
        lower_qdq(tmp_path / "w8.onnx", Target())
