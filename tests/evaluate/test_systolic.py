"""Systolic compute cycles against an independent wavefront timing model of SCALE-Sim's folds.

The reference below does not use the closed form: it places every MAC of a fold at the cycle the
skewed wavefronts reach it (``reference/scalesim-notes.md`` section 4: WS/IS preload the stationary
operand row by row for R cycles, then operand t reaches PE (i, j) at cycle t + i + j; OS has no
preload), takes the last event + 1 as the fold's length, and adds the folds of a tiling padded to
the full array, as SCALE-Sim does.
"""

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.latency import GemmView, gemm_view, scalesim_cycles, stream_length, systolic_cycles
from costmodel.mapping import MappingBatch
from costmodel.problem import conv2d, matmul


def reference_cycles(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    spread = {"WS": (k, n, m), "IS": (k, m, n), "OS": (m, n, k)}[dataflow]
    sr, sc, stream = spread
    preload = rows if dataflow in ("WS", "IS") else 0
    t, i, j = np.meshgrid(np.arange(stream), np.arange(rows), np.arange(cols), indexing="ij")
    fold = int((preload + t + i + j).max()) + 1
    total = 0
    for _r0 in range(0, sr, rows):  # padded folds: every fold uses the whole array's timing
        for _c0 in range(0, sc, cols):
            total += fold
    return total


@settings(max_examples=150, deadline=None)
@given(m=st.integers(1, 60), k=st.integers(1, 60), n=st.integers(1, 60), rows=st.integers(1, 12),
       cols=st.integers(1, 12), dataflow=st.sampled_from(["WS", "OS", "IS"]))
def test_closed_form_matches_wavefront_model(m, k, n, rows, cols, dataflow):
    assert scalesim_cycles(GemmView(m, k, n), rows, cols, dataflow) == \
        reference_cycles(m, k, n, rows, cols, dataflow)


def test_closed_form_hand_worked():
    # WS, 4x4 array, M=10, K=6, N=5: folds ceil(6/4)*ceil(5/4) = 4, each 2*4 + 4 + 10 - 2 = 20 -> 80
    assert scalesim_cycles(GemmView(10, 6, 5), 4, 4, "WS") == 80
    # OS: folds ceil(10/4)*ceil(5/4) = 6, each 4 + 4 + 6 - 2 = 12 -> 72
    assert scalesim_cycles(GemmView(10, 6, 5), 4, 4, "OS") == 72
    # IS: folds ceil(6/4)*ceil(10/4) = 6, each 2*4 + 4 + 5 - 2 = 15 -> 90
    assert scalesim_cycles(GemmView(10, 6, 5), 4, 4, "IS") == 90


def test_gemm_view_of_conv_and_matmul():
    c = conv2d(16, 32, 10, 10, kernel=3, n=2)  # P = Q = 8
    assert gemm_view(c) == GemmView(m=2 * 8 * 8, k=16 * 3 * 3, n=32, batch=1)
    g = conv2d(16, 32, 10, 10, kernel=3, groups=4)
    assert gemm_view(g) == GemmView(m=64, k=4 * 9, n=8, batch=4)
    assert gemm_view(matmul(7, 5, 3, batch=2)) == GemmView(m=7, k=5, n=3, batch=2)


def _one_level_batch(problem, temporal: dict, order: list, sx: dict, sy: dict) -> MappingBatch:
    """Two levels: level 0 holds all loops and the array is the fan-out below it."""
    dims = problem.dim_names
    tem = np.ones((1, 2, len(dims)), np.int64)
    spx, spy, rank = tem.copy(), tem.copy(), np.zeros_like(tem)
    for di, d in enumerate(dims):
        tem[0, 0, di] = temporal.get(d, 1)
        spx[0, 0, di] = sx.get(d, 1)
        spy[0, 0, di] = sy.get(d, 1)
    full = order + [d for d in dims if d not in order]
    for r, d in enumerate(full):
        rank[0, 0, dims.index(d)] = r
    return MappingBatch(tem, spx, spy, rank, np.ones((1, 2, 3), bool))


def _arch(dataflow, rows, cols):
    return SimpleNamespace(systolic=SimpleNamespace(dataflow=dataflow, rows=rows, cols=cols))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 8), cols=st.integers(1, 8), a=st.integers(1, 4), b=st.integers(1, 4),
       m=st.integers(1, 30), dataflow=st.sampled_from(["WS", "OS", "IS"]))
