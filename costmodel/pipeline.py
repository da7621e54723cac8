"""What double buffering cannot hide: the first tile's fill, the last tile's drain, the vector stage.

A double-buffered level moves tile t+1 while the array computes on tile t, so a layer of N tiles
is a pipeline of stages -- load, array, vector unit, store -- and takes as long as a pipeline:
the busiest stage's total plus one tile of every other stage (for N equal tiles exactly
``sum_s x_s + (N - 1) * max_s x_s``). :func:`costmodel.latency.latency` combines the totals; the
single tiles are computed per mapping in :func:`costmodel.latency_kernel.latency` from the
constants this module derives from the config:

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
    from costmodel.arch import Architecture
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


def copies_mask(problem: Problem, arch: Architecture) -> np.ndarray:
    """[L, T, D] (bool): the dims whose spatial factors at each level's network give its children
    distinct tiles of each tensor (*distinct words* above): every dim on a network that neither
    multicasts (inputs) nor reduces (the output), only the tensor's own dims on one that does, none
    below a fan-out of 1."""
    out = np.zeros((len(arch.levels), len(problem.tensors), len(problem.dim_names)), bool)
    for m, lv in enumerate(arch.levels):
        if lv.fanout == 1:
            continue
        for ti, t in enumerate(problem.tensors):
            merges = lv.spatial_reduction if t.is_output else lv.multicast
            used = t.dims()
            out[m, ti] = [d in used or not merges for d in problem.dim_names]
    return out


def vector_constants(problem: Problem, arch: Architecture) -> tuple[np.ndarray, float]:
    """The vector stage's constants for costmodel.latency_kernel: ``(lanes, level, output tensor,
    output elements, POST_OPS)`` (all 0 without a vector unit) and ``V``, all its cycles."""
    vu = getattr(arch, "vector_unit", None)
    if vu is None:
        return np.zeros(5, np.int64), 0.0
    o = next(i for i, t in enumerate(problem.tensors) if t.is_output)
    elements = problem.tensor_elements(problem.tensors[o].name)
    level = [lv.name for lv in arch.levels].index(vu.level)
    return np.array([vu.lanes, level, o, elements, POST_OPS], np.int64), float(POST_OPS * -(-elements // vu.lanes))
