"""Residual add, max pool (0 LSB vs onnxruntime) and average pooling (0 LSB vs the exact mean, <= 1 vs ORT).

onnxruntime's QLinearAveragePool (contrib_ops/cpu/quantization/qlinear_pool.cc) sums the dequantized
values in float32 and rounds ``sum / n / y_scale + zp``; with equal input and output scales (what the
quantizer gives AveragePool) the exact mean is a tie for one window sum in n, and ORT's float
rounding error sends such ties either way. The ONNX specification's result (onnx.reference: float
AveragePool, then QuantizeLinear's round half to even) is the correctly rounded mean, which the
compiler computes exactly in integers; the test compares with that exact rational mean.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import numpy_helper

from compiler.lower.graph import fused_model
from tests.compiler import graphs

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(c=st.integers(1, 40), h=st.integers(1, 12), w=st.integers(1, 12), seed=st.integers(0, 1000))
def test_add_bit_exact(c, h, w, seed):
    with tempfile.TemporaryDirectory() as tmp:
        lsb, _ = graphs.lsb_vs_ort(graphs.add((1, c, h, w)), Path(tmp), seed)
    assert lsb == 0


@SETTINGS
@given(c=st.integers(1, 40), k=st.integers(2, 3), stride=st.integers(1, 2), pad=st.integers(0, 1),
       h=st.integers(4, 14), w=st.integers(4, 14), seed=st.integers(0, 1000))
def test_maxpool_bit_exact(c, k, stride, pad, h, w, seed):
    with tempfile.TemporaryDirectory() as tmp:
        lsb, _ = graphs.lsb_vs_ort(graphs.pool("MaxPool", c, (k, k), (stride, stride), (pad,) * 4, (h, w), seed),
                                   Path(tmp), seed)
    assert lsb == 0


def _scale_zp(qdq: Path, prefix: str) -> tuple[float, int]:
    """Scale and zero point of the QDQ model's QuantizeLinear whose input name starts with ``prefix``."""
    m = onnx.load(str(qdq))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0].startswith(prefix))
    return float(inits[q.input[1]]), int(inits[q.input[2]])


def _exact_mean(x: np.ndarray, zp: int, k: tuple[int, int], s: tuple[int, int]) -> np.ndarray:
    """Round-half-even of sum(x - zp) / n in integers, per window (no padding), + zp."""
    _, c, h, w = x.shape
    ho, wo = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
    total = np.zeros((c, ho, wo), np.int64)
    for r in range(k[0]):
        for q in range(k[1]):
            total += x[0, :, r: r + s[0] * ho: s[0], q: q + s[1] * wo: s[1]].astype(np.int64) - zp
    n = k[0] * k[1]
    quo, rem = np.divmod(total, n)
    up = (2 * rem > n) | ((2 * rem == n) & (quo % 2 == 1))
    return (quo + up + zp)[None]


def _conv_output(program, result, inputs, qdq) -> np.ndarray:
    """The simulated uint8 input of the pool (the 1x1 conv's output, exposed by the test lowering)."""
    name = next(t.name for t in program.io if t.direction == "output" and t.name.startswith("p"))
    return result.outputs[name]


@SETTINGS
@given(c=st.integers(1, 24), kh=st.integers(2, 4), kw=st.integers(2, 3), h=st.integers(4, 14),
       w=st.integers(4, 14), seed=st.integers(0, 1000))
def test_avgpool_exact_mean_and_within_one_lsb_of_ort(c, kh, kw, h, w, seed):
    m = graphs.pool("AveragePool", c, (kh, kw), (kh, kw), (0, 0, 0, 0), (h, w), seed)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, result, inputs, qdq) = graphs.lsb_vs_ort(m, Path(tmp), seed)
        xs, xzp = _scale_zp(qdq, "p")
        ys, yzp = _scale_zp(qdq, "y")  # the pool's output quantizer (input named y...)
    assert (xs, xzp) == (ys, yzp)  # the quantizer shares the input's parameters with the pool's output
    exact = _exact_mean(_conv_output(program, result, inputs, qdq), xzp, (kh, kw), (kh, kw))
    np.testing.assert_array_equal(result.outputs["y"].astype(np.int64), np.clip(exact, 0, 255))
    assert lsb <= 1