def test_mapping_like_scalesims_gives_its_closed_form(rows, cols, a, b, m, dataflow):
    # The GEMM dims spread over rows/cols are exact multiples of the array (no padded folds), the
    # stationary tensor's fold loops are outermost and the streamed dim innermost, as SCALE-Sim runs.
    if dataflow == "WS":    # rows <- K (reduction), cols <- N, stream M
        prob = matmul(m=m, k=rows * a, n=cols * b)
        spread, stream = {"K": rows, "N": cols}, "M"
    elif dataflow == "IS":  # rows <- K, cols <- M, stream N
        prob = matmul(m=cols * b, k=rows * a, n=m)
        spread, stream = {"K": rows, "M": cols}, "N"
    else:                   # OS: rows <- M, cols <- N, stream K
        prob = matmul(m=rows * a, k=m, n=cols * b)
        spread, stream = {"M": rows, "N": cols}, "K"
    (rdim, rsz), (cdim, csz) = spread.items()
    temporal = {rdim: prob.sizes[rdim] // rsz, cdim: prob.sizes[cdim] // csz, stream: prob.sizes[stream]}
    batch = _one_level_batch(prob, temporal, [rdim, cdim, stream], {cdim: csz}, {rdim: rsz})
    steps = np.array([a * b * m])
    assert stream_length(prob, batch, dataflow)[0] == m
    got = systolic_cycles(prob, _arch(dataflow, rows, cols), batch, steps, "scalesim")[0]
    assert got == scalesim_cycles(gemm_view(prob), rows, cols, dataflow)
    over = systolic_cycles(prob, _arch(dataflow, rows, cols), batch, steps, "overlapped")[0]
    # overlapped: one fill/drain per layer, plus a stall per later fold if the stream is shorter
    # than the R cycles needed to shift in the next stationary tile
    per_fold = 2 * rows + cols - 2 if dataflow != "OS" else rows + cols - 2
    assert over == a * b * m + per_fold + (a * b - 1) * max(0, rows - m)
    assert steps[0] <= over <= got


def test_interrupted_stream_means_more_folds():
    # WS on a 4x4 array, M=8 K=8 N=4 (K 4 on rows, N 4 on cols). M is split 2 (level 0, outside
    # the K loop that changes the weights) x 4 (level 1): the stream is 4 long and the folds are
    # M2 x K2 = 4, where SCALE-Sim's own schedule streams all of M=8 in ceil(8/4)*ceil(4/4) = 2 folds.
    prob = matmul(m=8, k=8, n=4)
    dims = prob.dim_names
    tem = np.ones((1, 3, len(dims)), np.int64)
    tem[0, 0, dims.index("M")] = 2
    tem[0, 0, dims.index("K")] = 2
    tem[0, 1, dims.index("N")] = 1
    tem[0, 1, dims.index("M")] = 4
    sx, sy = np.ones_like(tem), np.ones_like(tem)
    sy[0, 0, dims.index("K")] = 4
    sx[0, 0, dims.index("N")] = 4
    rank = np.zeros_like(tem)
    rank[0, 0] = [0, 1, 3, 2]  # level 0 order: B, M, K, N (ranks per dim B, M, N, K)
    batch = MappingBatch(tem, sx, sy, rank, np.ones((1, 3, 3), bool))
    assert stream_length(prob, batch, "WS")[0] == 4
    # 4 folds (M outer 2 x K 2), each 4 + 2*4 + 4 - 2 = 14 -> 56
    steps = np.array([16])
    assert systolic_cycles(prob, _arch("WS", 4, 4), batch, steps, "scalesim")[0] == 4 * 14
