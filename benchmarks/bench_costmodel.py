"""Mapping evaluations per second of the vectorized cost model, single core.

For a ResNet-50 3x3 layer on two configs: draw 10^5 random valid mappings (seeded), evaluate them
in one batch (access counts + latency + energy: ``costmodel.evaluate.evaluate_batch``) as the
mappers call it (``check=False``: their batches are valid by construction), best of a few repeats,
in mappings per CPU-second; the same with the batch check a library caller gets by default
(``checked/s``); and, in the same process, the naive baseline of evaluating mappings one at a time
(a Python loop of batches of one) on a small sample. Prints the figures and their ratio, and the
rates of the two stages alone (access counts; latency + energy from given counts).

    python benchmarks/bench_costmodel.py [--n 100000] [--configs tpu_like eyeriss_like ...]

The machine it runs on is shared: compare the one-at-a-time ratio (same process, same
moment) rather than the absolute rates across runs.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # single core: set before numpy is imported

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from costmodel.analysis import access_counts
from costmodel.arch import load_architecture
from costmodel.energy import energy
from costmodel.evaluate import evaluate_batch
from costmodel.latency import latency
from costmodel.problem import conv2d
from costmodel.random_mappings import _take, random_mappings

LAYERS = {
    # ResNet-50 (He et al., CVPR 2016, Table 1) bottleneck 3x3 convs, padding 1
    "resnet50_conv2_3x3": conv2d(64, 64, 56, 56, kernel=3, padding=1),
    "resnet50_conv3_3x3": conv2d(128, 128, 28, 28, kernel=3, padding=1),
}


def best_of(fn, repeats: int) -> float:
    """Least CPU time of this process over ``repeats`` runs: on a shared machine wall time also
    counts the waits for a core; with one thread, CPU time is what the work costs."""
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return max(min(times), 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="mappings per batch")
    ap.add_argument("--sample", type=int, default=300, help="mappings for the one-at-a-time baseline")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--configs", nargs="+", default=["tpu_like", "eyeriss_like", "tiny", "eyeriss_timeloop_32nm"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; target 1,000,000 evals/s")
    print(f"{'config':24s} {'layer':20s} {'batch':>8s} {'batch eval/s':>14s} {'checked/s':>12s} {'counts only/s':>14s} "
          f"{'lat+energy/s':>14s} {'one-at-a-time/s':>16s} {'ratio':>7s} {'>=1M':>5s}")
    for cfg in args.configs:
        arch = load_architecture(cfg)
        for name, prob in LAYERS.items():
            batch = random_mappings(prob, arch, args.n, seed=args.seed)
            evaluate_batch(prob, arch, _take(batch, slice(0, 1000)))  # warm the per-problem tables
            t_full = best_of(lambda p=prob, a=arch, b=batch: evaluate_batch(p, a, b, check=False), args.repeats)
            t_checked = best_of(lambda p=prob, a=arch, b=batch: evaluate_batch(p, a, b), args.repeats)
            t_counts = best_of(lambda p=prob, a=arch, b=batch: access_counts(p, a, b, check=False), args.repeats)
            acc = access_counts(prob, arch, batch)

            def lat_energy(p=prob, a=arch, b=batch, c=acc) -> None:
                energy(a, c, latency(p, a, b, c).total / a.clock_hz)

            t_rest = best_of(lat_energy, args.repeats)
            singles = [_take(batch, slice(i, i + 1)) for i in range(min(args.sample, args.n))]

            def one_at_a_time(p=prob, a=arch, bs=singles) -> None:
                for b in bs:
                    evaluate_batch(p, a, b, check=False)

            t_naive = best_of(one_at_a_time, 1) / len(singles)
            rate, naive = args.n / t_full, 1.0 / t_naive
            print(f"{cfg:24s} {name:20s} {args.n:8d} {rate:14,.0f} {args.n / t_checked:12,.0f} {args.n / t_counts:14,.0f} "
                  f"{args.n / t_rest:14,.0f} {naive:16,.0f} {rate / naive:7.0f}x {'yes' if rate >= 1e6 else 'no':>5s}",
                  flush=True)


if __name__ == "__main__":
    main()
