"""compiler.quantize's graph choices before quantization: which ReduceMeans become GlobalAveragePool
(and that the float function is unchanged), and which MatMul constants get uint8 overrides."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler.quantize import _const_lhs_overrides, _spatial_means_as_gap
from tests.compiler import graphs


def _mean(axes, keepdims, shape=(1, 3, 5, 7)):
    m = graphs.model([helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=keepdims)], {"x": list(shape)}, "y",
                     {"axes": np.array(axes, np.int64)})
    m.opset_import[0].version = 18
    return m


@pytest.mark.parametrize(("axes", "keepdims", "rewritten"), [([-1, -2], 1, True), ([2, 3], 1, True),
                                                             ([3, 2], 1, True), ([2, 3], 0, False), ([1], 1, False),
                                                             ([1, 2, 3], 1, False)])
def test_which_reduce_means_become_global_average(axes, keepdims, rewritten):
    m = _mean(axes, keepdims)
    assert _spatial_means_as_gap(m) == int(rewritten)
    assert [n.op_type for n in m.graph.node] == ["GlobalAveragePool" if rewritten else "ReduceMean"]
    assert ("axes" in {i.name for i in m.graph.initializer}) != rewritten  # the unused axes tensor is dropped


def test_rewrite_keeps_the_float_function():
    import onnxruntime as ort

    x = np.random.default_rng(0).standard_normal((1, 3, 5, 7)).astype(np.float32)
    before = _mean([-1, -2], 1)
    after = onnx.ModelProto()
    after.CopyFrom(before)
    _spatial_means_as_gap(after)
    run = lambda m: ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(run(after), run(before), rtol=1e-6, atol=1e-7)  # float sums in different orders
    np.testing.assert_allclose(run(after), x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)


def test_only_constant_left_operands_get_overrides(tmp_path):
    rng = np.random.default_rng(0)
    m = graphs.model([helper.make_node("MatMul", ["x", "w"], ["l"]), helper.make_node("MatMul", ["a", "l"], ["y"])],
                     {"x": [6, 4]}, "y", {"a": rng.standard_normal((5, 6)), "w": rng.standard_normal((4, 3))})
    onnx.save(m, tmp_path / "m.onnx")
    overrides = _const_lhs_overrides(tmp_path / "m.onnx")
    assert list(overrides) == ["a"]  # w is the usual right-hand weight: per-channel int8 as before
    assert overrides["a"][0]["symmetric"] is True


def test_weights_fit_seven_bits(tmp_path):
    """Every int8 weight lies in -64..64: onnxruntime's uint8 x int8 kernels on x86 without VNNI add
    products in int16 pairs (VPMADDUBSW), exact only while 255 * |w| * 2 <= 32767 (compiler.quantize's
    docstring). Checked on the model, so that it holds on a VNNI machine too, where the bit-exact tests
    would not notice 8-bit weights."""
    from onnx import numpy_helper

    from compiler.quantize import quantize_model

    rng = np.random.default_rng(3)
    src = tmp_path / "f.onnx"
    onnx.save(graphs.gemm(rng, 4, 64, 16), src)
    qdq = onnx.load(str(quantize_model(src, tmp_path / "q.onnx", seed=3)))
    weights = [numpy_helper.to_array(i) for i in qdq.graph.initializer if i.data_type == onnx.TensorProto.INT8]
    assert weights
    # the full 7-bit range is used: 255 * 64 * 2 = 32640 fits int16
    assert max(int(np.abs(w.astype(np.int64)).max()) for w in weights) == 64
