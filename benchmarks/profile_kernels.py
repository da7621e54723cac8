"""Where the compiled cost-model kernels spend their time, per source line: a sampling profile of
``costmodel.count_kernel.count``, ``costmodel.latency_kernel.latency`` and
``costmodel.energy_kernel.totals`` while ``evaluate_batch`` runs on a batch of random mappings.

Why: each kernel is one large compiled function, and its speed follows the shape of its machine
code more than its operation count (docs/costmodel.md), so guessing from the source misleads.
This samples the instruction pointer with ``perf`` (the cpu-clock event works in a virtual
machine without hardware counters), compiles the kernels with line tables
(``NUMBA_DEBUGINFO=1``, into a private cache so the normal one is untouched), and maps each
sample through the object code's line table (``objdump -l``) to a line of the kernel's module,
then sums the lines per function of the module (the helpers the kernel inlines get their own rows).

    python benchmarks/profile_kernels.py [--config tpu_like] [--n 50000] [--top 40]

Needs ``perf`` and ``objdump`` (Linux) and reads numba's compiled object
(``CodeLibrary._get_compiled_object``, numba 0.68): a development tool, not part of the package.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {"count": "count_kernel", "latency": "latency_kernel", "totals": "energy_kernel"}  # function -> module


def child(args: argparse.Namespace, out: Path) -> None:
    """Runs under perf: compiles the kernels, saves their object code and addresses, evaluates."""
    sys.path.insert(0, str(ROOT))
    import importlib
    import warnings

    from bench_costmodel import LAYERS
    from numba.core.errors import NumbaDebugInfoWarning

    warnings.simplefilter("ignore", NumbaDebugInfoWarning)  # numba's own helpers have no source

    from costmodel.arch import load_architecture
    from costmodel.evaluate import evaluate_batch
    from costmodel.random_mappings import random_mappings

    prob, arch = LAYERS[args.layer], load_architecture(args.config)
    batch = random_mappings(prob, arch, args.n, seed=args.seed)
    evaluate_batch(prob, arch, batch)
    meta = {}
    for fn, module in KERNELS.items():
        kernel = getattr(importlib.import_module(f"costmodel.{module}"), fn)
        cres = kernel.overloads[kernel.signatures[0]]
        name = cres.fndesc.llvm_func_name
        (out / f"{fn}.o").write_bytes(cres.library._get_compiled_object())
        meta[fn] = {"name": name, "addr": cres.library.get_pointer_to_function(name)}
    (out / "meta.json").write_text(json.dumps(meta))
    for _ in range(args.repeats):
        evaluate_batch(prob, arch, batch)


def line_table(obj: Path, name: str, source: str) -> tuple[int, list[int], list[int]]:
    """The function's size and, per instruction offset (sorted), its line of ``source`` (0: none)."""
    size = next(int(f.split()[4], 16) for f in subprocess.run(["objdump", "-t", str(obj)], capture_output=True,
                                                                 text=True, check=True).stdout.splitlines()
                if f.endswith(" " + name))
    dis = subprocess.run(["objdump", "-d", "-l", "-j", ".ltext", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    offs, lines, cur = [], [], 0
    for text in dis.splitlines():
        if m := re.match(r"^/\S+:(\d+)", text):
            cur = int(m.group(1)) if text.split(":")[0].endswith(source) else 0
        elif m := re.match(r"^\s+([0-9a-f]+):\t", text):
            offs.append(int(m.group(1), 16))
            lines.append(cur)
    return size, offs, lines


def enclosing_defs(src: list[str]) -> dict[int, str]:
    """Line number -> the top-level function it belongs to: the kernels inline their helpers, so
    this is how a sample of the one compiled function is split into its parts."""
    out, cur = {}, "(module)"
    for i, text in enumerate(src, 1):
        if m := re.match(r"def (\w+)", text):
            cur = m.group(1)
        out[i] = cur
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="tpu_like")
    ap.add_argument("--layer", default="resnet50_conv2_3x3")
    ap.add_argument("--n", type=int, default=50_000, help="mappings per batch")
    ap.add_argument("--repeats", type=int, default=40, help="batches evaluated under perf")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top", type=int, default=30, help="lines to print per kernel")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args, Path(args.child))
        return
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        env = dict(os.environ, NUMBA_DEBUGINFO="1", NUMBA_CACHE_DIR=str(out / "numba"), OMP_NUM_THREADS="1")
        cmd = [sys.executable, __file__, "--child", tmp, "--config", args.config, "--layer", args.layer,
               "--n", str(args.n), "--repeats", str(args.repeats), "--seed", str(args.seed)]
        subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", str(out / "perf.data"), *cmd],
                       env=env, check=True)
        meta = json.loads((out / "meta.json").read_text())
        tables = {fn: line_table(out / f"{fn}.o", meta[fn]["name"], f"{KERNELS[fn]}.py") for fn in KERNELS}
        ips = [int(ip, 16) for ip in subprocess.run(["perf", "script", "-i", str(out / "perf.data"), "-F", "ip"],
                                                    capture_output=True, text=True, check=True).stdout.split()]
    print(f"{args.config}, {args.layer}, {args.n} mappings: {len(ips)} samples in all (with start-up and compiling)")
    for fn, (size, offs, lines) in tables.items():
        hits: collections.Counter[int] = collections.Counter()
        for ip in ips:
            off = ip - meta[fn]["addr"]
            if 0 <= off < size:
                hits[lines[bisect.bisect_right(offs, off) - 1]] += 1
        total = sum(hits.values())
        src = (ROOT / "costmodel" / f"{KERNELS[fn]}.py").read_text().splitlines()
        print(f"\n{fn} ({KERNELS[fn]}.py): {total} samples")
        for line, n in hits.most_common(args.top):
            text = src[line - 1].strip() if 0 < line <= len(src) else "(no line: inlined numba runtime code)"
            print(f"{100 * n / max(total, 1):5.1f} %  {line:4d}  {text[:100]}")
        owner, by_def = enclosing_defs(src), collections.Counter()
        for line, n in hits.items():
            by_def[owner.get(line, "(no line)")] += n
        print("by function (inlined helpers apart): " + ", ".join(
            f"{name} {100 * n / max(total, 1):.1f} %" for name, n in by_def.most_common()))


if __name__ == "__main__":
    main()
