"""Hand-built ONNX graphs: conv attributes, BN folding, bias folding, activation fusion, vector ops.

Every expected number is worked out by hand in the comments; the conv property test checks the
importer's shape arithmetic against onnxruntime's actual output shapes.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler.frontend import import_onnx
from tests.frontend.onnx_builders import FLOAT, const, save, weight


def test_conv_bn_relu_folds_into_one_layer(tmp_path):
    # Conv 3->4, 3x3, pad 1 on 5x5, no bias; BN; Relu.  MACs = K4 * C3 * 3*3 * P5*Q5 = 2700.
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    inits = [weight("w", 4, 3, 3, 3), *(weight(n, 4, seed=i) for i, n in enumerate("sbm")),
             const("v", np.ones(4, np.float32))]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 3, 5, 5])], [("y", FLOAT, [1, 4, 5, 5])], inits)
    wl = import_onnx(p)
    (layer,) = wl.layers()
    assert layer.kind == "mac" and layer.macs == 2700
    assert layer.post_ops == ["Relu"]
    # folded BN: weights 4*3*3*3 = 108, bias one per output channel = 4
    assert (layer.weights, layer.bias, layer.params) == (108, 4, 112)
    assert set(layer.onnx_nodes) == {"conv", "bn", "relu"}
    assert layer.attrs["folded"] == ["BatchNormalization"]
    assert layer.outputs == ("y",)
    assert layer.vector_ops == 4 * 5 * 5  # the fused Relu: one op per output element


def test_no_fusion_when_the_tensor_has_two_consumers(tmp_path):
    # conv output feeds Relu and Add: Relu must stay a separate vector layer
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Add", ["c", "r"], ["y"], name="add"),
    ]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 2, 4, 4])], [("y", FLOAT, [1, 2, 4, 4])],
             [weight("w", 2, 2, 1, 1)])
    kinds = {x.name: (x.kind, x.post_ops) for x in import_onnx(p).layers()}
    assert kinds == {"conv": ("mac", []), "relu": ("vector", []), "add": ("vector", [])}


def test_graph_output_is_not_fused_away(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="sig")]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 2, 4, 4])],
             [("y", FLOAT, [1, 2, 4, 4]), ("c", FLOAT, [1, 2, 4, 4])], [weight("w", 2, 2, 1, 1)])
    assert [x.name for x in import_onnx(p).layers()] == ["conv", "sig"]


def test_matmul_bias_add_and_clip_relu6(tmp_path):
    # x[1,5,8] @ W[8,3] + b[3] then Clip(0, 6): an fc with rows 1*5; MACs = 5*8*3 = 120
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
        helper.make_node("Clip", ["a", "lo", "hi"], ["y"], name="clip"),
    ]
    inits = [weight("w", 8, 3), weight("b", 3), const("lo", np.float32(0)), const("hi", np.float32(6))]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 5, 8])], [("y", FLOAT, [1, 5, 3])], inits)
    (layer,) = import_onnx(p).layers()
    assert layer.problem.kind == "fc" and layer.problem.sizes == {"B": 1, "M": 5, "N": 3, "K": 8}
    assert (layer.macs, layer.weights, layer.bias) == (120, 24, 3)
    assert layer.post_ops == ["Relu6"] and layer.attrs["clip"] == [0.0, 6.0]


def test_leaky_relu_post_op_keeps_alpha(tmp_path):
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g"], name="fc", transB=1),
             helper.make_node("LeakyRelu", ["g"], ["y"], name="act", alpha=0.2)]
    # Gemm with transB: W is [N=4, K=6]; MACs = M2 * K6 * N4 = 48
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [2, 6])], [("y", FLOAT, [2, 4])],
             [weight("w", 4, 6), weight("b", 4)])
    (layer,) = import_onnx(p).layers()
    assert (layer.macs, layer.params, layer.post_ops) == (48, 28, ["LeakyRelu"])
    assert layer.attrs["leaky_relu_alpha"] == pytest.approx(0.2)


def test_vector_op_counts(tmp_path):
    # MaxPool 2x2 s2 on 1x3x4x4 -> 1x3x2x2: 12 outputs x 4 taps = 48
    # Add of two 1x3x2x2 -> 12;  Softmax over 12 elements x 5 = 60;  GlobalAveragePool: 12 inputs
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Add", ["p", "p"], ["a"], name="add"),
        helper.make_node("Softmax", ["a"], ["s"], name="softmax", axis=1),
        helper.make_node("GlobalAveragePool", ["s"], ["y"], name="gap"),
    ]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 3, 4, 4])], [("y", FLOAT, [1, 3, 1, 1])])
    ops = {x.name: x.vector_ops for x in import_onnx(p).layers()}
    assert ops == {"pool": 48, "add": 12, "softmax": 60, "gap": 12}


def test_layer_norm_and_constant_operand_params(tmp_path):
    # LayerNorm over 8 features: weights 8 (scale) + bias 8; a learned [1,4,8] table added counts
    # as 32 weights; the scalar divisor is an immediate, not a parameter.
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], name="ln", axis=-1),
        helper.make_node("Add", ["n", "pos"], ["a"], name="addpos"),
        helper.make_node("Div", ["a", "d"], ["y"], name="div"),
    ]
    inits = [weight("g", 8), weight("b", 8), weight("pos", 1, 4, 8), const("d", np.float32(2))]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 4, 8])], [("y", FLOAT, [1, 4, 8])], inits)
    params = {x.name: (x.weights, x.bias) for x in import_onnx(p).layers()}
    assert params == {"ln": (8, 8), "addpos": (32, 0), "div": (0, 0)}


def test_every_onnx_node_is_accounted_for(tmp_path):
    # a Constant-fed Reshape plus a Shape chain: each node ends up in a layer's onnx_nodes or in folded
    nodes = [
        helper.make_node("Constant", [], ["shape"], name="k", value=const("v", np.array([1, 12], np.int64))),
        helper.make_node("Shape", ["x"], ["s"], name="shape_of_x"),
        helper.make_node("Constant", [], ["unused"], name="dead", value=const("u", np.zeros(2, np.float32))),
        helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        helper.make_node("Reshape", ["r", "s"], ["y"], name="back"),
    ]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 3, 4])], [("y", FLOAT, [1, 3, 4])])
    wl = import_onnx(p)
    layers = {x.name: x for x in wl.layers()}
    assert set(layers) == {"reshape", "back"} and {x.kind for x in layers.values()} == {"layout"}
    assert "k" in layers["reshape"].onnx_nodes and "shape_of_x" in layers["back"].onnx_nodes
    assert wl.folded == ["dead"]


# ---- convolution attributes against onnxruntime -------------------------------------------------

conv_cases = st.fixed_dictionaries({
    "rank": st.sampled_from([1, 2]),
    "groups": st.sampled_from([1, 2, 4]),
    "cpg": st.integers(1, 3),  # input channels per group
    "kpg": st.integers(1, 3),  # output channels per group
    "size": st.integers(5, 11),
    "kernel": st.integers(1, 4),
    "stride": st.integers(1, 3),
    "dilation": st.integers(1, 2),
    "pad": st.tuples(st.integers(0, 2), st.integers(0, 2)),
    "auto_pad": st.sampled_from(["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]),
})


@settings(max_examples=25, deadline=None)
@given(case=conv_cases)
def test_conv_macs_match_onnxruntime_output_shapes(tmp_path_factory, case):
    r = case["rank"]
    if case["auto_pad"].startswith("SAME"):
        case["dilation"] = 1  # onnxruntime implements SAME padding only without dilation
    if (case["kernel"] - 1) * case["dilation"] + 1 > case["size"]:
        return
    c, k = case["groups"] * case["cpg"], case["groups"] * case["kpg"]
    attrs = {"group": case["groups"], "strides": [case["stride"]] * r, "dilations": [case["dilation"]] * r,
             "kernel_shape": [case["kernel"]] * r}
    if case["auto_pad"] == "NOTSET":
        attrs["pads"] = [case["pad"][0]] * r + [case["pad"][1]] * r
    else:
        attrs["auto_pad"] = case["auto_pad"]
    shape = [1, c] + [case["size"]] * r
    path = save(tmp_path_factory.mktemp("conv") / "c.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)],
                [("x", FLOAT, shape)], [("y", FLOAT, None)], [weight("w", k, case["cpg"], *[case["kernel"]] * r)])
    (layer,) = import_onnx(path).layers()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    out = sess.run(None, {"x": np.zeros(shape, np.float32)})[0]
    # independent count: every output element is a dot product over C/groups x kernel taps
    assert layer.macs == out.size * case["cpg"] * case["kernel"] ** r
    assert layer.output_shapes == (out.shape,)
    assert layer.weights == k * case["cpg"] * case["kernel"] ** r


@settings(max_examples=20, deadline=None)
@given(batch_a=st.lists(st.sampled_from([1, 2, 3]), max_size=2), batch_b=st.lists(st.sampled_from([1, 2, 3]), max_size=2),
       m=st.integers(1, 4), k=st.integers(1, 4), n=st.integers(1, 4))
def test_matmul_broadcast_macs(tmp_path_factory, batch_a, batch_b, m, k, n):
    try:
        batch = np.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except ValueError:
        return
    path = save(tmp_path_factory.mktemp("mm") / "m.onnx", [helper.make_node("MatMul", ["a", "b"], ["y"])],
                [("a", FLOAT, [*batch_a, m, k]), ("b", FLOAT, [*batch_b, k, n])], [("y", FLOAT, None)])
    (layer,) = import_onnx(path).layers()
    # every output element [*batch, m, n] is a K-long dot product
    assert layer.macs == math.prod(batch) * m * n * k
    assert layer.weights == 0


def test_conv_transpose_scatter_macs(tmp_path):
    # ConvTranspose 4->6, k3, s2, groups 2 on 5x5: every input pixel meets every tap of its group:
    # MACs = N1 * C_in4 * H5*W5 * (K_out6 / 2) * 3*3 = 2700
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2], group=2)
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 4, 5, 5])], [("y", FLOAT, None)],
             [weight("w", 4, 3, 3, 3)])
    (layer,) = import_onnx(p).layers()
    assert layer.macs == 2700 and layer.weights == 4 * 3 * 9
    assert layer.output_shapes == ((1, 6, 11, 11),)  # (5-1)*2 + 3 = 11


def test_resize_and_pad_vector_ops(tmp_path):
    # Resize x2 on the two spatial axes of 1x2x3x3 -> 1x2x6x6 = 72 outputs; nearest: 1 tap each,
    # linear: 2 taps per resized axis -> 4; Pad 1 on each side of 1x2x3x3 -> 1x2x5x5 = 50 writes
    scales = const("sc", np.array([1, 1, 2, 2], np.float32))
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["n"], name="nearest", mode="nearest"),
             helper.make_node("Resize", ["x", "", "sc"], ["l"], name="linear", mode="linear"),
             helper.make_node("Pad", ["x", "pads"], ["p"], name="pad")]
    inits = [scales, const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 2, 3, 3])],
             [("n", FLOAT, None), ("l", FLOAT, None), ("p", FLOAT, None)], inits)
    ops = {x.name: (x.vector_ops, x.params) for x in import_onnx(p).layers()}
    assert ops == {"nearest": (72, 0), "linear": (288, 0), "pad": (50, 0)}


def test_inconsistent_shapes_name_the_node(tmp_path):
    from costmodel.errors import UserError

    # [2,3] @ [4,5]: the inner dims disagree, so strict shape inference fails on node 'mm'
    p = save(tmp_path / "m.onnx", [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
             [("a", FLOAT, [2, 3]), ("b", FLOAT, [4, 5])], [("y", FLOAT, None)])
    with pytest.raises(UserError, match=r"shape inference failed.*mm"):
        import_onnx(p)


def test_conv_with_computed_weights_has_an_edge_and_no_params(tmp_path):
    # the conv's weights are an activation (a dynamic filter): an edge from its producer, 0 params
    nodes = [helper.make_node("Relu", ["f"], ["wf"], name="make_w"),
             helper.make_node("Conv", ["x", "wf"], ["y"], name="conv")]
    p = save(tmp_path / "m.onnx", nodes, [("x", FLOAT, [1, 2, 4, 4]), ("f", FLOAT, [3, 2, 1, 1])],
             [("y", FLOAT, None)])
    wl = import_onnx(p)
    assert ("make_w", "conv") in wl.graph.edges
    assert wl.layer("conv").params == 0 and wl.layer("conv").macs == 3 * 2 * 16


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm_transposes(tmp_path, trans_a, trans_b):
    # A is logically [M=3, K=5], B is [K=5, N=2]: MACs = 3*5*2 = 30 whatever the storage order
    a = [5, 3] if trans_a else [3, 5]
    b = [2, 5] if trans_b else [5, 2]
    node = helper.make_node("Gemm", ["a", "b"], ["y"], name="g", transA=trans_a, transB=trans_b)
    p = save(tmp_path / "m.onnx", [node], [("a", FLOAT, a)], [("y", FLOAT, None)], [weight("b", *b)])
    (layer,) = import_onnx(p).layers()
    assert layer.problem.sizes == {"B": 1, "M": 3, "N": 2, "K": 5} and layer.macs == 30
    assert layer.output_shapes == ((3, 2),)


def test_lstm_batch_first_with_peepholes(tmp_path):
    # LSTM layout=1: X is [batch=2, T=3, input=4]; hidden 5, one direction, bias and peepholes.
    # x_gates: rows T*batch = 6, 4 -> 4*5 = 20: 6*4*20 = 480; h_gates: 6*5*20 = 600
    # cell: T3 * batch2 * H5 * (4*(1+2) + 4 + 3 + 2 + 6) = 30 * 27 = 810 ops
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "", "", "P"], ["Y"], name="lstm",
                            hidden_size=5, layout=1)
    inits = [weight("W", 1, 20, 4), weight("R", 1, 20, 5), weight("B", 1, 40), weight("P", 1, 15)]
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [2, 3, 4])], [("Y", FLOAT, None)], inits)
    layers = {x.name: x for x in import_onnx(p).layers()}
    assert layers["lstm/x_gates"].macs == 480 and layers["lstm/h_gates"].macs == 600
    assert layers["lstm/h_gates"].attrs["steps"] == 3
    assert layers["lstm/cell"].vector_ops == 810
    # params: W 80 + R 100 + B 40 + P 15 = 235
    assert sum(x.params for x in layers.values()) == 235
    assert layers["lstm/cell"].output_shapes == ((2, 3, 1, 5),)  # layout=1: [batch, T, dirs, H]


def test_model_local_functions_are_inlined(tmp_path):
    import onnx

    # a local function "ConvRelu" wrapping Conv + Relu, called once: imports as one fused conv
    fn = helper.make_function("local", "ConvRelu", ["x", "w"], ["y"],
                              [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
                              [helper.make_opsetid("", 17)])
    graph = helper.make_graph([helper.make_node("ConvRelu", ["x", "w"], ["y"], name="block", domain="local")], "g",
                              [helper.make_tensor_value_info("x", FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", FLOAT, None)], [weight("w", 4, 2, 1, 1)])
    model = helper.make_model(graph, functions=[fn], ir_version=8,
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    onnx.save(model, str(tmp_path / "f.onnx"))
    (layer,) = import_onnx(tmp_path / "f.onnx").layers()
    assert (layer.op_type, layer.macs, layer.post_ops) == ("Conv", 4 * 2 * 9, ["Relu"])


@pytest.mark.parametrize("equation,a,b,macs,batch", [
    ("bhid,bhjd->bhij", [1, 2, 5, 8], [1, 2, 6, 8], 2 * 5 * 6 * 8, 2),  # attention scores
    ("bhij,bhjd->bhid", [1, 2, 5, 6], [1, 2, 6, 8], 2 * 5 * 8 * 6, 2),  # attention values
    ("...ij,...jk", [3, 4, 5], [3, 5, 2], 3 * 4 * 2 * 5, 3),             # implicit output, ellipsis batch
    ("ij,kj->ik", [4, 5], [3, 5], 4 * 3 * 5, 1),                          # x @ W^T
])
def test_einsum_as_matmul(tmp_path, equation, a, b, macs, batch):
    node = helper.make_node("Einsum", ["a", "b"], ["y"], name="e", equation=equation)
    p = save(tmp_path / "m.onnx", [node], [("a", FLOAT, a), ("b", FLOAT, b)], [("y", FLOAT, None)])
    (layer,) = import_onnx(p).layers()
    sess = ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
    out = sess.run(None, {"a": np.zeros(a, np.float32), "b": np.zeros(b, np.float32)})[0]
    assert layer.output_shapes == (out.shape,)
    assert layer.macs == macs and layer.problem.sizes["B"] == batch


def test_3d_conv_is_refused_or_a_host_layer(tmp_path):
    from costmodel.errors import UserError

    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c3")
    p = save(tmp_path / "m.onnx", [node], [("x", FLOAT, [1, 2, 4, 4, 4])], [("y", FLOAT, None)],
             [weight("w", 3, 2, 1, 1, 1)])
    with pytest.raises(UserError, match=r"'c3'.*3-D convolution is not supported.*--allow-unsupported"):
        import_onnx(p)
    with pytest.warns(UserWarning, match="zero-cost host layer"):
        (layer,) = import_onnx(p, allow_unsupported=True).layers()
    assert (layer.kind, layer.macs, layer.output_shapes) == ("host", 0, ((1, 3, 4, 4, 4),))


WEIGHT_MISMATCHES = {
    # a weight for 8 input channels on a 6-channel input was costed as C6 with 288 parameters
    "conv channels": ("Conv", {}, [1, 6, 8, 8], (4, 8, 3, 3), r"weight 'w' has shape \[4, 8, 3, 3\]; .* \[\?, 6, 3, 3\]"),
    "grouped conv": ("Conv", {"group": 2}, [1, 8, 8, 8], (4, 8, 3, 3), r"\[\?, 4, 3, 3\]"),
    "group divides": ("Conv", {"group": 3}, [1, 8, 8, 8], (6, 2, 3, 3), r"group 3 does not divide the 8 input"),
    "group 0": ("Conv", {"group": 0}, [1, 8, 8, 8], (4, 8, 3, 3), r"group 0: expected a positive integer"),
    "kernel_shape": ("Conv", {"kernel_shape": [5, 5]}, [1, 8, 8, 8], (4, 8, 3, 3), r"\[\?, 8, 5, 5\]"),
    "transposed": ("ConvTranspose", {}, [1, 6, 8, 8], (8, 4, 3, 3), r"\[6, \?, 3, 3\]"),
}


@pytest.mark.parametrize("op, attrs, x_shape, w_shape, message", WEIGHT_MISMATCHES.values(), ids=WEIGHT_MISMATCHES)
def test_a_weight_that_does_not_fit_its_input_is_refused(tmp_path, op, attrs, x_shape, w_shape, message):
    from costmodel.errors import UserError

    node = helper.make_node(op, ["x", "w"], ["y"], name="c0", **attrs)
    p = save(tmp_path / "w.onnx", [node], [("x", FLOAT, x_shape)], [("y", FLOAT, None)], [weight("w", *w_shape)])
    with pytest.raises(UserError, match=r"node 'c0' \(" + op + r"\): .*" + message):
        import_onnx(p)
