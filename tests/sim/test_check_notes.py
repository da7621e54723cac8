"""onnxruntime as the reference on CPUs whose uint8 x int8 kernels saturate int16 pairs (x86 without
VNNI): 7-bit weights are exact there, and ``dse simulate --check`` says when a model's are not."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.sim import check

from .ort_graphs import matmul_model


@pytest.mark.parametrize("k", [2, 16, 64])
def test_seven_bit_weights_are_exact_on_this_cpu(k):
    """The worst case of compiler.quantize's range (255 x +-64) equals int64 arithmetic on any CPU;
    the 8-bit worst case does exactly when the probe says pairs do not saturate."""
    a = np.full((3, k), 255, np.uint8)
    for w, exact_expected in ((64, True), (-64, True), (127, not check.ort_pairs_saturate())):
        b = np.full((k, 4), w, np.int8)
        got = check.ort_matmul_integer(a, b)
        exact = a.astype(np.int64) @ b.astype(np.int64)
        assert np.array_equal(got, exact) == exact_expected, (w, got[0, 0], exact[0, 0])


@pytest.mark.parametrize(("saturates", "w_max", "noted"), [(True, 127, True), (True, 64, False), (False, 127, False)])
def test_note_names_wide_weights_on_saturating_cpus(monkeypatch, saturates, w_max, noted):
    monkeypatch.setattr(check, "ort_pairs_saturate", lambda: saturates)
    b = np.array([[w_max, -3], [5, -w_max]], np.int8)
    model = matmul_model(np.uint8, np.uint8, b, 0.02, 128, np.float32(0.01), 0.5, 128, (1, 2))
    note = check.saturation_note(model)
    assert bool(note) == noted
    if noted:
        assert f"|{w_max}|" in note


def test_zero_points_are_not_weights(monkeypatch):
    """An int8 model's activation zero points may lie beyond -64..64; they are no weights."""
    monkeypatch.setattr(check, "ort_pairs_saturate", lambda: True)
    b = np.array([[60, -3], [5, -60]], np.int8)
    model = matmul_model(np.int8, np.int8, b, 0.02, -100, np.float32(0.01), 0.5, 120, (1, 2))
    assert check.saturation_note(model) == ""


def test_a_reference_output_of_another_shape_is_a_note_not_a_crash(tmp_path):
    """onnx.reference's uint8 MaxPool with ceil_mode gives a (1, 1, 8, 10) output where onnxruntime
    (and torch) give (1, 1, 4, 6): `--check` had died subtracting the two; the binary is compared
    with onnxruntime and the reference's shape is named."""
    import onnx

    from tests.compiler import graphs

    m = graphs.pool("MaxPool", 1, (4, 4), (1, 1), (2, 2, 2, 2), (3, 5), ceil_mode=1)
    program, result, inputs, qdq = graphs.run(m, tmp_path, 0)

    final = {o.name for o in onnx.load(str(qdq)).graph.output}
    (c,) = check.check_outputs(program, {k: v for k, v in result.outputs.items() if k in final}, inputs, qdq)
    assert c.max_lsb_ort == 0
    if c.max_lsb_reference is None:  # (while onnx.reference has the fault)
        assert "onnx.reference gave shape" in c.reference_note and "the binary [1, 1, 4, 6]" in c.reference_note


def test_a_model_onnxruntime_cannot_run_is_one_line(tmp_path, monkeypatch):
    from compiler.isa.program import Program

    class Refusing:
        def __init__(self, *a, **k):
            pass

        def get_inputs(self):
            return []

        def get_outputs(self):
            return []

        def run(self, *a, **k):
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : out of computation range!\nmore")

    import onnxruntime

    from tests.compiler import graphs

    path = tmp_path / "m.onnx"
    import onnx

    onnx.save(graphs.add((1, 4)), path)
    monkeypatch.setattr(onnxruntime, "InferenceSession", Refusing)
    with pytest.raises(check.UserError, match=r"m.onnx: onnxruntime cannot run it on these inputs \(.*range!\)$"):
        check.check_outputs(Program(instructions=[], dram_size=16), {}, {}, path)