def test_global_average_within_one_lsb_of_ort():
    m = graphs.pool("GlobalAveragePool", 20, None, None, None, (7, 9))
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, result, inputs, qdq) = graphs.lsb_vs_ort(m, Path(tmp), 5)
        assert "QLinearGlobalAveragePool" in {n.op_type for n in fused_model(qdq).graph.node}
        xs, xzp = _scale_zp(qdq, "p")
        ys, yzp = _scale_zp(qdq, "y")  # the pool's output quantizer (input named y...)
    if (xs, xzp) == (ys, yzp):
        exact = _exact_mean(_conv_output(program, result, inputs, qdq), xzp, (7, 9), (7, 9))
        np.testing.assert_array_equal(result.outputs["y"].astype(np.int64), np.clip(exact, 0, 255))
    assert lsb <= 1


@SETTINGS
@given(c=st.integers(1, 40), h=st.integers(1, 12), w=st.integers(1, 12), alpha=st.sampled_from([0.01, 0.1, 0.2]),
       seed=st.integers(0, 1000))
def test_leaky_relu_lut_bit_exact(c, h, w, alpha, seed):
    from onnx import helper

    wt = np.random.default_rng(seed).standard_normal((c, c, 1, 1)).astype(np.float32)
    m = graphs.model([helper.make_node("Conv", ["x", "w"], ["p"], kernel_shape=[1, 1]),
                      helper.make_node("LeakyRelu", ["p"], ["y"], alpha=alpha)], {"x": [1, c, h, w]}, "y", {"w": wt})
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, _, _, qdq) = graphs.lsb_vs_ort(m, Path(tmp), seed)
        assert "QLinearLeakyRelu" in {n.op_type for n in fused_model(qdq).graph.node}
    assert lsb == 0


@SETTINGS
@given(c=st.integers(1, 20), h=st.integers(3, 11), w=st.integers(3, 11), op=st.sampled_from(["MaxPool", "AveragePool"]),
       seed=st.integers(0, 1000))
def test_ceil_mode_partial_windows(c, h, w, op, seed):
    """2x2 stride 2 with ceil_mode: odd sizes get a partial last window (max: 0 LSB vs ORT; average with
    count_include_pad divides by 4 as onnxruntime does, <= 1 LSB)."""
    attrs = {"ceil_mode": 1, **({"count_include_pad": 1} if op == "AveragePool" else {})}
    m = graphs.pool(op, c, (2, 2), (2, 2), (0, 0, 0, 0), (h, w), seed, **attrs)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, result, *_) = graphs.lsb_vs_ort(m, Path(tmp), seed)
    assert result.outputs["y"].shape == (1, c, -(-h // 2), -(-w // 2))
    assert lsb <= (0 if op == "MaxPool" else 1)


def test_dequantize_quantize_pair_is_a_lut(tmp_path):
    """DequantizeLinear -> QuantizeLinear to other parameters, on a tensor with a second consumer (as in
    depth_estimation, where onnxruntime keeps the pair in float): lowered as one LUT, 0 LSB."""
    from onnx import TensorProto
    from onnx import helper as h

    from compiler.compile import lower_qdq
    from compiler.sim import simulate
    from compiler.sim.check import check_outputs
    from compiler.target import Target

    nodes = [h.make_node("QuantizeLinear", ["x", "s0", "z0"], ["q0"]),
             h.make_node("DequantizeLinear", ["q0", "s0", "z0"], ["y0"]),
             h.make_node("DequantizeLinear", ["q0", "s0", "z0"], ["d0"]),
             h.make_node("QuantizeLinear", ["d0", "s1", "z1"], ["q1"]),
             h.make_node("DequantizeLinear", ["q1", "s1", "z1"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, t), n) for n, v, t in
             (("s0", 0.05, np.float32), ("z0", 120, np.uint8), ("s1", 0.031, np.float32), ("z1", 7, np.uint8))]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 4, 3])],
                     [h.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y0", "y")], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8), tmp_path / "m.onnx")
    program, layers = lower_qdq(tmp_path / "m.onnx", Target())
    assert [lay["op"] for lay in layers] == ["QuantizeLinear"]  # the requantizing LUT
    x = {"x": (np.arange(60, dtype=np.uint8) * 4).reshape(1, 5, 4, 3)}
    result = simulate(program, x)
    assert [c.max_lsb_ort for c in check_outputs(program, result.outputs, x, tmp_path / "m.onnx")] == [0, 0]
