"""accel-dse against ZigZag on ZigZag's own ResNet-18 and TPU-like inputs: CPU seconds, wall seconds,
cost-model evaluations, and their ratios (issue 4).

Both tools run in child processes of this script, one after the other, and each child's CPU time is
taken from ``getrusage(RUSAGE_CHILDREN)`` (it counts the mapper's worker processes too). Both map the
same file, ZigZag's ``inputs/workload/resnet18.onnx``: ZigZag (``zigzag-dse``, LOMA with its default
``lpf_limit`` 6) onto its ``inputs/hardware/tpu_like.yaml`` with its ``inputs/mapping/tpu_like.yaml``
(a 32 x 32 array, spatial unrolling K 32 x C 32 fixed by that file: it searches temporal mappings
only); accel-dse's fast mapper onto ``hwconfigs/tpu_like.yaml`` (16 x 16), searching spatial
unrollings, tilings, loop orders and keep/bypass, without the mapping database. Both minimize EDP.
The architectures differ, so only the times and evaluation counts compare; the energies and
latencies are printed for context.

    pip install -e ".[bench]"          # zigzag-dse 3.9.1 (and six, which it imports but does not declare)
    python benchmarks/zigzag_compare.py [--workers 2]

``benchmarks/bench_mapper.py`` runs the same comparison after its grid when zigzag-dse is importable.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def zigzag_inputs() -> dict[str, str]:
    """Paths of ZigZag's shipped ResNet-18 ONNX, TPU-like hardware and mapping files."""
    from importlib.resources import files

    inputs = files("zigzag") / "inputs"
    return {"workload": str(inputs / "workload" / "resnet18.onnx"),
            "accelerator": str(inputs / "hardware" / "tpu_like.yaml"),
            "mapping": str(inputs / "mapping" / "tpu_like.yaml")}


def run_zigzag() -> dict:
    """ZigZag's API on its own inputs, counting the cost-model evaluations it makes."""
    import logging

    logging.basicConfig(level=logging.ERROR)  # ZigZag logs every layer at INFO otherwise
    from zigzag import api
    from zigzag.cost_model.cost_model import CostModelEvaluation

    count = [0]
    init = CostModelEvaluation.__init__

    def counted(self, *args, **kwargs) -> None:  # one instance per mapping ZigZag evaluates
        count[0] += 1
        init(self, *args, **kwargs)

    CostModelEvaluation.__init__ = counted  # the class itself: ZigZag pickles its results
    with tempfile.TemporaryDirectory() as out:
        energy, latency, _ = api.get_hardware_performance_zigzag(
            **zigzag_inputs(), opt="EDP", dump_folder=out, loma_show_progress_bar=False)
    return {"energy_pj": float(energy), "latency_cycles": float(latency), "evaluations": count[0]}


def run_ours(workers: int) -> dict:
    """accel-dse's fast mapper on the same ONNX file and our TPU-like config."""
    from dse.network import map_model
    from dse.network.solve import shutdown_pool

    res = map_model(zigzag_inputs()["workload"], "tpu_like", objective="edp", workers=workers, db=False,
                    progress=False)
    shutdown_pool()  # waits for the worker processes, so that their CPU time is counted
    tot = res.totals
    return {"energy_pj": float(tot["energy_pj"]), "latency_cycles": float(tot["latency_cycles"]),
            "evaluations": int(tot["mappings_evaluated"])}


def measured(side: str, workers: int) -> dict:
    """Runs one side in a child process: its result with wall and CPU seconds (children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--side", side, "--workers", str(workers)],
                          check=False, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{side} failed:\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    out["cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return out


def compare(workers: int) -> None:
    """Prints both tools' figures and the ratios ZigZag / accel-dse. accel-dse runs twice: in one
    process (its CPU time, like ZigZag's single process) and on ``workers`` processes (wall time only:
    the pool's workers are not children that ``getrusage`` sees)."""
    zz = measured("zigzag", 1)
    one = measured("ours", 1)
    rows = [("zigzag-dse (LOMA, 32x32 tpu_like)", zz), ("accel-dse (fast, 16x16 tpu_like), 1 process", one)]
    if workers > 1:
        many = measured("ours", workers)
        many["cpu_s"] = float("nan")
        rows.append((f"accel-dse, {workers} worker processes", many))
    print(f"ZigZag vs accel-dse, ResNet-18 ({zigzag_inputs()['workload']}), both minimizing EDP")
    print(f"{'tool':<44} {'wall s':>8} {'CPU s':>8} {'evaluations':>12} {'evals/CPU-s':>12} "
          f"{'energy uJ':>10} {'latency Mcyc':>13}")
    for name, r in rows:
        print(f"{name:<44} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['evaluations']:12,} "
              f"{r['evaluations'] / r['cpu_s']:12,.0f} {r['energy_pj'] * 1e-6:10.1f} "
              f"{r['latency_cycles'] * 1e-6:13.3f}")
    best_wall = min(r["wall_s"] for _, r in rows[1:])
    print(f"ZigZag / accel-dse: CPU {zz['cpu_s'] / one['cpu_s']:.1f}x, wall {zz['wall_s'] / best_wall:.1f}x "
          f"(accel-dse's best wall), evaluations per CPU-second "
          f"{one['evaluations'] / one['cpu_s'] / (zz['evaluations'] / zz['cpu_s']):.0f}x in accel-dse's favour")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="accel-dse's mapper processes")
    ap.add_argument("--side", choices=["zigzag", "ours"], help=argparse.SUPPRESS)  # a child's job
    args = ap.parse_args()
    if importlib.util.find_spec("zigzag") is None:
        sys.exit('zigzag-dse is not installed: pip install -e ".[bench]"')
    if args.side:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(run_zigzag() if args.side == "zigzag" else run_ours(args.workers)))
    else:
        compare(args.workers)


if __name__ == "__main__":
    main()
