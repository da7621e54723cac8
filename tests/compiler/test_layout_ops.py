"""Nearest Resize (STORE phases with x_gap) and channel Concat (LUT copies into block slices): 0 LSB vs ORT."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler.lower.graph import fused_model
from costmodel.errors import UserError
from tests.compiler import graphs

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _resize_model(c, h, w, f, seed, mode="asymmetric"):
    wt = np.random.default_rng(seed).standard_normal((c, c, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Resize", ["p", "", "s"], ["y"], mode="nearest", coordinate_transformation_mode=mode,
                              nearest_mode="floor")]
    return graphs.model(nodes, {"x": [1, c, h, w]}, "y",
                        {"w": wt, "s": np.array([1, 1, f, f], np.float32)})


@SETTINGS
@given(c=st.integers(1, 20), h=st.integers(1, 9), w=st.integers(1, 9), f=st.integers(2, 3), seed=st.integers(0, 99))
def test_resize_nearest_bit_exact(c, h, w, f, seed):
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, _, _, qdq) = graphs.lsb_vs_ort(_resize_model(c, h, w, f, seed), Path(tmp), seed)
        assert "Resize" in {n.op_type for n in fused_model(qdq).graph.node}
    assert lsb == 0


@SETTINGS
@given(c=st.integers(1, 20), h=st.integers(1, 9), w=st.integers(1, 9), ho=st.integers(1, 20), wo=st.integers(1, 20),
       seed=st.integers(0, 99))
@example(c=32, h=10, w=6, ho=20, wo=13, seed=0)  # eye_segmentation's decoder: 2x on H, 13/6 on W
def test_resize_nearest_any_size_bit_exact(c, h, w, ho, wo, seed):
    wt = np.random.default_rng(seed).standard_normal((c, c, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Resize", ["p", "", "", "sz"], ["y"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor")]
    m = graphs.model(nodes, {"x": [1, c, h, w]}, "y", {"w": wt, "sz": np.array([1, c, ho, wo], np.int64)})
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, result, *_) = graphs.lsb_vs_ort(m, Path(tmp), seed)
    assert result.outputs["y"].shape == (1, c, ho, wo)
    assert lsb == 0


def test_resize_other_conventions_rejected(tmp_path):
    with pytest.raises(UserError, match="Resize.*asymmetric"):
        graphs.lsb_vs_ort(_resize_model(4, 3, 3, 2, 0, mode="align_corners"), tmp_path, 0)


@SETTINGS
@given(c0=st.integers(1, 40), c1=st.integers(1, 20), h=st.integers(1, 8), w=st.integers(1, 8),
       seed=st.integers(0, 99))
@example(c0=1, c1=16, h=3, w=5, seed=1)  # the image concatenated in front of features (eye_segmentation)
@example(c0=16, c1=7, h=4, w=4, seed=2)  # block-aligned: LUT copies
def test_channel_concat_bit_exact(c0, c1, h, w, seed):
    """Aligned (c0 = 16, 32: LUT copies) and unaligned (lane-moving GEMMs) channel offsets."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x", "w1"], ["b"], kernel_shape=[1, 1]),
             helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    m = graphs.model(nodes, {"x": [1, 3, h, w]}, "y", {"w0": rng.standard_normal((c0, 3, 1, 1)).astype(np.float32),
                                                       "w1": rng.standard_normal((c1, 3, 1, 1)).astype(np.float32) * 3})
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (_, _, _, qdq) = graphs.lsb_vs_ort(m, Path(tmp), seed)
        assert "QLinearConcat" in {n.op_type for n in fused_model(qdq).graph.node}
    assert lsb == 0


def test_resize_nearest_many_tiles_race_free():
    """48 channels = 3 tiles: the third tile's LOAD reuses the first tile's input half, which the
    first tile's STOREs must no longer read (they read the output half EX copied into); the
    simulator's race detector (happens-before over the tokens) checks it."""
    with tempfile.TemporaryDirectory() as tmp:
        lsb, (program, result, *_) = graphs.lsb_vs_ort(_resize_model(48, 5, 7, 2, 1), Path(tmp), 1)
    assert len({e.tile for e in program.debug.values() if e.tile.startswith("block")}) >= 3
    assert result.warnings == [] and lsb == 0
