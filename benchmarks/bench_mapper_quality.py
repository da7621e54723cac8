"""Mapper quality: the exhaustive mapper's proven optimum against the fast mapper, on every config.

For each layer of the quality set (``QUALITY_LAYERS`` of bench_mapper.py: 30 small-to-medium
layers -- conv 1x1/3x3/5x5/7x7, strided, dilated, grouped, depthwise, 1-D, matmul, attention QK^T /
PV, fully connected) and each config, it runs the fast mapper (``map_layer(mapper="fast")``, default
budget, seed 0) and then the exhaustive mapper seeded with the fast result as its incumbent, with a
per-layer time limit. A layer whose exhaustive search finished is *proven*: its optimum is the
mapspace's. It prints one line per (layer, config), then per config: layers proven, exhaustive
seconds (total and max), the fast mapper's EDP gap to the optimum (geometric mean and worst, over
the proven layers), and an overall line. ``--variants`` runs the fast mapper once per variant, each
a comma-separated list of its options (``max_evaluations=10000,width=16``; ``default`` for none): one
``fast/opt`` column and one gap figure each, and the best of them seeds the exhaustive search. With
``--optima``, a re-run that only compares variants costs the fast searches and the unproven layers'
``--limit`` seconds.

    python benchmarks/bench_mapper_quality.py [--configs tpu_like ...] [--layers pw_16_16_8 ...]
        [--limit 60] [--optima optima.json] [--quiet] [--variants default max_evaluations=10000]

``--optima FILE`` caches proven optima (keyed by layer, config fingerprint and objective), so that
re-runs that only change the fast mapper skip the exhaustive searches; a cached entry is used only
if it came from a complete search. The cache is written atomically after every new proof.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mapper import QUALITY_LAYERS

from costmodel.arch import HWCONFIGS, load_architecture
from costmodel.atomic import atomic_write_text
from costmodel.errors import UserError
from dse.mappers import map_layer
from dse.mappers.exhaustive import exhaustive_map
from dse.mapspace import Mapspace


def _load(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    return json.loads(path.read_text())


def _score(res) -> float:
    """The objective's (log-domain) score of a result."""
    return float(res.objective.score(res.metrics["energy_pj"], res.metrics["latency_cycles"]))


