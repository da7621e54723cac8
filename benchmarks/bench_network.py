"""Whole-network mapping benchmark: ``dse.network.map_model`` per zoo model and config.

For each model and config it prints the wall seconds of ``map_model`` (fast mapper, no mapping
database, ``--workers`` processes; model import excluded and printed apart), the cost-model
evaluations of the searches, evaluations per wall second, and the network's total energy, latency
and EDP; then the time of a second, database-answered run; then the grand total. Targets (issue 4):
ResNet-18 on tpu_like under 5 s wall on 2 cores; all zoo models on all configs under 2 minutes.

    python benchmarks/bench_network.py [--models resnet18] [--configs tpu_like] [--workers 2]

The comparison with ZigZag on its own ResNet-18 is ``python benchmarks/bench_mapper.py --zigzag``
(with ``pip install -e ".[bench]"``).
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CONFIGS = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "hwconfigs").glob("*.yaml"))


def main() -> None:
    from dse import workloads
    from dse.api import load_hw
    from dse.network import map_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=workloads.names())
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=None,
                    help="Safety net: the fast mapper's time_limit_s per layer (results then depend on "
                         "machine speed for layers that hit it; those are counted in the 'cut' column).")
    args = ap.parse_args()

    print(f"{'model':<20} {'config':<22} {'load s':>7} {'map s':>7} {'evals':>9} {'evals/s':>9} "
          f"{'energy uJ':>11} {'latency ms':>11} {'EDP pJ*s':>11} {'db s':>6} {'cut':>4}")
    opts = {"time_limit_s": args.time_limit} if args.time_limit else {}
    total_map = total_load = 0.0
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            t = time.perf_counter()
            wl = workloads.load(model)
            load_s = time.perf_counter() - t
            total_load += load_s
            for cfg in args.configs:
                arch = load_hw(cfg)
                db = Path(tmp) / f"{model}-{cfg}.sqlite"
                t = time.perf_counter()
                try:
                    res = map_model(wl, arch, seed=args.seed, workers=args.workers, db=db, progress=False, **opts)
                except Exception as exc:  # noqa: BLE001 -- a benchmark reports and goes on
                    failures.append(f"{model} on {cfg}: {exc}")
                    continue
                map_s = time.perf_counter() - t
                total_map += map_s
                t = time.perf_counter()
                again = map_model(wl, arch, seed=args.seed, workers=args.workers, db=db, progress=False, **opts)
                db_s = time.perf_counter() - t
                assert again.totals["energy_pj"] == res.totals["energy_pj"] and again.searched == 0
                tot = res.totals
                ev = tot["mappings_evaluated"]
                cut = sum(1 for x in res.layers if args.time_limit and x.search_seconds >= args.time_limit)
                print(f"{model:<20} {cfg:<22} {load_s:7.2f} {map_s:7.2f} {ev:9,} {ev / map_s:9,.0f} "
                      f"{tot['energy_pj'] * 1e-6:11.4g} {tot['latency_s'] * 1e3:11.4g} {tot['edp']:11.4g} "
                      f"{db_s:6.2f} {cut:4}", flush=True)
                load_s = 0.0
    print(f"total: {total_map:.1f} s mapping ({len(args.models)} models x {len(args.configs)} configs, "
          f"{args.workers} workers), {total_load:.1f} s importing the models")
    for f in failures:
        print(f"failed: {f}")


if __name__ == "__main__":
    main()
