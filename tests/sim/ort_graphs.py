"""One-node quantized ONNX graphs (QLinearConv, QLinearMatMul) and an onnxruntime session for them."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from compiler.quantize import WEIGHT_MAX

_TP = {np.dtype(np.int8): TensorProto.INT8, np.dtype(np.uint8): TensorProto.UINT8}


def weight_bound(x_dtype) -> int:
    """Largest |weight| to draw against activations of ``x_dtype``. For uint8 activations the range
    compiler.quantize gives weights (WEIGHT_MAX): beyond it onnxruntime's uint8 x int8 kernels on
    x86 without VNNI saturate pairs of products to int16 (VPMADDUBSW) and are not the reference.
    int8 x int8 kernels have no such path: the full range."""
    return WEIGHT_MAX if np.dtype(x_dtype) == np.uint8 else 127


def session(model):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def conv_model(x_dtype, y_dtype, w, bias, x_scale, x_zp, w_scale, y_scale, y_zp, x_shape, stride, pad, group=1):
    inits = [
        numpy_helper.from_array(np.array(x_scale, np.float32), "xs"),
        numpy_helper.from_array(np.array(x_zp, x_dtype), "xz"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(w_scale.astype(np.float32), "ws"),
        numpy_helper.from_array(np.zeros(w.shape[0], np.int8), "wz"),
        numpy_helper.from_array(np.array(y_scale, np.float32), "ys"),
        numpy_helper.from_array(np.array(y_zp, y_dtype), "yz"),
        numpy_helper.from_array(bias, "b"),
    ]
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
        kernel_shape=list(w.shape[2:]), strides=[stride, stride], pads=[pad] * 4, group=group,
    )
    graph = helper.make_graph(
        [node], "qconv", [helper.make_tensor_value_info("x", _TP[np.dtype(x_dtype)], list(x_shape))],
        [helper.make_tensor_value_info("y", _TP[np.dtype(y_dtype)], None)], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def matmul_model(a_dtype, y_dtype, b, a_scale, a_zp, b_scale, y_scale, y_zp, a_shape):
    inits = [
        numpy_helper.from_array(np.array(a_scale, np.float32), "as"),
        numpy_helper.from_array(np.array(a_zp, a_dtype), "az"),
        numpy_helper.from_array(b, "b"),
        numpy_helper.from_array(np.asarray(b_scale, np.float32), "bs"),
        numpy_helper.from_array(np.zeros(np.shape(b_scale), np.int8), "bz"),
        numpy_helper.from_array(np.array(y_scale, np.float32), "ys"),
        numpy_helper.from_array(np.array(y_zp, y_dtype), "yz"),
    ]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    graph = helper.make_graph(
        [node], "qmm", [helper.make_tensor_value_info("a", _TP[np.dtype(a_dtype)], list(a_shape))],
        [helper.make_tensor_value_info("y", _TP[np.dtype(y_dtype)], None)], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