def _geo(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def _options(variant: str) -> dict[str, int | float]:
    """``key=value,...`` as fast-mapper keyword options (numbers); ``default`` is none."""
    if variant == "default":
        return {}
    pairs = [kv.split("=", 1) for kv in variant.split(",")]
    return {k: (float(v) if "." in v else int(v)) for k, v in pairs}


def _gaps(gaps: dict[str, list[float]], secs: dict[str, float]) -> str:
    """Per fast-mapper variant: geometric mean and worst gap over the proven layers, search seconds."""
    return "; ".join(f"{v}: geomean {(_geo(g) - 1) * 100:+.3f} %, worst "
                     f"{(max(g, default=math.nan) - 1) * 100:+.3f} %, {secs[v]:.1f} s" for v, g in gaps.items())


def run(configs: list[str], layers: list[str], limit: float, objective: str, optima_path: Path | None,
        quiet: bool, variants: list[str]) -> None:
    optima = _load(optima_path)
    options = {v: _options(v) for v in variants}
    overall_gaps: dict[str, list[float]] = {v: [] for v in variants}
    overall_secs = dict.fromkeys(variants, 0.0)
    overall = {"proven": 0, "total": 0, "seconds": 0.0}
    summary = []
    if not quiet:
        heads = " ".join(f"{f'v{i}/opt':>9}" for i in range(len(variants)))
        print("  ".join(f"v{i} = {v}" for i, v in enumerate(variants)))
        print(f"{'layer':<20} {'config':<22} {heads} {'exh s':>7} {'exh evals':>10} {'v0 s':>7} proven")
    for cfg in configs:
        arch = load_architecture(cfg)
        gaps: dict[str, list[float]] = {v: [] for v in variants}
        fast_secs = dict.fromkeys(variants, 0.0)
        proven = 0
        ex_secs: list[float] = []
        for name in layers:
            p = QUALITY_LAYERS[name]
            key = f"{name}|{p.describe()}|{arch.fingerprint()}|{objective}"
            try:
                fasts = [map_layer(p, arch, objective, mapper="fast", **options[v]) for v in variants]
                fast = min(fasts, key=_score)  # the best incumbent for the exhaustive search
                for v, f in zip(variants, fasts, strict=True):
                    fast_secs[v] += f.search_seconds
            except UserError as exc:
                print(f"{name:<20} {cfg:<22} no mapping: {exc}", flush=True)
                continue
            cached = optima.get(key)
            if cached is not None:
                opt, secs, evals, done = cached["score"], cached["seconds"], cached["evaluations"], True
            else:
                ex = exhaustive_map(p, arch, objective, mapspace=Mapspace(p, arch), incumbent=fast,
                                    time_limit_s=limit)
                done = bool(ex.stats.get("complete", 0))
                opt = _score(ex)
                secs, evals = ex.search_seconds, ex.mappings_evaluated
                if done and optima_path is not None:
                    optima[key] = {"score": opt, "seconds": secs, "evaluations": evals}
                    atomic_write_text(optima_path, json.dumps(optima, indent=1, sort_keys=True))
            ratios = [math.exp(_score(f) - opt) for f in fasts]  # scores are logs: for EDP, the EDP ratio
            ex_secs.append(secs)
            if done:
                proven += 1
                for v, r in zip(variants, ratios, strict=True):
                    gaps[v].append(r)
            if not quiet:
                cols = " ".join(f"{r:>9.4f}" for r in ratios)
                print(f"{name:<20} {cfg:<22} {cols} {secs:>7.1f} {evals:>10} {fasts[0].search_seconds:>7.2f} "
                      f"{'yes' if done else 'NOT PROVEN (limit)'}", flush=True)
        line = (f"== {cfg}: {proven}/{len(layers)} proven; exhaustive {sum(ex_secs):.1f} s total, "
                f"max {max(ex_secs, default=0):.1f} s; fast EDP gap vs optimum: {_gaps(gaps, fast_secs)}")
        print(line, flush=True)
        summary.append(line)
        for v in variants:
            overall_gaps[v] += gaps[v]
            overall_secs[v] += fast_secs[v]
        overall["proven"] += proven
        overall["total"] += len(layers)
        overall["seconds"] += sum(ex_secs)
    print("\n".join(summary))
    print(f"== overall: {overall['proven']}/{overall['total']} (layer, config) pairs proven; exhaustive "
          f"{overall['seconds']:.1f} s; fast EDP gap {_gaps(overall_gaps, overall_secs)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="*", default=None, help="default: every shipped config")
    ap.add_argument("--layers", nargs="*", default=None, help="default: the whole quality set")
    ap.add_argument("--limit", type=float, default=60.0, help="exhaustive seconds per layer")
    ap.add_argument("--objective", default="edp")
    ap.add_argument("--optima", type=Path, default=None, help="JSON cache of proven optima")
    ap.add_argument("--quiet", action="store_true", help="only the per-config and overall lines")
    ap.add_argument("--variants", nargs="*", default=["default"],
                    help="fast-mapper options to compare, e.g. max_evaluations=10000,width=16 (default: none)")
    args = ap.parse_args()
    configs = args.configs or sorted(q.stem for q in HWCONFIGS.glob("*.yaml"))
    layers = args.layers or list(QUALITY_LAYERS)
    unknown = [n for n in layers if n not in QUALITY_LAYERS]
    if unknown:
        sys.exit(f"unknown layers {unknown}; known: {list(QUALITY_LAYERS)}")
    t = time.perf_counter()
    run(configs, layers, args.limit, args.objective, args.optima, args.quiet, args.variants)
    print(f"wall {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
