"""Mapper benchmark. Four modes:

* default, per zoo model and config: ``dse.network.map_model`` with the fast mapper (no mapping
  database, ``--workers`` processes, the pool kept across models): wall seconds, mappings evaluated,
  evaluations per wall second, total energy / latency / EDP; then the total wall time and the
  ResNet-18-on-tpu_like wall time against the targets (issue 4: all zoo models on all configs in
  under 2 minutes on 2 cores; ResNet-18 on tpu_like under 5 s). Model import is excluded.
* ``--per-layer``: for each distinct MAC layer shape (``n`` = how many layers share it) the search
  seconds, evaluations, evaluations per second, the EDP and utilization found, and the ratio to a
  baseline run in the same process: the best EDP of as many random valid mappings, drawn from the
  same mapspace (constraints honoured), as the fast mapper evaluated.
* ``--quality``: for each layer of a set of small-to-medium layers and each config, the exhaustive
  mapper (``--exhaustive-limit`` seconds each; a result that hit the limit is marked incomplete and
  left out of the statistics) against the fast mapper with the default budget: each EDP ratio, and
  the geometric mean and the worst.

    python benchmarks/bench_mapper.py [--models resnet18 ...] [--configs tpu_like ...] [--workers 2]
    python benchmarks/bench_mapper.py --per-layer [--models resnet18] [--configs tpu_like] [--evals 20000]
    python benchmarks/bench_mapper.py --quality [--configs tiny eyeriss_like] [--exhaustive-limit 60]
    python benchmarks/bench_mapper.py --zigzag [--workers 2]

* ``--zigzag``: only the comparison with ZigZag (``benchmarks/zigzag_compare.py``): both tools map
  ZigZag's own ResNet-18 ONNX file, ZigZag onto its shipped TPU-like config, accel-dse onto ours;
  CPU and wall seconds, evaluations, and the ratios. The default mode runs it after the grid when
  ``zigzag-dse`` is importable (``pip install -e ".[bench]"``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import importlib.util
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import zigzag_compare  # benchmarks/ is not a package: found through the path line above

from costmodel.arch import HWCONFIGS, load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate_batch
from costmodel.problem import conv2d, depthwise_conv2d, fully_connected, matmul
from dse.mappers import map_layer
from dse.mapspace import Mapspace

QUALITY_LAYERS = {
    # small-to-medium layers of the kinds in the zoo (shapes chosen to keep the exhaustive mapper
    # tractable): pointwise, 3x3, 7x7, strided, depthwise, matmul, attention (batched), fully connected
    "pw_16_16_8": conv2d(16, 16, 8, 8, kernel=1),
    "pw_32_16_7": conv2d(32, 16, 7, 7, kernel=1),
    "pw_8_32_14": conv2d(8, 32, 14, 14, kernel=1),
    "pw_s2_16_32_8": conv2d(16, 32, 8, 8, kernel=1, stride=2),
    "pw_64_64_4": conv2d(64, 64, 4, 4, kernel=1),
    "c3_8_8_8": conv2d(8, 8, 8, 8, kernel=3, padding=1),
    "c3_16_16_6": conv2d(16, 16, 6, 6, kernel=3, padding=1),
    "c3_4_16_10": conv2d(4, 16, 10, 10, kernel=3),
    "c3_s2_8_16_9": conv2d(8, 16, 9, 9, kernel=3, stride=2),
    "c3_s2_16_16_8": conv2d(16, 16, 8, 8, kernel=3, stride=2, padding=1),
    "c3_32_32_4": conv2d(32, 32, 4, 4, kernel=3, padding=1),
    "c3_dil2_8_8_8": conv2d(8, 8, 8, 8, kernel=3, padding=2, dilation=2),
    "c7_s2_3_16_16": conv2d(3, 16, 16, 16, kernel=7, stride=2, padding=3),
    "c7_3_8_10": conv2d(3, 8, 10, 10, kernel=7, padding=3),
    "c5_4_8_8": conv2d(4, 8, 8, 8, kernel=5, padding=2),
    "c1d_16_16_32": conv2d(16, 16, 1, 32, kernel=(1, 5), padding=(0, 2)),
    "dw3_16_8": depthwise_conv2d(16, 8, 8, kernel=3, padding=1),
    "dw3_32_7": depthwise_conv2d(32, 7, 7, kernel=3, padding=1),
    "dw3_s2_16_10": depthwise_conv2d(16, 10, 10, kernel=3, stride=2),
    "dw5_8_8": depthwise_conv2d(8, 8, 8, kernel=5, padding=2),
    "grp4_16_16_6": conv2d(16, 16, 6, 6, kernel=3, padding=1, groups=4),
    "mm_16_16_16": matmul(16, 16, 16),
    "mm_32_8_32": matmul(32, 8, 32),
    "mm_8_64_16": matmul(8, 64, 16),
    "mm_64_16_8": matmul(64, 16, 8),
    "attn_qk_b4_16_8": matmul(16, 8, 16, batch=4),
    "attn_pv_b4_16_16": matmul(16, 16, 8, batch=4),
    "attn_qk_b2_32_16": matmul(32, 16, 32, batch=2),
    "fc_64_32": fully_connected(64, 32),
    "fc_128_10_r4": fully_connected(128, 10, rows=4),
}


def _map_one(args):
    problem, cfg, evals, seed = args
    arch = load_architecture(cfg)
    try:
        r = map_layer(problem, arch, mapper="fast", seed=seed, max_evaluations=evals)
    except UserError as exc:
        return None, str(exc)
    return (r.metrics, r.mappings_evaluated, r.search_seconds), None


def _random_edp(problem, arch, n, seed):
    """Best EDP of ``n`` random valid mappings drawn from the same mapspace (constraints honoured)."""
    ms = Mapspace(problem, arch)
    rng = np.random.default_rng(seed)
    best = (math.inf, math.nan, math.nan)
    done = 0
    for _ in range(50):
        rows = ms.tiling_rows_at(rng.integers(0, ms.num_tilings, size=max(n, 1024)))
        fit = ms.capacity_ok(*ms.decode(rows))
        keep = (rng.random(fit.shape) * fit).argmax(axis=1)
        ok = np.nonzero(fit.any(axis=1))[0][: n - done]
        if ok.size:
            ranks = np.argsort(rng.random((ok.size, ms.n_levels, len(ms.dims))), axis=2).argsort(axis=2)
            ev = evaluate_batch(problem, arch, ms.batch(rows[ok], ranks, keep[ok]), check=False)
            i = int(ev.edp.argmin())
            if ev.edp[i] < best[0]:
                best = (float(ev.edp[i]), float(ev.energy_pj[i]), float(ev.latency_s[i]))
            done += ok.size
        if done >= n:
            break
    return best[1], best[2]


def per_layer(models, configs, evals, baseline):
    """Each distinct layer shape of each model: search seconds, evaluations, rate, EDP, baseline."""
    from dse import workloads

    print(f"{'model':<16} {'config':<20} {'layer shape':<44} {'n':>3} {'search s':>8} {'evals':>7} "
          f"{'evals/s':>8} {'EDP pJ*s':>10} {'util':>5} {'rand/fast':>9}")
    for model in models:
        w = workloads.load(model)
        counts = Counter(layer.problem for layer in w.mac_layers())
        for cfg in configs:
            arch = load_architecture(cfg)
            tot_s = tot_e = 0.0
            ratios = []
            for p, n in counts.items():
                res, err = _map_one((p, cfg, evals, 0))
                if res is None:
                    print(f"{model:<16} {cfg:<20} {p.describe():<44} {n:>3} no mapping: {err}", flush=True)
                    continue
                metrics, used, secs = res
                tot_s, tot_e = tot_s + secs, tot_e + used
                ratio = math.nan
                if baseline:
                    e, lat = _random_edp(p, arch, used, 0)
                    ratio = e * lat / metrics["edp"]
                    ratios.append(ratio)
                print(f"{model:<16} {cfg:<20} {p.describe():<44} {n:>3} {secs:>8.2f} {used:>7} {used / secs:>8.0f} "
                      f"{metrics['edp']:>10.3e} {metrics['utilization']:>5.0%} {ratio:>9.2f}", flush=True)
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else math.nan
            print(f"== {model} on {cfg}: {len(counts)} shapes, {tot_s:.2f} s searching, {tot_e:.0f} evaluations "
                  f"({tot_e / max(tot_s, 1e-9):.0f}/s); random-sampling baseline EDP / fast EDP, geomean {geo:.2f}",
                  flush=True)


def grid(models, configs, workers):
    """Every model on every config through map_model: the whole-network speed figures."""
    import time

    from dse import workloads
    from dse.network import map_model

    print(f"start {time.strftime('%H:%M:%S UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'model':<20} {'config':<22} {'wall s':>7} {'evals':>9} {'evals/s':>9} {'energy uJ':>11} "
          f"{'latency ms':>11} {'EDP pJ*s':>11}")
    total, walls, evals = 0.0, {}, Counter()
    for model in models:
        wl = workloads.load(model)
        for cfg in configs:
            arch = load_architecture(cfg)
            t = time.perf_counter()
            try:
                res = map_model(wl, arch, workers=workers, db=False, progress=False)
            except UserError as exc:
                print(f"{model:<20} {cfg:<22} no mapping: {exc}", flush=True)
                continue
            wall = time.perf_counter() - t
            total += wall
            walls[(model, cfg)] = wall
            tot = res.totals
            ev = tot["mappings_evaluated"]
            evals[cfg] += ev
            print(f"{model:<20} {cfg:<22} {wall:7.2f} {ev:9,} {ev / wall:9,.0f} {tot['energy_pj'] * 1e-6:11.4g} "
                  f"{tot['latency_s'] * 1e3:11.4g} {tot['edp']:11.4g}", flush=True)
    for cfg in configs:
        wall = sum(w for (_, c), w in walls.items() if c == cfg)
        if wall:
            print(f"config {cfg:<22} {wall:7.1f} s wall {evals[cfg]:10,} evals {evals[cfg] / wall:9,.0f} evals/s")
    print(f"end {time.strftime('%H:%M:%S UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}")
    print(f"total: {total:.1f} s wall for {len(walls)} (model, config) pairs on {workers} workers "
          f"(target for all zoo models on all configs: 120 s)")
    if ("resnet18", "tpu_like") in walls:
        print(f"resnet18 on tpu_like: {walls[('resnet18', 'tpu_like')]:.2f} s wall (target: 5 s)")


def quality(configs, limit):
    print(f"{'layer':<20} {'config':<22} {'fast/opt':>9} {'exh s':>7} {'exh evals':>10} {'fast s':>7} complete")
    for cfg in configs:
        arch = load_architecture(cfg)
        ratios = []
        for name, p in QUALITY_LAYERS.items():
            try:
                fast = map_layer(p, arch, mapper="fast")
                ex = map_layer(p, arch, mapper="exhaustive", time_limit_s=limit)
            except UserError as exc:
                print(f"{name:<20} {cfg:<22} no mapping: {exc}")
                continue
            r = fast.metrics["edp"] / ex.metrics["edp"]
            done = bool(ex.stats.get("complete", 1))
            if done:
                ratios.append(r)
            print(f"{name:<20} {cfg:<22} {r:>9.4f} {ex.search_seconds:>7.1f} {ex.mappings_evaluated:>10} "
                  f"{fast.search_seconds:>7.2f} {'yes' if done else 'NO (limit)'}", flush=True)
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            print(f"== {cfg}: {len(ratios)} layers proven optimal; fast/optimum EDP geomean {geo:.4f}, "
                  f"worst {max(ratios):.4f}", flush=True)


def main() -> None:
    from dse import workloads

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="*", default=None, help="default: every zoo model (per layer: resnet18)")
    ap.add_argument("--configs", nargs="*", default=None,
                    help="default: every config (per layer: tpu_like; quality: tiny); 'all' = every config")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--evals", type=int, default=20_000, help="per-layer mode: the fast mapper's budget")
    ap.add_argument("--no-baseline", action="store_true", help="per-layer mode: skip the random baseline")
    ap.add_argument("--per-layer", action="store_true")
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--exhaustive-limit", type=float, default=60.0)
    ap.add_argument("--zigzag", action="store_true", help="only the comparison with ZigZag")
    args = ap.parse_args()
    every = sorted(q.stem for q in HWCONFIGS.glob("*.yaml"))
    if args.configs == ["all"]:
        args.configs = every
    if args.quality:
        quality(args.configs or ["tiny"], args.exhaustive_limit)
    elif args.per_layer:
        per_layer(args.models or ["resnet18"], args.configs or ["tpu_like"], args.evals, not args.no_baseline)
    elif not args.zigzag:
        grid(args.models or workloads.names(), args.configs or every, args.workers)
    if args.zigzag or not (args.quality or args.per_layer):
        if importlib.util.find_spec("zigzag") is None:
            print('zigzag-dse is not installed (pip install -e ".[bench]"): no ZigZag time ratio')
        else:
            zigzag_compare.compare(args.workers)


if __name__ == "__main__":
    main()
