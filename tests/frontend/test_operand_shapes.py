"""Operands whose shapes disagree with the node (onnxruntime refuses each model) are refused with the
node named, not costed from whichever operand a size was read from; names and tensors the file
defines twice, names the importer derives, masks, and the widths of edges into QuantizeLinear."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler.frontend import import_onnx
from compiler.frontend.reading import FOLD_LIMIT
from costmodel.errors import UserError
from tests.frontend.onnx_builders import FLOAT, const, save, weight


def _ort_refuses(path, feeds) -> None:
    """The independent reference: onnxruntime will not load or run the model."""
    with pytest.raises(Exception):  # noqa: B017 (onnxruntime raises several kinds)
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _lstm(path, w, r, b=None, p=None, **attrs):
    names = ["x", "W", "R", "B" if b else "", "", "", "", "P" if p else ""]
    inits = [weight("W", *w), weight("R", *r)] + ([weight("B", *b)] if b else []) + ([weight("P", *p)] if p else [])
    node = helper.make_node("LSTM", names[:8] if p else names[:4], ["y"], name="l", **attrs)
    return save(path, [node], [("x", FLOAT, [7, 2, 3])], [("y", FLOAT, None)], inits, opset=18)


X7 = {"x": np.zeros((7, 2, 3), np.float32)}


@pytest.mark.parametrize(("case", "message"), [
    ({"w": (1, 20, 4), "r": (1, 20, 5), "hidden_size": 5}, "W 'W' has shape [1, 20, 4]; the input and attributes imply [1, 20, 3]"),
    ({"w": (1, 16, 3), "r": (1, 20, 5), "hidden_size": 5}, "W 'W' has shape [1, 16, 3]; the input and attributes imply [1, 20, 3]"),
    ({"w": (1, 20, 3), "r": (1, 20, 6), "hidden_size": 5}, "R 'R' has shape [1, 20, 6]; the input and attributes imply [1, 20, 5]"),
    ({"w": (1, 20, 3), "r": (1, 20, 5), "hidden_size": 5, "direction": "bidirectional"}, "imply [2, 20, 3]"),
    ({"w": (1, 20, 3), "r": (1, 20, 5), "hidden_size": 6}, "imply [1, 24, 3]"),
    ({"w": (1, 20, 3), "r": (1, 20, 5), "b": (1, 30), "hidden_size": 5}, "B 'B' has shape [1, 30]; the input and attributes imply [1, 40]"),
    ({"w": (1, 20, 3), "r": (1, 20, 5), "p": (1, 12), "hidden_size": 5}, "P 'P' has shape [1, 12]; the input and attributes imply [1, 15]"),
    ({"w": (1, 20, 3), "r": (1, 20, 5), "hidden_size": 5, "direction": "sideways"}, "direction 'sideways': expected one of"),
])
def test_lstm_operands_that_disagree_are_refused(tmp_path, case, message):
    path = _lstm(tmp_path / "l.onnx", **case)
    _ort_refuses(path, X7)
    with pytest.raises(UserError, match="node 'l' \\(LSTM\\): ") as err:
        import_onnx(path)
    assert message in str(err.value)


def test_a_valid_bidirectional_lstm_with_bias_and_peepholes_is_costed_from_its_shapes(tmp_path):
    path = _lstm(tmp_path / "l.onnx", (2, 20, 3), (2, 20, 5), (2, 40), (2, 15), hidden_size=5, direction="bidirectional")
    assert ort.InferenceSession(str(path)).run(None, X7)[0].shape == (7, 2, 2, 5)
    layers = {layer.name: layer for layer in import_onnx(path).layers()}
    # x_gates: 7 steps x batch 2 rows, input 3 -> 4 gates x 5 hidden, 2 directions; h_gates: hidden 5 in
    assert layers["l/x_gates"].macs == 2 * (7 * 2) * 3 * 20 and layers["l/h_gates"].macs == 2 * (7 * 2) * 5 * 20
    assert layers["l/x_gates"].bias + layers["l/h_gates"].bias == 2 * 40 and layers["l/cell"].weights == 2 * 15


def _single(tmp_path, op, x_shape, inits, **attrs):
    node = helper.make_node(op, ["x", *(t.name for t in inits)], ["y"], name="n", **attrs)
    return save(tmp_path / "m.onnx", [node], [("x", FLOAT, list(x_shape))], [("y", FLOAT, None)], inits, opset=18)


@pytest.mark.parametrize(("op", "x_shape", "inits", "attrs", "message"), [
    ("Conv", (1, 3, 8, 8), [weight("w", 4, 3, 3, 3), weight("b", 5)], {}, "bias 'b' has shape [5]; the input and attributes imply [4]"),
    ("ConvTranspose", (1, 3, 8, 8), [weight("w", 3, 4, 3, 3), weight("b", 7)], {}, "bias 'b' has shape [7]; the input and attributes imply [4]"),
    ("Gemm", (2, 4), [weight("w", 4, 7), weight("c", 5)], {}, "C 'c' has shape [5]; it must broadcast to the output [2, 7]"),
    ("Gemm", (2, 4), [weight("w", 4, 7), weight("c", 3, 7)], {}, "C 'c' has shape [3, 7]"),
    ("LayerNormalization", (2, 8), [weight("s", 5), weight("b", 8)], {}, "scale 's' has shape [5]; it must broadcast to the normalized shape [8]"),
    ("LayerNormalization", (2, 3, 8), [weight("s", 8), weight("b", 5)], {}, "bias 'b' has shape [5]"),
    ("InstanceNormalization", (1, 4, 5, 5), [weight("s", 3), weight("b", 4)], {}, "scale 's' has shape [3]; expected [4]"),
])
def test_bias_and_scale_operands_that_disagree_are_refused(tmp_path, op, x_shape, inits, attrs, message):
    path = _single(tmp_path, op, x_shape, inits, **attrs)
    _ort_refuses(path, {"x": np.zeros(x_shape, np.float32)})
    with pytest.raises(UserError, match=f"node 'n' \\({op}\\)") as err:
        import_onnx(path)
    assert message in str(err.value)


@pytest.mark.parametrize(("op", "x_shape", "inits", "params"), [
    ("Gemm", (2, 4), [weight("w", 4, 7), weight("c", 1, 7)], 28 + 7),
    ("Gemm", (2, 4), [weight("w", 4, 7), weight("c", 2, 1)], 28 + 2),
    ("Conv", (1, 3, 8, 8), [weight("w", 4, 3, 3, 3), weight("b", 4)], 108 + 4),
    ("LayerNormalization", (2, 3, 8), [weight("s", 8), weight("b", 8)], 16),
])
def test_operands_that_fit_are_counted(tmp_path, op, x_shape, inits, params):
    path = _single(tmp_path, op, x_shape, inits)
    ort.InferenceSession(str(path)).run(None, {"x": np.zeros(x_shape, np.float32)})
    assert import_onnx(path).layers()[0].params == params


@pytest.mark.parametrize(("equation", "a", "b", "ok"), [
    ("ij,jk->ik", (3, 4), (5, 6), False),
    ("bij,bjk->bik", (2, 3, 4), (3, 4, 5), False),
    ("...ij,...jk->...ik", (2, 3, 4), (3, 4, 5), False),
    ("bij,bjk->bik", (1, 3, 4), (2, 4, 5), True),  # a size of 1 broadcasts (onnxruntime agrees)
])
def test_einsum_labels_whose_sizes_disagree_are_refused(tmp_path, equation, a, b, ok):
    node = helper.make_node("Einsum", ["a", "b"], ["y"], name="e", equation=equation)
    path = save(tmp_path / "e.onnx", [node], [("a", FLOAT, list(a)), ("b", FLOAT, list(b))], [("y", FLOAT, None)], opset=18)
    feeds = {"a": np.ones(a, np.float32), "b": np.ones(b, np.float32)}
    if not ok:
        _ort_refuses(path, feeds)
        with pytest.raises(UserError, match="node 'e' \\(Einsum\\): .* is \\d+ in one place and \\d+ in another"):
            import_onnx(path)
        return
    out = ort.InferenceSession(str(path)).run(None, feeds)[0]
    assert import_onnx(path).layers()[0].macs == out.size * a[-1]  # each output element sums over j


def test_a_tensor_written_by_two_nodes_is_refused(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r"), helper.make_node("Sigmoid", ["x"], ["y"], name="s")]
    path = save(tmp_path / "d.onnx", nodes, [("x", FLOAT, [2, 3])], [("y", FLOAT, [2, 3])])
    _ort_refuses(path, {"x": np.zeros((2, 3), np.float32)})
    with pytest.raises(UserError, match="node 's' \\(Sigmoid\\) writes tensor 'y', which node 'r' defines too"):
        import_onnx(path)


@pytest.mark.parametrize("other", ["l/cell", "l/x_gates", "l/x_gates:out"])
def test_names_the_importer_derives_never_merge_with_the_files_own(tmp_path, other):
    """An LSTM `l` becomes l/x_gates, l/h_gates, l/cell; a node (or tensor) of the file named so had
    merged with one in the graph: a cycle (traceback) or a layer lost."""
    lstm = helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="l", hidden_size=5)
    mm = helper.make_node("MatMul", ["x2", "M"], [other if other.endswith(":out") else "z"],
                          name=other if not other.endswith(":out") else "mm")
    relu = helper.make_node("Relu", ["y"], ["r"], name="after")
    out = other if other.endswith(":out") else "z"
    path = save(tmp_path / "c.onnx", [lstm, relu, mm], [("x", FLOAT, [7, 2, 3]), ("x2", FLOAT, [4, 6])],
                [("r", FLOAT, None), (out, FLOAT, None)], [weight("W", 1, 20, 3), weight("R", 1, 20, 5), weight("M", 6, 8)])
    wl = import_onnx(path)
    names = [layer.name for layer in wl.layers()]
    assert len(names) == len(set(names)) == 5 and set(wl.graph.nodes) == set(names)
    assert sum(layer.macs for layer in wl.layers()) == 7 * 2 * 3 * 20 + 7 * 2 * 5 * 20 + 4 * 6 * 8


@pytest.mark.parametrize("t", [8, 300])  # values kept, and dropped (300 x 300 > FOLD_LIMIT) by the importer
def test_an_attention_mask_is_not_a_parameter(tmp_path, t):
    assert (t * t > FOLD_LIMIT) == (t == 300)
    causal = np.triu(np.full((t, t), -np.inf, np.float32), 1)
    nodes = [helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q"),
             helper.make_node("Transpose", ["q"], ["qt"], name="qt", perm=[1, 0]),
             helper.make_node("MatMul", ["q", "qt"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "mask"], ["sm"], name="masked"),
             helper.make_node("Add", ["sm", "pos"], ["y"], name="learned")]
    path = save(tmp_path / "a.onnx", nodes, [("x", FLOAT, [t, 4])], [("y", FLOAT, None)],
                [weight("Wq", 4, 4), const("mask", causal), weight("pos", t, t)])
    layers = {layer.name: layer for layer in import_onnx(path).layers()}
    assert layers["masked"].params == 0 and layers["learned"].params == t * t and layers["q"].params == 16


def test_an_edge_into_quantize_linear_has_the_quantized_width(tmp_path):
    """The conv's O is 8 bits (its output is re-quantized at once): the edge carries as many bytes."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s", "z"], ["q"], name="quant")]
    path = save(tmp_path / "q.onnx", nodes, [("x", FLOAT, [1, 3, 8, 8])], [("q", TensorProto.INT8, None)],
                [weight("w", 4, 3, 3, 3), const("s", np.float32(0.1)), const("z", np.int8(0))], opset=18)
    wl = import_onnx(path)
    assert wl.layers()[0].problem.tensor("O").bits == 8
    assert wl.graph.edges["conv", "quant"]["bytes"] == math.prod((1, 4, 6, 6))


@pytest.mark.parametrize("shape", [(2.5, 3), (-1, 3), ("a", 3), (0, 3), 5, (True, 3)])
def test_input_shapes_must_be_positive_integers(tmp_path, shape):
    path = _single(tmp_path, "Relu", ["n", 3], [])
    with pytest.raises(UserError, match=r"input_shapes\['x'\]: .*expected a list of positive integers"):
        import_onnx(path, input_shapes={"x": shape})
