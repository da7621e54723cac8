"""Float one-/few-node ONNX models for per-op compiler tests, and the compile-simulate-compare loop.

Each test builds a float model, quantizes it with compiler.quantize (seeded calibration), lowers
it, runs the binary on the simulator with random uint8 inputs and compares every output with
onnxruntime on the quantized model (compiler.sim.check: an independent ORT session, default
optimizations, the same kernels a user gets).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.compile import lower_qdq
from compiler.quantize import quantize_model
from compiler.sim import simulate
from compiler.sim.check import check_outputs
from compiler.target import Target

F = TensorProto.FLOAT


def model(nodes, inputs: dict[str, list[int]], output: str, inits: dict[str, np.ndarray] | None = None):
    graph = helper.make_graph(
        nodes, "t", [helper.make_tensor_value_info(n, F, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(output, F, None)],
        [numpy_helper.from_array(v.astype(np.float32) if v.dtype.kind == "f" else v, k)
         for k, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def conv(rng, cin, cout, k, stride, pad, hw, group=1, relu=False):
    w = rng.standard_normal((cout, cin // group, *k)).astype(np.float32) * 0.3
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], kernel_shape=list(k),
                              strides=list(stride), pads=list(pad), group=group)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    return model(nodes, {"x": [1, cin, *hw]}, "y", {"w": w, "b": b})


def gemm(rng, m, k, n, matmul=False):
    w = rng.standard_normal((k, n) if matmul else (n, k)).astype(np.float32) * 0.3
    if matmul:
        return model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [m, k]}, "y", {"w": w})
    b = rng.standard_normal(n).astype(np.float32) * 0.1
    return model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], {"x": [m, k]}, "y", {"w": w, "b": b})


def pool(op, c, k, stride, pad, hw, seed=0, **attrs):
    """A 1x1 conv "p" then the pool: onnxruntime quantizes a pool only when its input is quantized."""
    w = np.random.default_rng(seed).standard_normal((c, c, 1, 1)).astype(np.float32) * 0.5
    nodes = [helper.make_node("Conv", ["x", "w"], ["p"], kernel_shape=[1, 1])]
    if op == "GlobalAveragePool":
        nodes.append(helper.make_node(op, ["p"], ["y"]))
    else:
        nodes.append(helper.make_node(op, ["p"], ["y"], kernel_shape=list(k), strides=list(stride), pads=list(pad),
                                      **attrs))
    return model(nodes, {"x": [1, c, *hw]}, "y", {"w": w})


def add(shape):
    return model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": list(shape), "b": list(shape)}, "y")


def run(float_model, tmp: Path, seed: int, target: Target | None = None):
    """Quantize, lower (every intermediate activation exposed as an output), simulate on random uint8
    inputs; returns (program, sim result, inputs, qdq path)."""
    import onnx

    src = tmp / "f.onnx"
    onnx.save(float_model, src)
    qdq = quantize_model(src, tmp / "q.onnx", seed=seed)
    program, _ = lower_qdq(qdq, target or Target(), expose=True)
    rng = np.random.default_rng(seed + 1)
    inputs = {t.name: rng.integers(0, 256, t.shape, dtype=np.uint8) for t in program.io if t.direction == "input"}
    result = simulate(program, inputs, timing=True)
    return program, result, inputs, qdq


def lsb_vs_ort(float_model, tmp: Path, seed: int, target: Target | None = None) -> tuple[int, object]:
    """Largest difference (LSBs) between the simulated outputs and onnxruntime, and the run."""
    import onnx

    program, result, inputs, qdq = run(float_model, tmp, seed, target)
    final = {o.name for o in onnx.load(str(qdq)).graph.output}
    checks = check_outputs(program, {k: v for k, v in result.outputs.items() if k in final}, inputs, qdq)
    return max(c.max_lsb_ort for c in checks), (program, result, inputs, qdq)
