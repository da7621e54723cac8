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
