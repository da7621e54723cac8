"""Tiny ONNX graphs written by hand with onnx.helper, for tests that need exact control."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def const(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def weight(name: str, *shape: int, dtype=np.float32, seed: int = 0) -> onnx.TensorProto:
    return const(name, np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def save(path: Path, nodes, inputs, outputs, initializers=(), opset: int = 17, ir: int = 8,
         graph_name: str = "handmade") -> Path:
    """Build, check and write a model; ``inputs``/``outputs`` are (name, elem_type, shape) triples."""
    graph = helper.make_graph(
        nodes, graph_name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    onnx.save(model, str(path))
    return Path(path)
