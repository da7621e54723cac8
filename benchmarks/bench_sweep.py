"""Trials per minute of ``dse sweep`` for the quickstart and the AR-glasses study.

For each study: run ``--trials`` trials into a fresh temporary folder (journal storage, one
worker), and report wall time, trials per minute and the extrapolated time for 100 trials. The
baseline, in the same process: the same designs evaluated directly (``evaluate_design``, no optuna,
no storage), so the ratio is the sweep machinery's overhead. Target (issue 7): 100 AR-glasses trials
in under 10 minutes on 2 cores.

    python benchmarks/bench_sweep.py [--quickstart-trials 40] [--ar-trials 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dse.study.design import evaluate_design, load_layers
from dse.study.runner import run_study


def bench(name: str, trials: int) -> None:
    path = REPO / "studies" / f"{name}.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_study(path, trials=trials, out=Path(tmp) / name)
        sweep_s = time.perf_counter() - t0
        done = res.optuna_study.get_trials()
        distinct = {tuple(sorted(t.params.items())): t.params for t in done if "same_as" not in t.user_attrs}
        study = res.study
        study.output = Path(tmp) / "baseline"  # an empty mapping database: every search runs again
        layers = load_layers(study)
        t1 = time.perf_counter()
        for params in distinct.values():
            evaluate_design(study, layers, params)
        direct_s = time.perf_counter() - t1
    per_min = len(done) / sweep_s * 60
    print(f"{name}: {len(done)} trials ({len(distinct)} distinct designs) in {sweep_s:.1f} s = "
          f"{per_min:.1f} trials/min; 100 trials ~ {100 / per_min:.1f} min")
    print(f"  baseline: the {len(distinct)} designs evaluated directly in {direct_s:.1f} s; "
          f"sweep / direct = {sweep_s / max(direct_s, 1e-9):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart-trials", type=int, default=40)
    ap.add_argument("--ar-trials", type=int, default=3)
    args = ap.parse_args()
    bench("quickstart", args.quickstart_trials)
    bench("ar_glasses", args.ar_trials)


if __name__ == "__main__":
    main()
