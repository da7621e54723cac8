"""Compile and simulate time per zoo model, with the largest output difference vs onnxruntime.

For each model: export (fp32, the zoo's seeded weights), quantize + map + lower (``compile_full``
with the hwconfig, so dense convs and FCs take their tiles from the mapper; timed as "compile", of
which "mapper" is the time in dse.mappers.map_layer), simulate once on a seeded random input with timing (timed as "simulate"), and
compare the outputs with onnxruntime on the quantized model (max LSB). A model the compiler cannot
lower is listed with the UserError's first words. Also printed: the per-layer ratio of simulated
cycles to the analytical latency of the same mapping (median, range, layers within 10%). Baseline in the same process: onnxruntime's own
run time of the quantized model (the ratio says how much slower the exact simulator is).
Targets (issue 6): MobileNetV2 compiles in < 30 s and simulates in < 60 s on 2 cores.

    python benchmarks/bench_compile.py [--models keyword_spotting,mobilenet_v2] [--hw tpu_like]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compiler.compile import compile_full
from compiler.sim import simulate
from compiler.sim.check import check_outputs, timing_table
from costmodel.errors import UserError

CNNS = ["keyword_spotting", "gaze_estimation", "hand_tracking", "eye_segmentation", "depth_estimation",
        "mobilenet_v2", "resnet18"]


def bench(name: str, hw: str, work: Path) -> str:
    from dse import workloads

    src = workloads.export(name, work / f"{name}.onnx")
    t0 = time.perf_counter()
    try:
        compiled = compile_full(src, hw, qdq_out=work / f"{name}.q.onnx")
    except UserError as exc:
        return f"{name:20s} not compiled: {str(exc)[:150]}"
    t_compile = time.perf_counter() - t0
    program = compiled.program
    inp = next(t for t in program.io if t.direction == "input")
    x = np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)
    t0 = time.perf_counter()
    result = simulate(program, {inp.name: x})
    t_sim = time.perf_counter() - t0
    import onnxruntime as ort

    sess = ort.InferenceSession(str(compiled.qdq_model), providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    sess.run(None, {sess.get_inputs()[0].name: x})
    t_ort = time.perf_counter() - t0
    checks = check_outputs(program, result.outputs, {inp.name: x}, compiled.qdq_model)
    lsb = max(c.max_lsb_ort for c in checks)
    bad = sum(c.mismatches_ort for c in checks)
    total = sum(c.elements for c in checks)
    ratios = np.array([r["ratio"] for r in timing_table(compiled.layers, result.nodes)])
    band = (f"  sim/analytical median {np.median(ratios):.3f} [{ratios.min():.3f}, {ratios.max():.3f}], "
            f"{int((abs(ratios - 1) <= 0.1).sum())}/{ratios.size} layers within 10%") if ratios.size else ""
    return (f"{name:20s} compile {t_compile:6.2f} s (mapper {compiled.mapper_seconds:5.2f} s)  simulate {t_sim:6.2f} s  ({t_sim / t_ort:6.0f}x onnxruntime)  "
            f"{len(program.instructions):6d} insns  {result.cycles:>12,} cycles  max {lsb} LSB vs ORT "
            f"({bad}/{total} outputs differ){band}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(CNNS))
    ap.add_argument("--hw", default="tpu_like")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            print(bench(name, args.hw, Path(work)), flush=True)


if __name__ == "__main__":
    main()
