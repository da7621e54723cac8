"""The documented QADD and REQUANT formulas (docs/isa.md), with compiler.isa.numerics.qadd_params, equal
onnxruntime (QLinearAdd, QLinearMatMul) bit for bit on random int8/uint8 data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.isa.numerics import qadd_params
from tests.isa.qadd_reference import qadd_as_documented

ort = pytest.importorskip("onnxruntime")


def _qlinear_add(a, b, sa, za, sb, zb, sc, zc, unsigned):
    from onnx import TensorProto, helper

    t = TensorProto.UINT8 if unsigned else TensorProto.INT8
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("sa", sa), ("sb", sb), ("sc", sc))]
    inits += [helper.make_tensor(n, t, [], [v]) for n, v in (("za", za), ("zb", zb), ("zc", zc))]
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"],
                            domain="com.microsoft")
    graph = helper.make_graph([node], "qadd", [helper.make_tensor_value_info("a", t, a.shape),
                                               helper.make_tensor_value_info("b", t, b.shape)],
                              [helper.make_tensor_value_info("c", t, a.shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.microsoft", 1)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"a": a, "b": b})[0]




@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300), st.booleans(), st.integers(0, 2**32 - 1),
       st.lists(st.floats(1e-3, 0.2), min_size=3, max_size=3))
def test_qadd_matches_onnxruntime(n, unsigned, seed, scales):
    rng = np.random.default_rng(seed)
    lo, hi, dt = (0, 255, np.uint8) if unsigned else (-128, 127, np.int8)
    a = rng.integers(lo, hi + 1, n).astype(dt)
    b = rng.integers(lo, hi + 1, n).astype(dt)
    zps = [int(z) for z in rng.integers(lo + 20, hi - 20, 3)]
    sa_, sb_, sc_ = (float(np.float32(s)) for s in scales)
    got = _qlinear_add(a, b, sa_, zps[0], sb_, zps[1], sc_, zps[2], unsigned)
    sa, sb, off = qadd_params(sa_, zps[0], sb_, zps[1], sc_, zps[2])
    assert (qadd_as_documented(a, b, sa, sb, off, lo, hi).astype(dt) == got).all()


def _qlinear_matmul(a, b, sa, za, sb, sy, zy):
    from onnx import TensorProto, helper, numpy_helper

    i8, f = TensorProto.INT8, TensorProto.FLOAT
    inits = [helper.make_tensor("sa", f, [], [sa]), helper.make_tensor("za", i8, [], [za]),
             numpy_helper.from_array(b, "b"), helper.make_tensor("sb", f, [], [sb]),
             helper.make_tensor("zb", i8, [], [0]), helper.make_tensor("sy", f, [], [sy]),
             helper.make_tensor("zy", i8, [], [zy])]
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])
    graph = helper.make_graph([node], "qmm", [helper.make_tensor_value_info("a", i8, a.shape)],
                              [helper.make_tensor_value_info("y", i8, (a.shape[0], b.shape[1]))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"a": a})[0]


def requant_as_documented(acc, scale, zp, qmin=-128, qmax=127):
    """docs/isa.md REQUANT: f = f32(x) * scale; clamp to [QMIN - OUT_ZP, QMAX - OUT_ZP]; rint; + OUT_ZP."""
    f = acc.astype(np.float32) * scale
    return np.rint(np.clip(f, np.float32(qmin - zp), np.float32(qmax - zp))) + zp


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 9), st.integers(1, 70), st.integers(1, 20), st.integers(0, 2**32 - 1),
       st.lists(st.floats(1e-3, 0.1), min_size=3, max_size=3))
def test_requant_with_requant_scale_matches_qlinearmatmul(m, k, n, seed, scales):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-127, 128, (k, n)).astype(np.int8)
    za, zy = (int(z) for z in rng.integers(-30, 30, 2))
    sa, sb, sy = (float(np.float32(s)) for s in scales)
    got = _qlinear_matmul(a, b, sa, za, sb, sy, zy)
    acc = (a.astype(np.int64) - za) @ b.astype(np.int64)  # exact int32 accumulation, zero point folded
    scale = (np.float32(sa) * np.float32(sb)) / np.float32(sy)  # ORT's fused scale, float32 in this order
    expect = requant_as_documented(acc, scale, zy).astype(np.int8)
    assert (expect == got).all()
