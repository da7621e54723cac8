"""What onnxruntime actually runs: its optimized (QDQ-fused) graph, and the tables of its LUT kernels.

Bit-exactness is defined against onnxruntime, so the compiler asks onnxruntime itself rather than
re-deriving its graph rewrites or its table-building arithmetic.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from costmodel.errors import UserError


def fused_model(qdq_path: str | Path):
    """onnxruntime's optimized (QDQ-fused) version of the model at ``qdq_path``."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "fused.onnx"
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = str(out)
        so.intra_op_num_threads = 1
        try:
            ort.InferenceSession(str(qdq_path), so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - ORT rejects the user's model
            raise UserError(f"{qdq_path}: onnxruntime cannot load the model ({str(exc).splitlines()[0]})") from None
        return onnx.load(str(out))


def kernel_table(model, node, consts: dict[str, np.ndarray]) -> np.ndarray:
    """The 256 output codes of an elementwise uint8 kernel (e.g. QLinearSigmoid, which onnxruntime runs
    as a lookup in a table it builds with MLAS): ``node`` alone, run on a [1, 256] tensor of every code."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    one = helper.make_node(node.op_type, ["codes", *node.input[1:]], ["table"], domain=node.domain, **attrs)
    inits = [numpy_helper.from_array(consts[i], i) for i in node.input[1:] if i]
    g = helper.make_graph([one], "table", [helper.make_tensor_value_info("codes", TensorProto.UINT8, [1, 256])],
                          [helper.make_tensor_value_info("table", TensorProto.UINT8, [1, 256])], inits)
    m = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"codes": np.arange(256, dtype=np.uint8)[None]})[0][0].astype(np.int32)
