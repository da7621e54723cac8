"""Trials per minute of ``dse sweep`` for the quickstart and the AR-glasses study.

For each study: run ``--trials`` trials into a fresh temporary folder (journal storage; one sweep
process with the study file's ``mapper.workers`` mapping layers in parallel, or ``--ar-workers N``
sweep processes with serial mapping), and report wall time, trials per minute (with the load
average: the machine is shared, so wall figures move with it) and the projection for 100 trials.
The models are exported and imported once before the clock starts (a fresh cache's one-time
export is printed separately). Then the same designs once more on the sweep's mapping database (the cost of a trial whose
searches are all answered by the database), and the baseline: the same designs evaluated directly
in this process (``evaluate_design``, no optuna, no storage, an empty mapping database, serial
mapping), whose CPU seconds per design give the projection for 100 trials on two idle cores
(CPU-s x 100 / 2), and whose ratio to the sweep is the sweep machinery's overhead.
Target (issue 7): 100 AR-glasses trials in under 10 minutes on 2 cores.

    python benchmarks/bench_sweep.py [--quickstart-trials 40] [--ar-trials 10] [--ar-workers 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dse.network.solve import worker_count
from dse.study.design import evaluate_design, load_layers
from dse.study.runner import run_study
from dse.study.schema import load_study


def _study_copy(name: str, tmp: Path, mapper_workers: int | None) -> Path:
    """The shipped study file, or a copy with another ``mapper.workers`` (models are zoo names and
    the hardware a shipped name, so the copy resolves the same)."""
    path = REPO / "studies" / f"{name}.yaml"
    if mapper_workers is None:
        return path
    import yaml

    doc = yaml.safe_load(path.read_text())
    doc["mapper"]["workers"] = mapper_workers
    copy = tmp / f"{name}.yaml"
    copy.write_text(yaml.safe_dump(doc, sort_keys=False))
    return copy


def bench(name: str, trials: int, workers: int = 1) -> None:
    workers = worker_count(workers)  # (as `dse sweep` caps them: what runs is reported)
    with tempfile.TemporaryDirectory() as tmp:
        path = _study_copy(name, Path(tmp), 1 if workers > 1 else None)
        t0 = time.perf_counter()
        layers = load_layers(load_study(path))  # a fresh cache exports the zoo models once: not the sweep's rate
        print(f"{name}: models exported (on a fresh cache) and imported in {time.perf_counter() - t0:.1f} s")
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        res = run_study(path, trials=trials, workers=workers, out=Path(tmp) / name)
        sweep_s = time.perf_counter() - t0
        done = res.optuna_study.get_trials()
        distinct = {tuple(sorted(t.params.items())): t.params for t in done if "same_as" not in t.user_attrs}
        study = res.study
        mapper_workers = study.spec.mapper.workers
        t2 = time.perf_counter()
        for params in distinct.values():  # every search answered by the sweep's mapping database
            evaluate_design(study, layers, params)
        cached_s = time.perf_counter() - t2
        study.output = Path(tmp) / "baseline"  # an empty mapping database: every search runs again
        study.spec.mapper.workers = 1  # in this process, so that process_time is all the CPU
        t1, c1 = time.perf_counter(), time.process_time()
        for params in distinct.values():
            evaluate_design(study, layers, params)
        direct_s, direct_cpu = time.perf_counter() - t1, time.process_time() - c1
    per_min = len(done) / sweep_s * 60
    cpu = direct_cpu / max(len(distinct), 1)
    print(f"{name}: {len(done)} trials ({len(distinct)} distinct designs) in {sweep_s:.1f} s = {per_min:.1f} "
          f"trials/min with {workers} sweep process(es), mapper.workers {mapper_workers}, budget "
          f"{study.spec.mapper.max_evaluations} (load average {load:.1f}); 100 trials ~ {100 / per_min:.1f} min")
    print(f"  baseline: the {len(distinct)} designs evaluated directly (serial) in {direct_s:.1f} s, "
          f"{cpu:.2f} CPU-s per design: 100 trials on 2 idle cores ~ {100 * cpu / 2 / 60:.1f} min; "
          f"sweep / direct = {sweep_s / max(direct_s, 1e-9):.2f}")
    print(f"  a design again, every search answered by the mapping database: {cached_s / max(len(distinct), 1):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart-trials", type=int, default=40)
    ap.add_argument("--ar-trials", type=int, default=10)
    ap.add_argument("--ar-workers", type=int, default=2, help="sweep processes, at most one per core (then "
                    "mapper.workers 1)")
    args = ap.parse_args()
    if args.quickstart_trials:
        bench("quickstart", args.quickstart_trials)
    if args.ar_trials:
        bench("ar_glasses", args.ar_trials, args.ar_workers)


if __name__ == "__main__":
    main()
