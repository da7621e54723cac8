"""What double buffering cannot hide: the first tile's fill, the last tile's drain, the vector stage.

A double-buffered level moves tile t+1 while the array computes on tile t, so a layer of N tiles
is a pipeline of stages -- load, array, vector unit, store -- and takes as long as a pipeline:
the busiest stage's total plus one tile of every other stage (for N equal tiles exactly
``sum_s x_s + (N - 1) * max_s x_s``). :func:`costmodel.latency.latency` combines the totals; this
module computes the single tiles, for B mappings at once:

* **Staged levels**: double-buffered, not ``ideal_overlap`` (Timeloop's idealisation has no
  fill or drain), below DRAM and not inside a systolic array (the levels below the systolic
  level's fan-out are the PEs' registers, whose fill/drain the fold model already charges).
* **Fill**: before the first MAC, the first tile of every staged level arrives: per input tensor
  kept there, its tile (``Accesses.tile_words``, per instance) crosses its link at the slower end:
  the child's write port (``words / write_bw``) or the parent's read port (the distinct words of
  the busy children's tiles ``/ (parent's busy instances * read_bw)``); tensors and levels one
  after the other (a sum: one port writes them, the next level waits for its parent's tile).
* **Drain**: after the last MAC, the last output tile of every staged level that keeps O goes to
  its parent (the child's read port, the parent's write port), level after level.
* **Distinct words**: busy children that differ only in spatial indices of dims a tensor does not
  use hold the same tile; a multicast network (inputs) or a spatially reducing one (the output)
  moves it once, any other network once per child.
* **Vector stage**: with a vector unit, every output element passes ``POST_OPS`` times through it
  (bias add, then requantization to the output type) at ``lanes`` elements per cycle, after the
  array and concurrently with it (a separate unit): ``V = POST_OPS * ceil(|O| / lanes)`` cycles in
  all, and ``POST_OPS * ceil(tile / lanes)`` for the last output tile (its tile at the vector unit's
  level, all busy copies; ``V / tiles`` where that level does not keep O) after the last MAC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from costmodel.analysis import Accesses
    from costmodel.arch import Architecture
    from costmodel.mapping import MappingBatch
    from costmodel.problem import Problem

POST_OPS = 2
"""Vector passes per output element of a MAC layer: the int32 bias add and the requantization
(scale, round, saturate) to the int8/uint8 output -- the two VEC instructions the compiler emits per
output block (docs/compiler.md; MLAS ``MlasRequantizeOutput``, reference/isa-notes.md section 6.5)."""


def staged_levels(arch: Architecture) -> list[int]:
    """Indices of the levels whose first/last tiles are charged (module docstring)."""
    last = len(arch.levels) - 1
    sys_ = arch.systolic
    if sys_ is not None and getattr(sys_, "level", None) is not None:
        last = [lv.name for lv in arch.levels].index(sys_.level)
    return [i for i, lv in enumerate(arch.levels)
            if 1 <= i <= last and lv.double_buffered and not lv.ideal_overlap]


def _copies(problem: Problem, arch: Architecture, batch: MappingBatch, m: int, ti: int) -> np.ndarray | int:
    """[B] distinct tiles of tensor ``ti`` among the children of level ``m``'s network, per parent copy."""
    lv = arch.levels[m]
    if lv.fanout_x * lv.fanout_y == 1:
        return 1
    t = problem.tensors[ti]
    merges = lv.spatial_reduction if t.is_output else lv.multicast
    used = t.dims()
    out = np.ones(batch.temporal.shape[0], np.int64)
    for di, d in enumerate(problem.dim_names):
        if d in used or not merges:
            out = out * batch.spatial_x[:, m, di] * batch.spatial_y[:, m, di]
    return out


def _bw(value: float | None) -> float:
    return np.inf if value is None else float(value)


def _link_cycles(problem: Problem, arch: Architecture, batch: MappingBatch, acc: Accesses, busy: np.ndarray,
                 lv: int, ti: int) -> np.ndarray:
    """[B] cycles to move one tile of tensor ``ti`` between level ``lv`` and its parent (0 where not kept)."""
    out = problem.tensors[ti].is_output
    words = acc.tile_words[:, lv, ti].astype(np.float64)
    child_bw = _bw(arch.levels[lv].read_bw if out else arch.levels[lv].write_bw)
    cycles = words / child_bw
    copies: np.ndarray | int = 1
    found = np.zeros(words.shape, bool)
    for m in range(lv - 1, -1, -1):  # walk up to the nearest level keeping the tensor (DRAM keeps all)
        copies = copies * _copies(problem, arch, batch, m, ti)
        here = ~found & (batch.keep[:, m, ti] if m else True)
        p = arch.levels[m]
        parent = words * copies / (busy[m] * _bw(p.write_bw if out else p.read_bw))
        np.maximum(cycles, parent, out=cycles, where=here)
        found |= here
        if found.all():
            break  # no mapping looks further up
    return cycles


def fill_drain(problem: Problem, arch: Architecture, batch: MappingBatch, acc: Accesses,
               busy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([B] fill, [B] drain) cycles, unrounded (module docstring); zeros without staged levels."""
    b = batch.temporal.shape[0]
    fill, drain = np.zeros(b), np.zeros(b)
    for lv in staged_levels(arch):
        for ti, t in enumerate(problem.tensors):
            if t.name not in arch.levels[lv].holds:
                continue
            cycles = _link_cycles(problem, arch, batch, acc, busy, lv, ti)
            if t.is_output:
                drain += cycles
            else:
                fill += cycles
    return fill, drain


def vector_stage(problem: Problem, arch: Architecture, acc: Accesses, busy: np.ndarray,
                 tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """([B] all vector cycles, [B] the last output tile's), unrounded; None without a vector unit.
    ``tiles`` [B] is the fallback tile count where the vector level does not keep O."""
    vu = getattr(arch, "vector_unit", None)
    if vu is None:
        return None
    o = next(i for i, t in enumerate(problem.tensors) if t.is_output)
    elements = problem.tensor_elements(problem.tensors[o].name)
    total = np.full(tiles.shape, POST_OPS * -(-elements // vu.lanes), np.float64)
    vl = [lv.name for lv in arch.levels].index(vu.level)
    tile = np.minimum(acc.tile_words[:, vl, o] * busy[vl], elements)  # the last tile's outputs, all copies
    last = np.where(tile > 0, POST_OPS * -(-tile // vu.lanes), total / tiles)
    return total, last
