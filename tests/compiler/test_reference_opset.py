"""onnx.reference as check_outputs' second opinion on models older than opset 19 (its
QuantizeLinear / DequantizeLinear start there; compiler.sim.check converts such a model to opset
21 first): the reference runs and lands within one LSB of the binary (it rounds the spec's float64
formula where onnxruntime and the binary use integer kernels, docs/simulator.md)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from compiler.sim.check import check_outputs
from tests.compiler.graphs import conv, gemm, run


@pytest.mark.parametrize("kind", ["gemm", "conv"])
def test_reference_runs_on_opset_17_models(tmp_path, kind):
    rng = np.random.default_rng(5)
    float_model = (gemm(rng, 8, 64, 32) if kind == "gemm"
                   else conv(rng, 8, 16, (3, 3), (1, 1), (1, 1, 1, 1), (10, 10), relu=True))
    program, result, inputs, qdq = run(float_model, tmp_path, seed=0)
    q = onnx.load(str(qdq))
    assert next(o.version for o in q.opset_import if o.domain == "") < 19  # the case under test
    final = {o.name for o in q.graph.output}
    checks = check_outputs(program, {k: v for k, v in result.outputs.items() if k in final}, inputs, qdq)
    assert checks
    for c in checks:
        assert c.reference_note == "" and c.max_lsb_reference is not None, c
        assert c.max_lsb_ort == 0 and c.max_lsb_reference <= 1, c
