"""Unusual but valid graphs imported right, and invalid ones refused (not costed as something else).

Expected MACs and shapes are worked out by hand and checked against onnxruntime where it runs the model.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from compiler.frontend import import_onnx
from tests.frontend.onnx_builders import FLOAT, save, weight


def test_gemm_whose_data_is_its_second_input(tmp_path):
    """torch's F.linear(q, x) with a parameter q: Gemm(q, x, transB=1), the graph input in slot 1.
    Slot 1 is where old models list weights as inputs, so x was taken for a weight and the layer
    vanished (0 layers, 0 MACs, exit 0)."""
    node = helper.make_node("Gemm", ["q", "x"], ["y"], name="lin", transB=1)
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [3, 7])], [("y", FLOAT, None)], [weight("q", 5, 7)])
    (layer,) = import_onnx(p).layers()
    # y = q @ x^T: M5 (rows of q) x N3 (rows of x) x K7 = 105 MACs; q's 35 values are the parameters
    assert layer.macs == 5 * 3 * 7 and layer.params == 35
    out = ort.InferenceSession(str(p)).run(None, {"x": np.zeros((3, 7), np.float32)})[0]
    assert layer.output_shapes == (out.shape,) == ((5, 3),)


@pytest.mark.parametrize(("equation", "message"), [
    # two ellipses in one term: onnx's shape inference looped forever (C++: deaf to SIGTERM)
    ("...i...,i->...", r"equation '...i...,i->...': expected comma-separated terms"),
    ("ij,jk->ik->x", r"equation 'ij,jk->ik->x'"),
    (None, r"attribute 'equation' is missing"),  # (was a KeyError traceback)
    (3, r"attribute 'equation' must be a string"),  # (was an AttributeError traceback)
])
def test_einsum_equation_outside_the_grammar_is_refused_before_shape_inference(tmp_path, equation, message):
    from costmodel.errors import UserError

    attrs = {} if equation is None else {"equation": equation}
    node = helper.make_node("Einsum", ["a", "b"], ["y"], name="e", **attrs)
    p = save(tmp_path / "m.onnx", [node], [("a", FLOAT, [2, 3]), ("b", FLOAT, [3])], [("y", FLOAT, None)])
    with pytest.raises(UserError, match=rf"^{p}: node 'e' \(Einsum\): {message}"):
        import_onnx(p)


def _external(tmp_path, location: str):
    """A conv whose 4x2x3x3 weight (72 floats) lies in the external file ``location``."""
    import onnx
    from onnx.external_data_helper import convert_model_to_external_data

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c")
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 2, 5, 5])], [("y", FLOAT, None)], [weight("w", 4, 2, 3, 3)])
    model = onnx.load(str(p))
    convert_model_to_external_data(model, location="w.data", size_threshold=0)
    onnx.save(model, str(p))
    if location != "w.data":
        model = onnx.load(str(p), load_external_data=False)
        for e in model.graph.initializer[0].external_data:
            if e.key == "location":
                e.value = location
        onnx.save(model, str(p))
    return p


def test_external_data_that_cannot_be_read_is_a_user_error(tmp_path):
    from costmodel.errors import UserError

    p = _external(tmp_path, "w.data")
    assert import_onnx(p).layer("c").macs == 4 * 2 * 9 * 3 * 3  # K4 C2 R3 S3 P3 Q3
    data = tmp_path / "w.data"
    data.write_bytes(data.read_bytes()[:100])  # an interrupted copy: 100 of 288 bytes (was a ValueError traceback)
    with pytest.raises(UserError, match=rf"^{p}: initializer 'w': cannot read its external data 'w.data': "):
        import_onnx(p)
    (tmp_path / "sub").mkdir()
    p = _external(tmp_path / "sub", "../w.data")  # outside the model's folder: onnx refuses to read it
    with pytest.raises(UserError, match=r"initializer 'w': cannot read its external data '../w.data': .*outside"):
        import_onnx(p)


def test_a_layer_past_the_cost_models_limits_names_the_file_and_node(tmp_path):
    from costmodel.errors import UserError

    n = 2**20  # M = K = N = 2**20: 2**60 MACs, past the 2**48 that keeps exact counts in int64
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    p = save(tmp_path / "m.onnx", [node], [("a", FLOAT, [n, n]), ("b", FLOAT, [n, n])], [("y", FLOAT, None)])
    with pytest.raises(UserError, match=rf"^{p}: node 'mm' \(MatMul\): problem matmul .* MACs exceed 2\*\*48"):
        import_onnx(p)
    # a dimension past 2**31 - 1 is named as such, not as the MAC count it also makes too large
    p = save(tmp_path / "m.onnx", [node], [("a", FLOAT, [2**32, 2]), ("b", FLOAT, [2, 2**20])], [("y", FLOAT, None)])
    with pytest.raises(UserError, match=rf"^{p}: node 'mm' \(MatMul\): problem .* dimension M = 4,294,967,296 exceeds"):
        import_onnx(p)


@pytest.mark.parametrize(("attrs", "message"), [
    ({"auto_pad": "SAME"}, r"auto_pad 'SAME': expected one of NOTSET, SAME_UPPER, SAME_LOWER, VALID"),  # TF's name
    ({"auto_pad": 1}, r"auto_pad 1: expected one of"),
    ({"group": 2.5}, r"group 2.5: expected a positive integer"),  # (read as 2)
])
def test_conv_attributes_onnx_does_not_define_are_refused(tmp_path, attrs, message):
    """Each was costed as something else with exit 0 (no padding, 2 groups); onnxruntime refuses the model."""
    from costmodel.errors import UserError

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 4, 8, 8])], [("y", FLOAT, None)], [weight("w", 6, 4, 3, 3)])
    with pytest.raises(UserError, match=rf"^{p}: node 'c' \(Conv\): {message}"):
        import_onnx(p)


@pytest.mark.parametrize(("attrs", "message"), [
    # 8x8, k3, s1: full output 10; pads of 5 on every side leave 0 (reported as [1, 2, 0, 0], 4,608 MACs)
    ({"pads": [5, 5, 5, 5]}, r"the pads leave an empty output \[0, 0\] \(full output \[10, 10\]\)"),
    # stride 2: full output 2 * 7 + 3 = 17, less than the 20 asked (reported as [1, 2, 20, 20])
    ({"strides": [2, 2], "output_shape": [20, 20]}, r"output_shape \[20, 20\] exceeds .* full output \[17, 17\]"),
])
def test_transposed_conv_output_the_arithmetic_cannot_give_is_refused(tmp_path, attrs, message):
    from costmodel.errors import UserError

    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t", **attrs)
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 4, 8, 8])], [("y", FLOAT, None)], [weight("w", 4, 2, 3, 3)])
    with pytest.raises(UserError, match=rf"^{p}: node 't' \(ConvTranspose\): {message}"):
        import_onnx(p)
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime refuses it too (its own exception types)
        ort.InferenceSession(str(p)).run(None, {"x": np.zeros((1, 4, 8, 8), np.float32)})


@pytest.mark.parametrize("attrs", [{"pads": [1, 0, 2, 1]}, {"strides": [2, 2], "output_shape": [16, 17]},
                                   {"strides": [2, 2], "output_padding": [1, 0]}, {"auto_pad": "SAME_UPPER"}])
def test_transposed_conv_output_shapes_agree_with_onnxruntime(tmp_path, attrs):
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t", **attrs)
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 4, 8, 8])], [("y", FLOAT, None)], [weight("w", 4, 2, 3, 3)])
    (layer,) = import_onnx(p).layers()
    out = ort.InferenceSession(str(p)).run(None, {"x": np.zeros((1, 4, 8, 8), np.float32)})[0]
    assert layer.output_shapes == (out.shape,)
    assert layer.macs == 4 * 2 * 8 * 8 * 3 * 3  # the scatter: every input element times the whole kernel


def test_a_sparse_initializer_is_named_as_unsupported_not_as_corruption(tmp_path):
    import onnx

    from costmodel.errors import UserError

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c")
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 2, 5, 5])], [("y", FLOAT, None)])
    model = onnx.load(str(p))
    values = helper.make_tensor("w", FLOAT, [2], [1.0, 2.0])
    indices = helper.make_tensor("w_idx", onnx.TensorProto.INT64, [2], [0, 7])
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4, 2, 3, 3]))
    onnx.save(model, str(p))
    with pytest.raises(UserError, match=rf"^{p}: node 'c' \(Conv\) reads 'w', a sparse initializer; those are not "
                                        "supported: store it as a dense initializer$"):
        import_onnx(p)


def test_repeated_node_names_do_not_take_a_unique_name(tmp_path):
    """Nodes x, x and x_1: the repeat had been renamed x_1, and the node the file calls x_1 x_1_2,
    so `--layer x_1` picked the wrong node."""
    nodes = [helper.make_node("MatMul", ["a", "w1"], ["b"], name="x"),
             helper.make_node("MatMul", ["b", "w2"], ["c"], name="x"),
             helper.make_node("Softmax", ["c"], ["y"], name="x_1")]
    p = save(tmp_path / "m.onnx", nodes, [("a", FLOAT, [4, 16])], [("y", FLOAT, None)],
             [weight("w1", 16, 16), weight("w2", 16, 8)])
    names = {layer.op_type: layer.name for layer in import_onnx(p).layers() if layer.op_type == "Softmax"}
    assert names == {"Softmax": "x_1"}
    assert len({layer.name for layer in import_onnx(p).layers()}) == 3


def test_a_valid_file_keeps_its_node_order(tmp_path):
    """Already producers-first: m1 -> m2, and an independent conv last. The sort had moved the conv
    ahead of m2 (a queue of ready nodes), and the layers' order with it."""
    nodes = [helper.make_node("MatMul", ["a", "w1"], ["b"], name="m1"),
             helper.make_node("MatMul", ["b", "w2"], ["c"], name="m2"),
             helper.make_node("Conv", ["img", "k"], ["d"], name="cv")]
    p = save(tmp_path / "m.onnx", nodes, [("a", FLOAT, [16, 16]), ("img", FLOAT, [1, 8, 8, 8])],
             [("c", FLOAT, None), ("d", FLOAT, None)], [weight("w1", 16, 16), weight("w2", 16, 16),
                                                       weight("k", 8, 8, 3, 3)])
    assert [layer.name for layer in import_onnx(p).layers()] == ["m1", "m2", "cv"]
    # out of order in the file: producers first, otherwise the file's order
    p = save(tmp_path / "r.onnx", [nodes[1], nodes[2], nodes[0]], [("a", FLOAT, [16, 16]), ("img", FLOAT, [1, 8, 8, 8])],
             [("c", FLOAT, None), ("d", FLOAT, None)], [weight("w1", 16, 16), weight("w2", 16, 16),
                                                       weight("k", 8, 8, 3, 3)])
    assert [layer.name for layer in import_onnx(p).layers()] == ["cv", "m1", "m2"]
