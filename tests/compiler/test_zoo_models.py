"""Every CNN of the zoo, compiled for tpu_like from its zoo name and simulated on seeded random
inputs: 0 LSB against onnxruntime on the quantized model, race-free.

keyword_spotting and eye_segmentation (average pools, LeakyReLU LUTs, nearest resizes, concats) run
by default (a few seconds each); the larger models take 15-60 s each on the shared 2-core machine
and run with ``ACCEL_DSE_SLOW=1``. Each model is compiled once (module fixture) and checked on two
inputs. onnx.reference is also run (by compiler.sim.check) but not asserted: where it differs,
onnxruntime departs from the specification's arithmetic (docs/compiler.md, "Where onnxruntime
departs from the ONNX specification").
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from compiler.compile import compile_full
from compiler.sim import simulate
from compiler.sim.check import check_outputs

SLOW = pytest.mark.skipif(os.environ.get("ACCEL_DSE_SLOW") != "1", reason="slow zoo model: set ACCEL_DSE_SLOW=1")
MODELS = [
    pytest.param("keyword_spotting"),
    pytest.param("eye_segmentation"),
    pytest.param("gaze_estimation", marks=SLOW),
    pytest.param("mobilenet_v2", marks=SLOW),
    pytest.param("resnet18", marks=SLOW),
    pytest.param("hand_tracking", marks=SLOW),
    pytest.param("depth_estimation", marks=SLOW),
]


@pytest.fixture(scope="module", params=MODELS)
def compiled(request, tmp_path_factory):
    from dse import workloads

    folder = tmp_path_factory.mktemp(request.param)
    src = workloads.export(request.param, folder / f"{request.param}.onnx")
    return compile_full(src, "tpu_like", qdq_out=folder / f"{request.param}.q.onnx")


@pytest.mark.parametrize("seed", [0, 1])
def test_zoo_cnn_bit_exact(compiled, seed):
    program = compiled.program
    inputs = {t.name: np.random.default_rng(seed).standard_normal(t.shape).astype(np.float32)
              for t in program.io if t.direction == "input"}
    result = simulate(program, inputs, timing=seed == 0)  # timing model once per model; races always checked
    checks = check_outputs(program, result.outputs, inputs, compiled.qdq_model)
    assert checks and all(c.max_lsb_ort == 0 for c in checks), [(c.name, c.max_lsb_ort) for c in checks]
    assert result.warnings == []
