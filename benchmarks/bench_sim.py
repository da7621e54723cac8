"""Simulated MACs per second of the functional simulator on a large conv, single core.

A ResNet 3x3 layer, 56x56x64 -> 64, pad 1, as a hand-tiled program for the default 16x16 target
(all four input-channel blocks and all weights resident in SPAD; 7-row output tiles ping-ponging
between two ACC halves, with LD->EX, EX->ST and ST->EX tokens). The whole program runs through
``compiler.sim.simulate`` (decode checks, race detection and timing included), best of a few repeats,
and the output is checked against numpy. In the same process, the naive baseline: the same GEMM
semantics executed one output row at a time (a Python loop over taps and pixels, one 16x16 dot each)
on one instruction, extrapolated per MAC. Prints both figures and their ratio.

    python benchmarks/bench_sim.py [--repeats 3]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # single core: set before numpy is imported

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compiler.isa import Buffer, Elem, Engine, Finish, Gemm, Load, Reg, SetReg, Store
from compiler.isa.program import IOTensor, Program
from compiler.sim import kernels, simulate
from compiler.target import Target

L = 16
H = W = 56
C = K = 64
ROWS_PER_TILE = 7


def conv_program(w: np.ndarray) -> tuple[Program, np.ndarray]:
    """The tiled 3x3/pad 1 conv program, and the weight tiles it loads (for the naive baseline)."""
    cb, kb, hp, wp = C // L, K // L, H + 2, W + 2
    # weight tile (cin block i, cout block j, tap t): row = input channel, lane = output channel
    tiles = w.reshape(kb, L, cb, L, 9).transpose(2, 0, 4, 3, 1).astype(np.int8)  # [i, j, t, cin, cout]
    consts = tiles.tobytes()
    x_io = IOTensor("x", "input", "int8", (1, C, H, W), "NCHWc16", len(consts))
    y_io = IOTensor("y", "output", "int32", (1, K, H, W), "NCHWc16", x_io.addr + C * H * W)
    w_base = cb * hp * wp
    insns: list = [SetReg(engine=Engine.LD, reg=Reg.PADVAL, value=0)]
    for i in range(cb):  # input block i: DRAM (h, w) vectors, padded by 1 on chip
        insns.append(Load(buf=Buffer.SPAD, sram=i * hp * wp, y_size=H, x_size=W, x_pad0=1, x_pad1=1, y_pad0=1,
                          y_pad1=1, dram_addr=x_io.addr + i * H * W * L, dram_pitch=W * L))
    insns.append(Load(buf=Buffer.SPAD, sram=w_base, y_size=cb * kb * 9 * L, dram_addr=0, dram_pitch=L,
                      push_next=True))
    m = ROWS_PER_TILE * W
    n_tiles = (H // ROWS_PER_TILE) * kb
    tile = 0
    for r0 in range(0, H, ROWS_PER_TILE):
        for j in range(kb):
            half = (tile % 2) * m
            for i in range(cb):
                first, last = i == 0, i == cb - 1
                insns.append(Gemm(pop_prev=tile == 0 and first, pop_next=tile >= 2 and first, push_next=last,
                                  loadw=True, acc=not first, a_base=i * hp * wp + r0 * wp,
                                  w_base=w_base + (i * kb + j) * 9 * L, c_base=half, mx=W, my=ROWS_PER_TILE,
                                  l0=3, l1=3, a_sx=1, a_sy=wp, a_s0=1, a_s1=wp))
            insns.append(Store(pop_prev=True, push_prev=tile < n_tiles - 2, buf=Buffer.ACC, elem=Elem.B32,
                               sram=half, y_size=ROWS_PER_TILE, x_size=W,
                               dram_addr=y_io.addr + ((j * H + r0) * W) * L * 4, dram_pitch=W * L * 4))
            tile += 1
    insns.append(Finish())
    program = Program(instructions=insns, constants=consts, io=[x_io, y_io], dram_size=y_io.addr + K * H * W * 4)
    return program, tiles


def numpy_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # [c, h, w, r, s]
    return np.einsum("chwrs,kcrs->khw", win, w.astype(np.float64), optimize=True).astype(np.int64)[None]


def naive_gemm_seconds_per_mac(spad: np.ndarray, weights: np.ndarray, walk: np.ndarray) -> float:
    """One GEMM instruction's semantics, one (tap, pixel) row at a time."""
    acc = np.zeros((walk.shape[1], L), np.int64)
    t0 = time.perf_counter()
    for t in range(walk.shape[0]):
        w = weights[t].astype(np.int64)
        for p in range(walk.shape[1]):
            acc[p] += spad[walk[t, p]].astype(np.int64) @ w
    return (time.perf_counter() - t0) / (walk.size * L * L)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, C, H, W)).astype(np.int8)
    w = rng.integers(-128, 128, (K, C, 3, 3)).astype(np.int8)
    program, tiles = conv_program(w)
    target = Target()
    macs = H * W * K * C * 9
    best = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        result = simulate(program, {"x": x}, arch=target)
        best = min(best, time.perf_counter() - t0)
    assert result.macs == macs
    assert np.array_equal(result.outputs["y"], numpy_conv(x, w)), "simulated conv differs from numpy"
    rate = macs / best

    spad = rng.integers(-128, 128, (target.spad_rows, L)).astype(np.int8)
    walk = kernels.walk(0, W, ROWS_PER_TILE, 3, 3, 1, W + 2, 1, W + 2)
    naive = 1.0 / naive_gemm_seconds_per_mac(spad, tiles[0, 0], walk)
    print(f"conv 3x3 {H}x{W}x{C} -> {K}, pad 1, {target.rows}x{target.cols} array: {macs / 1e6:.1f} M MACs, "
          f"{len(program.instructions)} instructions, {result.cycles:,} simulated cycles "
          f"({result.gemm_timing} GEMM timing, utilization {result.utilization:.1%})")
    print(f"simulator: {best:.3f} s per run = {rate:.3g} MAC/s (target >= 1e9)")
    print(f"naive per-row baseline: {naive:.3g} MAC/s; speed-up {rate / naive:.0f}x")


if __name__ == "__main__":
    main()
