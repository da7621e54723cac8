"""Trials per minute of ``dse sweep`` for the quickstart and the AR-glasses study.

For each study: run ``--trials`` trials into a fresh temporary folder (journal storage, one sweep
process; the study file's ``mapper.workers`` map layers in parallel), and report wall time, trials
per minute, CPU seconds per trial (this process and its mapper workers) and two projections for 100
trials: at the measured wall rate, and on two idle cores (CPU-s / 2). The machine is shared, so the
wall figure moves with the load average, which is printed. The baseline, in the same process: the
same designs evaluated directly (``evaluate_design``, no optuna, no storage, an empty mapping
database), so the ratio is the sweep machinery's overhead. Then the same designs once more on the
sweep's mapping database: the cost of a trial whose searches are all answered by the database.
Target (issue 7): 100 AR-glasses trials in under 10 minutes on 2 cores.

    python benchmarks/bench_sweep.py [--quickstart-trials 40] [--ar-trials 4]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dse.network.solve import shutdown_pool
from dse.study.design import evaluate_design, load_layers
from dse.study.runner import run_study


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the mapper pool, once shut down)."""
    shutdown_pool()
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bench(name: str, trials: int) -> None:
    path = REPO / "studies" / f"{name}.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        load = os.getloadavg()[0]
        c0, t0 = _cpu(), time.perf_counter()
        res = run_study(path, trials=trials, out=Path(tmp) / name)
        sweep_s, sweep_cpu = time.perf_counter() - t0, _cpu() - c0
        done = res.optuna_study.get_trials()
        distinct = {tuple(sorted(t.params.items())): t.params for t in done if "same_as" not in t.user_attrs}
        study = res.study
        layers = load_layers(study)
        t2 = time.perf_counter()
        for params in distinct.values():  # every search answered by the sweep's mapping database
            evaluate_design(study, layers, params)
        cached_s = time.perf_counter() - t2
        study.output = Path(tmp) / "baseline"  # an empty mapping database: every search runs again
        t1 = time.perf_counter()
        for params in distinct.values():
            evaluate_design(study, layers, params)
        direct_s = time.perf_counter() - t1
    per_min = len(done) / sweep_s * 60
    cpu_per_trial = sweep_cpu / len(done)
    print(f"{name}: {len(done)} trials ({len(distinct)} distinct designs) in {sweep_s:.1f} s = "
          f"{per_min:.1f} trials/min (load average {load:.1f}); 100 trials ~ {100 / per_min:.1f} min")
    print(f"  CPU {cpu_per_trial:.2f} s per trial (mapper.workers {study.spec.mapper.workers}, budget "
          f"{study.spec.mapper.max_evaluations}); 100 trials on 2 idle cores ~ {100 * cpu_per_trial / 2 / 60:.1f} min")
    print(f"  baseline: the {len(distinct)} designs evaluated directly in {direct_s:.1f} s; "
          f"sweep / direct = {sweep_s / max(direct_s, 1e-9):.2f}; from the mapping database: "
          f"{cached_s / max(len(distinct), 1):.2f} s per design")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart-trials", type=int, default=40)
    ap.add_argument("--ar-trials", type=int, default=4)
    args = ap.parse_args()
    bench("quickstart", args.quickstart_trials)
    if args.ar_trials:
        bench("ar_glasses", args.ar_trials)


if __name__ == "__main__":
    main()
