"""Reference walker: the access-count semantics of docs/semantics.md, by literal enumeration.

It walks the loop nest step by step and keeps Python sets of tensor element coordinates, so it is
slow and only for small problems; it is the spec that costmodel.analysis must equal exactly.

Terms (see docs/semantics.md):
- digits: each dimension's index is a mixed-radix number; its digits are, outer to inner, the
  level-0 temporal loop, level-0 spatial X, level-0 spatial Y, level-1 temporal, ...
- for a tensor, its keeping levels p < c are linked; the child c (or the MACs, c = L) receives
  from p. The steps of a link are the iterations of the temporal loops of levels < c; a child
  instance is one value of the spatial digits of levels < c; its tile is what the digits of
  levels >= c touch (the MACs' tile is one element and they keep nothing between steps).
- entries(B): per step, new elements of each child; children that differ only in the spatial
  digits B are merged (an element needed by several of them at once counts once).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from costmodel.mapping import Mapping
from costmodel.problem import Problem


@dataclass(frozen=True)
class Slot:
    dim: str
    level: int
    kind: str  # "T", "X" or "Y"
    factor: int
    weight: int  # place value in its dimension's index


def slots(problem: Problem, mapping: Mapping) -> dict[str, list[Slot]]:
    out: dict[str, list[Slot]] = {}
    for d in problem.dim_names:
        raw = []
        for m, lm in enumerate(mapping.levels):
            raw += [(m, "T", lm.temporal.get(d, 1)), (m, "X", lm.spatial_x.get(d, 1)),
                    (m, "Y", lm.spatial_y.get(d, 1))]
        out[d] = [Slot(d, m, k, f, math.prod(f2 for _, _, f2 in raw[i + 1:])) for i, (m, k, f) in enumerate(raw)]
    return out


class Link:
    """Parent level p feeding child c (c == L: the MACs) for one tensor.

    ``timeloop=True``: Timeloop's approximations instead of exact sets: a tile that moves at a
    step where a loop other than the innermost nontrivial one advances is refetched whole (a
    window slides only under the innermost loop), and multicast/reduction merge only children
    whose tiles are identical (spatial digits of dimensions the tensor does not use)."""

    def __init__(self, problem: Problem, mapping: Mapping, tensor: str, c: int, timeloop: bool = False) -> None:
        self.t = problem.tensor(tensor)
        self.c = c
        self.timeloop = timeloop
        self.mac = c == len(mapping.levels)
        sl = slots(problem, mapping)
        dims = problem.dim_names
        # temporal loops above c, in nest order
        self.tloops: list[Slot] = []
        for m in range(c):
            for d in mapping.levels[m].full_order(dims):
                self.tloops.append(next(s for s in sl[d] if s.level == m and s.kind == "T"))
        self.sloops = [s for d in dims for s in sl[d] if s.level < c and s.kind != "T"]
        inner = {d: [s for s in sl[d] if s.level >= c] for d in dims}
        self.inner_vals = {d: sorted({sum(s.weight * i for s, i in zip(ss, idx))
                                      for idx in itertools.product(*[range(s.factor) for s in ss])})
                           for d, ss in inner.items()}
        self.steps = list(itertools.product(*[range(s.factor) for s in self.tloops]))
        nontrivial = [j for j, s in enumerate(self.tloops) if s.factor > 1]
        self.innermost = nontrivial[-1] if nontrivial else -1
        self.sigmas = list(itertools.product(*[range(s.factor) for s in self.sloops]))
        self._cache: dict[tuple[int, tuple[int, ...]], frozenset] = {}

    def tile(self, k: int, sigma: tuple[int, ...]) -> frozenset:
        key = (k, sigma)
        if key not in self._cache:
            base = {d: 0 for d in self.inner_vals}
            for s, i in zip(self.tloops, self.steps[k]):
                base[s.dim] += s.weight * i
            for s, i in zip(self.sloops, sigma):
                base[s.dim] += s.weight * i
            dims = sorted(self.t.dims())
            pts = set()
            for vals in itertools.product(*[self.inner_vals[d] for d in dims]):
                v = {d: base[d] + x for d, x in zip(dims, vals)}
                pts.add(tuple(sum(c * v[d] for c, d in axis) for axis in self.t.axes))
            self._cache[key] = frozenset(pts)
        return self._cache[key]

    def groups(self, merged: set[int]) -> dict[tuple, list[tuple[int, ...]]]:
        """Child instances grouped by their spatial digits outside ``merged`` (indices into sloops)."""
        out: dict[tuple, list[tuple[int, ...]]] = {}
        for sg in self.sigmas:
            out.setdefault(tuple(x for i, x in enumerate(sg) if i not in merged), []).append(sg)
        return out

    def _kept_from(self, k: int, sg: tuple[int, ...]) -> frozenset:
        """What a child still has at step k from step k-1 (for the entries at step k)."""
        if k == 0 or self.mac:
            return frozenset()
        prev = self.tile(k - 1, sg)
        if self.timeloop and prev != self.tile(k, sg):
            advanced = max(j for j, (a, b) in enumerate(zip(self.steps[k - 1], self.steps[k])) if b > a)
            if advanced != self.innermost:
                return frozenset()
        return prev

    def entries(self, merged: set[int]) -> int:
        total = 0
        for members in self.groups(merged).values():
            for k in range(len(self.steps)):
                new: set = set()
                for sg in members:
                    new |= self.tile(k, sg) - self._kept_from(k, sg)
                total += len(new)
        return total

    def evictions(self, merged: set[int]) -> int:
        total = 0
        last = len(self.steps) - 1
        for members in self.groups(merged).values():
            for k in range(1, last + 1):
                gone: set = set()
                for sg in members:
                    prev = self.tile(k - 1, sg)
                    # a refetched (or MAC) tile gives up everything it had
                    cur = self.tile(k, sg) if self._kept_from(k, sg) else frozenset()
                    gone |= prev - cur
                total += len(gone)
            total += len(set().union(*[self.tile(last, sg) for sg in members]))
        return total

    def distinct(self, merged: set[int]) -> int:
        return sum(len(set().union(*[self.tile(k, sg) for k in range(len(self.steps)) for sg in members]))
                   for members in self.groups(merged).values())

    def merged_slots(self, networks: range, flag: list[bool]) -> set[int]:
        """Indices of the spatial digits of the given networks (levels) whose flag is on."""
        used = self.t.dims()
        return {i for i, s in enumerate(self.sloops) if s.level in networks and flag[s.level]
                and not (self.timeloop and s.dim in used)}


def walk(problem: Problem, arch, mapping: Mapping, model: str = "exact") -> dict[str, np.ndarray]:
    """fills, reads, updates, hops, tile_words as [L, T] int arrays, totals over instances
    (``model``: "exact" or "timeloop", see Link)."""
    n_lv = len(arch.levels)
    tnames = [t.name for t in problem.tensors]
    res = {k: np.zeros((n_lv, len(tnames)), np.int64) for k in ("fills", "reads", "updates", "hops", "tile_words")}
    mc = [lv.multicast for lv in arch.levels]
    red = [lv.spatial_reduction for lv in arch.levels]
    for ti, tn in enumerate(tnames):
        is_out = problem.tensor(tn).is_output
        chain = [m for m in range(n_lv) if mapping.keeps(m, tn, arch)] + [n_lv]
        res["tile_words"][0, ti] = problem.tensor_elements(tn)
        for p, c in itertools.pairwise(chain):
            link = Link(problem, mapping, tn, c, timeloop=model == "timeloop")
            if c < n_lv:
                res["tile_words"][c, ti] = len(link.tile(0, link.sigmas[0]))
            b_read = link.merged_slots(range(p, c), mc)
            if not is_out:
                if c < n_lv:
                    res["fills"][c, ti] += link.entries(set())
                res["reads"][p, ti] += link.entries(b_read)
                for lv in range(p, c):
                    res["hops"][lv, ti] += link.entries(link.merged_slots(range(lv + 1, c), mc))
                continue
            if c < n_lv:
                res["fills"][c, ti] += link.entries(set()) - link.distinct(set())
            res["reads"][p, ti] += link.entries(b_read) - link.distinct(b_read)
            res["updates"][p, ti] += link.evictions(link.merged_slots(range(p, c), red))
            for lv in range(p, c):
                down = link.merged_slots(range(lv + 1, c), mc)
                up = link.merged_slots(range(lv + 1, c), red)
                res["hops"][lv, ti] += link.entries(down) - link.distinct(down) + link.evictions(up)
    return res
