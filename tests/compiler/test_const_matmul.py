"""``constant @ activation`` MatMuls (hand_tracking's graph convolutions), 2-D reshapes by addressing
and Gemm/MatMul with more than 256 rows: 0 LSB vs onnxruntime, random shapes.

The float model is ``A @ (x @ W)`` (or a Linear on a reshaped vector), quantized by compiler.quantize,
which gives the constant A symmetric uint8 (zero point 64 at 7 bits) so that onnxruntime fuses
QLinearMatMul (the tests assert that fusion: without it ORT would run the MatMul in float).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler.lower.graph import fused_model
from tests.compiler import graphs

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _fused_ops(qdq: Path) -> list[str]:
    return [n.op_type for n in fused_model(qdq).graph.node]


@SETTINGS
@given(m=st.integers(1, 300), k=st.integers(1, 200), n=st.integers(1, 40), c=st.integers(1, 20), seed=st.integers(0, 1000))
def test_constant_times_activation_bit_exact(m, k, n, c, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((c, n)).astype(np.float32)
    model = graphs.model([helper.make_node("MatMul", ["x", "w"], ["l"]), helper.make_node("MatMul", ["a", "l"], ["y"])],
                         {"x": [k, c]}, "y", {"a": a, "w": w})
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, _, _, qdq) = graphs.lsb_vs_ort(model, Path(tmp), seed)
        assert _fused_ops(qdq).count("QLinearMatMul") == 2
    assert lsb == 0


@SETTINGS
@given(rows=st.integers(1, 24), cols=st.sampled_from([16, 32, 64]), n=st.integers(1, 40), seed=st.integers(0, 1000))
def test_linear_reshape_to_matrix_bit_exact(rows, cols, n, seed):
    """Gemm (1, K) -> (1, rows * cols), Reshape to (rows, cols) (same bytes: cols is a multiple of the
    lanes), Gemm per row: hand_tracking's latent vector becoming vertex features."""
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((rows * cols, 24)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((n, cols)).astype(np.float32) * 0.3
    model = graphs.model([helper.make_node("Gemm", ["x", "w1"], ["l"], transB=1),
                          helper.make_node("Reshape", ["l", "shape"], ["r"]),
                          helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1)],
                         {"x": [1, 24]}, "y", {"w1": w1, "w2": w2, "shape": np.array([rows, cols], np.int64)})
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, result, _, qdq) = graphs.lsb_vs_ort(model, Path(tmp), seed)
        assert "Reshape" in _fused_ops(qdq)
    assert result.outputs["y"].shape == (rows, n)
    assert lsb == 0


def test_gemm_with_more_rows_than_the_walk():
    """M = 300 > 256 rows: two FC calls on the contiguous row ranges."""
    rng = np.random.default_rng(4)
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, *_) = graphs.lsb_vs_ort(graphs.gemm(rng, 300, 40, 20), Path(tmp), 4)
    assert {"rows 0-255", "rows 256-299"} <= {e.tile for e in program.debug.values()}
    assert lsb == 0


def test_reshape_that_moves_bytes_names_the_node(tmp_path):
    """(1, 40) -> (5, 8): 8 is not a multiple of the 16 lanes, the blocked bytes differ: UserError."""
    import pytest

    from costmodel.errors import UserError

    rng = np.random.default_rng(0)
    model = graphs.model([helper.make_node("Gemm", ["x", "w1"], ["l"], transB=1),
                          helper.make_node("Reshape", ["l", "shape"], ["r"]),
                          helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1)],
                         {"x": [1, 24]}, "y", {"w1": rng.standard_normal((40, 24)).astype(np.float32),
                                              "w2": rng.standard_normal((4, 8)).astype(np.float32),
                                              "shape": np.array([5, 8], np.int64)})
    with pytest.raises(UserError, match=r"\(Reshape\).*\[1, 40\] -> \[5, 8\] changes the channel-blocked"):
        graphs.run(model, tmp_path, 0)
