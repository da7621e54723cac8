"""Latency of a batch of mappings: compute cycles against each level's bandwidth, and systolic timing.

Semantics (DESIGN.md section 2), for B mappings at once:

* **Compute cycles** of a plain PE array are the product of all temporal factors (one MAC per PE
  per cycle; spatial factors run in parallel).
* **Traffic cycles** of a level are ``ceil(words / (bandwidth * busy instances))``, separately for
  reads (words out of the level) and writes (fills + updates). Busy instances are the copies of the
  level the mapping actually uses (the product of the spatial factors above it); traffic is spread
  evenly over them. ``None`` bandwidth is unlimited.
* **Overlap** (default): a double-buffered level moves its next tile while the current one is in
  use, so the layer is a pipeline (``costmodel.pipeline``): load -> array -> vector unit -> store,
  and takes the busiest stage's total plus one tile of each other stage::

      cycles = max(fill + array + v_last + drain,                  array-bound
                   fill + c_tile + vector + drain,                 vector-bound
                   max(reads + drain, writes + fill) + c_tile + v_last)   transfer-bound

  ``reads`` / ``writes`` are the largest read / write port times of the double-buffered levels above
  the outermost staged level (DRAM: the tiles' loads and stores): a busy read port runs from the
  first cycle, and only the last tile's compute and drain follow it; a busy write port starts after
  the first tile's fill and compute. ``array = max(compute, port times of the
  double-buffered levels from that level down)``, whose transfers stream with the MACs inside a
  tile; ``fill`` / ``drain`` are the first tile's load and the last output tile's store of the
  staged levels; ``vector`` the post-GEMM vector passes (0 without a vector unit), ``v_last`` the
  last output tile's; ``c_tile = array / tiles`` of the outermost staged level (tiles: the product
  of the temporal factors above it). A level with ``ideal_overlap`` (Timeloop's idealisation)
  counts as double-buffered and is never staged: without staged levels the tile terms are 0 and
  this is ``max(compute, vector, traffic of the double-buffered levels)``. A level without double
  buffering stalls compute for its transfers, which are added: ``+ max(read, write) cycles``. The outermost level (DRAM) is the
  backing store and holds no tiles of its own to swap, so its traffic always overlaps (a transfer
  into a single-buffered child is charged at the child). Overlap never makes a layer slower than the
  no-overlap variant: the result is capped by it (which matters only for a layer of one or two
  tiles on a config whose no-overlap model runs a level's reads and writes side by side).
  **No overlap** (``overlap=False``): every level is treated as not double-buffered (the sum), and
  the vector passes are added too: ``compute + vector + sum of every level's max(read, write)``.
* **Systolic** configs (``arch.systolic``) replace compute cycles by the fold model of SCALE-Sim
  (``reference/scalesim-notes.md``): the stationary tensor (WS: W, OS: O, IS: I) is loaded per fold,
  the other operands stream for ``T`` cycles, and each fold costs ``T + 2R + C - 2`` (WS, IS) or
  ``T + R + C - 2`` (OS) on an ``R x C`` array. ``T`` is the innermost run of temporal loops over
  dimensions that do not index the stationary tensor (a fold ends when a loop that changes the
  stationary tile turns); folds ``F = temporal steps / T``. Mode ``"scalesim"`` charges every fold
  in full (SCALE-Sim's own model: no preload across folds); mode ``"overlapped"`` charges the
  fill/drain once per layer, with the next fold's stationary tile shifted in (R cycles) during the
  current fold's stream: ``temporal steps + (2R + C - 2) + (F - 1) * max(0, R - T)``.
  For a mapping that unrolls the array dims exactly as SCALE-Sim does, scalesim mode equals its
  closed form (:func:`scalesim_cycles`); SCALE-Sim itself reports that value minus one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from costmodel import latency_kernel
from costmodel.errors import UserError
from costmodel.mapping import batch_inner
from costmodel.pipeline import copies_mask, staged_levels, vector_constants
from costmodel.plans import plan_for
from costmodel.problem import Problem
from costmodel.tiles import shape_of

if TYPE_CHECKING:
    from costmodel.analysis import Accesses
    from costmodel.arch import Architecture
    from costmodel.mapping import MappingBatch

SystolicMode = Literal["scalesim", "overlapped"]
STATIONARY = {"WS": "W", "OS": "O", "IS": "I"}
"""The tensor each dataflow keeps in the PEs."""


# ---- SCALE-Sim's fold model on the layer's GEMM view ----------------------------------------------


@dataclass(frozen=True)
class GemmView:
    """A layer as ``batch`` independent GEMMs ``O[M,N] = I[M,K] W[K,N]`` (SCALE-Sim's im2col view).

    Dimensions are classified by the tensors they index: I and O only -> M (conv: N, P, Q),
    I and W only -> K (conv: C, R, S), W and O only -> N (conv: output channels K), all three ->
    independent batch (conv: groups G; matmul: B).
    """

    m: int
    k: int
    n: int
    batch: int = 1


def gemm_view(problem: Problem) -> GemmView:
    """Classify the problem's dimensions into SCALE-Sim's M, K, N (and independent batches)."""
    uses = {t.name: t.dims() for t in problem.tensors}
    size = {"m": 1, "k": 1, "n": 1, "batch": 1}
    for d, n in problem.dims:
        in_i, in_w, in_o = d in uses["I"], d in uses["W"], d in uses["O"]
        role = ("batch" if in_i and in_w and in_o else "k" if not in_o else "n" if not in_i else "m")
        size[role] *= n
    return GemmView(**size)


def fold_overhead(dataflow: str, rows: int | np.ndarray, cols: int | np.ndarray) -> int | np.ndarray:
    """Fill + drain + skew cycles of one fold: ``2R + C - 2`` (WS, IS) or ``R + C - 2`` (OS)."""
    if dataflow == "OS":
        return rows + cols - 2
    if dataflow in ("WS", "IS"):
        return 2 * rows + cols - 2
    raise ValueError(f"unknown systolic dataflow {dataflow!r}")


def scalesim_cycles(gemm: GemmView, rows: int, cols: int, dataflow: str) -> int:
    """SCALE-Sim's stall-free compute cycles (+1) for a GEMM view on an ``rows x cols`` array.

    WS: ``ceil(K/R) ceil(N/C) (2R+C+M-2)``; IS: ``ceil(K/R) ceil(M/C) (2R+C+N-2)``;
    OS: ``ceil(M/R) ceil(N/C) (R+C+K-2)``; times the independent batches.
    """
    spread = {"WS": (gemm.k, gemm.n, gemm.m), "IS": (gemm.k, gemm.m, gemm.n), "OS": (gemm.m, gemm.n, gemm.k)}
    if dataflow not in spread:
        raise ValueError(f"unknown systolic dataflow {dataflow!r}")
    sr, sc, t = spread[dataflow]
    folds = -(-sr // rows) * -(-sc // cols)
    return gemm.batch * folds * (t + int(fold_overhead(dataflow, rows, cols)))


def _active(problem: Problem) -> np.ndarray:
    """The indices of the problem's dims of size > 1 (those the access counts take too): the only
    ones whose loops a valid mapping can give a factor above 1, so the kernels loop over these alone."""
    return np.array(shape_of(problem).active, np.int64)


def _stream_dims(problem: Problem, dataflow: str) -> tuple[np.ndarray, np.ndarray]:
    """The active dims (see :func:`_active`) that index the stationary tensor of ``dataflow``, and
    those that do not."""
    used = problem.tensor(STATIONARY[dataflow]).dims()
    act = _active(problem)
    st = np.array([problem.dim_names[i] in used for i in act], bool)
    return act[st], act[~st]


def stream_length(problem: Problem, batch: MappingBatch, dataflow: str) -> np.ndarray:
    """``T`` [B]: product of the innermost run of temporal loops over dims not indexing the
    stationary tensor (loops of factor 1 are transparent).

    With nest positions ``level * D + rank`` (a permutation per mapping), the run is every loop
    inner to the innermost loop with a factor > 1 over a stationary dim: one max and one product
    over the loops, no sort."""
    out = np.empty(len(batch), np.int64)
    latency_kernel.stream_lengths(batch_inner(batch.temporal), batch_inner(batch.order),
                                  *_stream_dims(problem, dataflow), out)
    return out


def systolic_cycles(problem: Problem, arch: Architecture, batch: MappingBatch, temporal_steps: np.ndarray,
                    mode: SystolicMode) -> np.ndarray:
    """Compute cycles [B] of a systolic config under the fold model (see the module docstring)."""
    sys_ = arch.systolic
    assert sys_ is not None
    out = np.empty(len(batch), np.int64)
    at = latency_kernel.compute_cycles(batch_inner(batch.temporal), batch_inner(batch.order),
                                       np.asarray(temporal_steps, np.int64), _mode(mode),
                                       *_stream_dims(problem, sys_.dataflow), sys_.rows,
                                       int(fold_overhead(sys_.dataflow, sys_.rows, sys_.cols)), out)
    if at >= 0:
        raise _too_long(arch, at, len(batch))
    return out


def _too_long(arch: Architecture, at: int, n: int) -> UserError:
    """The error for mapping ``at``, one of whose latency terms passes latency_kernel.LIMIT: it
    names the config's likely cause (its smallest bandwidth, its systolic array)."""
    bws = [(bw, f"{lv.name} {kind} {bw:g}") for lv in arch.levels
           for kind, bw in (("read_bw", lv.read_bw), ("write_bw", lv.write_bw)) if bw is not None]
    causes = [min(bws)[1] + " words/cycle"] if bws else []
    if arch.systolic is not None:
        causes.append(f"systolic array {arch.systolic.rows} x {arch.systolic.cols}")
    which = "the mapping" if n == 1 else f"mapping {at} of the batch"
    return UserError(f"{getattr(arch, 'source', arch.name)}: {which} takes more than "
                     f"2**58 cycles in one term of its latency (cycles are counted in 64-bit integers); "
                     f"check the config's scale ({'; '.join(causes) or 'its bandwidths'})")


def _mode(mode: str) -> int:
    if mode not in _MODES:
        raise ValueError(f"unknown systolic mode {mode!r} (expected one of {sorted(_MODES)})")
    return _MODES[mode]


_MODES = {"scalesim": latency_kernel.SCALESIM, "overlapped": latency_kernel.OVERLAPPED}


# ---- bandwidth and the total ----------------------------------------------------------------------


def _bw(values: list[float | None]) -> np.ndarray:
    return np.array([np.inf if v is None else float(v) for v in values])


@dataclass
class Latency:
    """Cycles of a batch: ``compute`` [B], ``traffic`` [B, L, 2] (read, write), ``total`` [B], and the
    pipeline terms (``costmodel.pipeline``, unrounded, zeros where absent): ``fill`` and ``drain`` [B],
    ``vector`` [B] (all post-GEMM vector passes)."""

    compute: np.ndarray
    traffic: np.ndarray
    total: np.ndarray
    fill: np.ndarray
    drain: np.ndarray
    vector: np.ndarray

    def bound_by(self) -> np.ndarray:
        """[B]: index of the level whose traffic is the busiest stage, or -1 where compute (array or
        vector unit) is; the fill and drain of the first and last tile come on top of either."""
        worst = self.traffic.max(axis=2)
        lvl = worst.argmax(axis=1)
        return np.where(worst.max(axis=1) > np.maximum(self.compute, self.vector), lvl, -1)


class LatencyPlan:
    """The constants of a (problem, config) pair that :func:`costmodel.latency_kernel.latency`
    reads, built once per pair (costmodel.plans)."""

    def __init__(self, problem: Problem, arch: Architecture) -> None:
        lv = arch.levels
        self.read_bw, self.write_bw = _bw([x.read_bw for x in lv]), _bw([x.write_bw for x in lv])
        self.db = np.array([i == 0 or x.double_buffered or x.ideal_overlap for i, x in enumerate(lv)])
        staged = staged_levels(arch)
        self.staged = np.isin(np.arange(len(lv)), staged)
        self.fan = np.array([x.fanout > 1 for x in lv])
        self.holds = np.array([[t.name in x.holds for t in problem.tensors] for x in lv])
        self.is_out = np.array([t.is_output for t in problem.tensors])
        self.copies_mask = copies_mask(problem, arch)
        sys_ = arch.systolic
        self.active = _active(problem)
        self.st_dims = self.free_dims = np.zeros(0, np.int64)
        self.rows = self.over = 0
        if sys_ is not None:
            self.st_dims, self.free_dims = _stream_dims(problem, sys_.dataflow)
            self.rows, self.over = sys_.rows, int(fold_overhead(sys_.dataflow, sys_.rows, sys_.cols))
        self.vec, self.vec_total = vector_constants(problem, arch)


def latency(problem: Problem, arch: Architecture, batch: MappingBatch, acc: Accesses, *, overlap: bool = True,
            systolic_mode: SystolicMode | None = None) -> Latency:
    """Cycles of every mapping of the batch (see the module docstring for the model)."""
    stage = LatencyStage(problem, arch, batch, acc, overlap=overlap, systolic_mode=systolic_mode)
    stage.run(0, len(batch))
    return stage.lat


class LatencyStage:
    """The latency of one batch, computed a range of mappings at a time from their counts (as
    costmodel.analysis.CountStage, whose ranges it follows in ``evaluate_batch``): ``lat`` holds
    it, row ``i`` once a :meth:`run` has covered ``i``."""

    def __init__(self, problem: Problem, arch: Architecture, batch: MappingBatch, acc: Accesses, *,
                 overlap: bool = True, systolic_mode: SystolicMode | None = None) -> None:
        plan = plan_for(LatencyPlan, problem, arch)
        mode = latency_kernel.NONE
        if systolic_mode is not None:
            _mode(systolic_mode)  # a mistyped mode is an error on any config (it only matters on a systolic one)
        if arch.systolic is not None:
            mode = _mode(systolic_mode or ("overlapped" if overlap else "scalesim"))
        b = len(batch)
        compute, total = np.empty(b, np.int64), np.empty(b, np.int64)
        fill, drain, vector = np.empty(b), np.empty(b), np.empty(b)
        traffic = np.empty((2, len(arch.levels), b), np.int64)
        counts = (a.transpose(1, 2, 0) for a in (acc.reads, acc.fills, acc.updates, acc.tile_words))
        mapping = (batch.temporal, batch.spatial_x, batch.spatial_y, batch.order, batch.keep)
        self._inputs = (*(batch_inner(a) for a in mapping), *counts, np.asarray(acc.temporal_steps, dtype=np.int64),
                        plan.read_bw, plan.write_bw, plan.db, plan.staged, plan.fan, plan.holds, plan.is_out,
                        plan.copies_mask, mode, plan.st_dims, plan.free_dims, plan.active, plan.rows, plan.over,
                        plan.vec, plan.vec_total, overlap)
        self._outputs = (compute, traffic, total, fill, drain, vector)
        self._arch = arch
        self.lat = Latency(compute=compute, traffic=traffic.transpose(2, 1, 0), total=total, fill=fill,
                           drain=drain, vector=vector)

    def run(self, lo: int, hi: int) -> None:
        """Cycles of mappings lo..hi-1 (their counts must be in already). A UserError if a term of
        one passes 2**58 cycles (latency_kernel.LIMIT): only an absurd bandwidth or array gets there."""
        at = latency_kernel.latency(*self._inputs, lo, hi, *self._outputs)
        if at >= 0:
            raise _too_long(self._arch, at, self.lat.total.shape[0])
