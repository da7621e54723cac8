"""Tiles from the mapper: the dense-conv / FC template's limits as mapspace constraints, and back.

The lowering template (compiler/lower/conv.py) executes one loop nest per dense conv, on the
levels of a compilable config (DRAM, SPAD level, ACC level, the PE weight register)::

    DRAM         for K_groups, for P_tiles          (K outer: a weight group is loaded once)
    SPAD         for K blocks of the group          (all C blocks of the input rows resident)
    ACC          for C blocks, for R, for S         (accumulate one output block in ACC)
      spatial    C on the array rows (y), K on the array columns (x)
    PE weight    for P rows of the tile, for Q      (the GEMM walk under a stationary weight)

so the mapper may choose only how P and K split between DRAM and the levels below (the tile's
output rows and the weight group); :func:`template_constraints` says exactly that in the
``constraints`` format of dse.mapspace.constraints. :func:`conv_plan` runs ``map_layer`` with them,
reads the tile (rows, group) off the chosen mapping, shrinks it if the template's own buffers
(the SPAD also holds the requantized output halves, which the cost model does not see) do not fit,
and returns the mapping the code really executes (:func:`executed_mapping`), which is what
``dse compile`` prints and what ``dse simulate --check`` evaluates analytically.

Channels: the template works in blocks of L = 16 lanes, zero-padded, and the padded lanes take
their PE cycles. The problem handed to the mapper is therefore the layer with its channels padded
to whole blocks (:func:`padded_channels`: 19 -> 32, 1000 -> 1008; 3 stays 3), so the spatial factor
is a whole block and the cost model's perfect factorization counts the channel steps the code runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from costmodel.problem import Problem


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def padded_channels(c: int, lanes: int) -> int:
    """Channels as the array runs them: whole L-lane blocks (zero-padded lanes still take their PE
    cycle), or c itself when one partial block holds them all."""
    return c if c <= lanes else -(-c // lanes) * lanes


def lane_factor(size: int, lanes: int) -> int:
    """Spatial factor of a channel dim: a whole block (size / #blocks) when that divides, else the
    largest divisor <= lanes."""
    nblocks = -(-size // lanes)
    if size % nblocks == 0:
        return size // nblocks
    return max(d for d in _divisors(size) if d <= lanes)


@dataclass(frozen=True)
class Plan:
    """The tiling the template executes, and the mapping (a costmodel Mapping) it corresponds to."""

    rows: int  # output rows (conv P) or matrix rows (FC M) per tile
    group: int  # output-channel steps (K / spatial K) per weight group
    mapping: Any
    problem: Problem
    chosen: Any  # the mapper's mapping before the template's buffer fit (same as mapping if it fitted)

    def describe(self, arch: Any) -> str:
        """The mapping on one line: per level its temporal factors (outer to inner), spatial in []."""
        parts = []
        for lv, lm in zip(arch.levels, self.mapping.levels):
            loops = " ".join(f"{d}{lm.temporal[d]}" for d in lm.full_order(self.problem.dim_names)
                             if lm.temporal.get(d, 1) > 1)
            sp = "x".join(f"{d}{f}" for d, f in (*lm.spatial_y.items(), *lm.spatial_x.items()) if f > 1)
            if loops or sp:
                parts.append(f"{lv.name}: " + " ".join(x for x in (loops, f"[{sp}]" if sp else "") if x))
        return " | ".join(parts)


def _levels(arch: Any, spad_level: str, acc_level: str) -> tuple[str, str, str, str | None]:
    names = [lv.name for lv in arch.levels]
    acc_i = names.index(acc_level)
    inner = names[acc_i + 1] if acc_i + 1 < len(names) else None
    return names[0], spad_level, acc_level, inner


def template_constraints(problem: Problem, arch: Any, spad_level: str, acc_level: str, lanes: int) -> list[dict]:
    """The template's loop nest (module docstring) as mapspace constraint entries."""
    dram, spad, acc, pe = _levels(arch, spad_level, acc_level)
    size = dict(problem.dims)
    if problem.kind == "fc":  # O[M, N] = I[M, K] W[K, N]: N (outputs) on columns, K (inputs) on rows
        fx, fy = lane_factor(size["N"], lanes), lane_factor(size["K"], lanes)
        entries = [
            {"level": dram, "temporal": {"M": 1, "K": 1, "B": 1}, "order": ["N"]},
            {"level": spad, "temporal": {"M": 1, "K": 1}, "keep": ["I", "W"]},
            {"level": acc, "temporal": {"N": 1, "M": 1}, "order": ["K"], "keep": ["O"],
             "spatial_x": {"N": fx}, "spatial_y": {"K": fy}},
        ]
        if pe:
            entries.append({"level": pe, "temporal": {"N": 1, "K": 1, "M": size["M"]}, "keep": ["W"]})
        return entries
    fx, fy = lane_factor(size["K"], lanes), lane_factor(size["C"], lanes)
    entries = [
        {"level": dram, "temporal": {"C": 1, "R": 1, "S": 1, "Q": 1, "N": 1, "G": 1}, "order": ["K", "P"]},
        {"level": spad, "temporal": {"C": 1, "R": 1, "S": 1, "P": 1, "Q": 1}, "keep": ["I", "W"]},
        {"level": acc, "temporal": {"K": 1, "P": 1, "Q": 1, "C": size["C"] // fy, "R": size["R"], "S": size["S"]},
         "order": ["C", "R", "S"], "keep": ["O"], "spatial_x": {"K": fx}, "spatial_y": {"C": fy}},
    ]
    if pe:
        entries.append({"level": pe, "temporal": {"K": 1, "C": 1, "R": 1, "S": 1, "Q": size["Q"]},
                        "order": ["P", "Q"], "keep": ["W"]})
    return entries


def executed_mapping(problem: Problem, arch: Any, spad_level: str, acc_level: str, lanes: int,
                     rows: int, group: int) -> Any:
    """The Mapping of the template's loop nest with ``rows`` output rows and ``group`` K steps per tile."""
    from costmodel.mapping import LevelMapping, Mapping

    dram, spad, acc, pe = _levels(arch, spad_level, acc_level)
    size = dict(problem.dims)
    by_name: dict[str, LevelMapping] = {}
    if problem.kind == "fc":
        fx, fy = lane_factor(size["N"], lanes), lane_factor(size["K"], lanes)
        nsteps = size["N"] // fx
        by_name[dram] = LevelMapping(temporal={"N": nsteps // group}, order=("N",))
        by_name[spad] = LevelMapping(temporal={"N": group}, order=("N",))
        by_name[acc] = LevelMapping(temporal={"K": size["K"] // fy}, order=("K",), spatial_x={"N": fx},
                                    spatial_y={"K": fy})
        inner = {"M": size["M"]}, ("M",)
    else:
        fx, fy = lane_factor(size["K"], lanes), lane_factor(size["C"], lanes)
        ksteps = size["K"] // fx
        by_name[dram] = LevelMapping(temporal={"K": ksteps // group, "P": size["P"] // rows}, order=("K", "P"))
        by_name[spad] = LevelMapping(temporal={"K": group}, order=("K",))
        by_name[acc] = LevelMapping(temporal={"C": size["C"] // fy, "R": size["R"], "S": size["S"]},
                                    order=("C", "R", "S"), spatial_x={"K": fx}, spatial_y={"C": fy})
        inner = {"P": rows, "Q": size["Q"]}, ("P", "Q")
    if pe:
        by_name[pe] = LevelMapping(temporal=inner[0], order=inner[1])
    else:  # no PE level: the walk is the ACC level's innermost loops
        a = by_name[acc]
        by_name[acc] = LevelMapping(temporal={**a.temporal, **inner[0]}, order=a.order + inner[1],
                                    spatial_x=a.spatial_x, spatial_y=a.spatial_y)
    levels = []
    for lv in arch.levels:
        lm = by_name.get(lv.name, LevelMapping())
        held = set(lv.holds)
        bypass = frozenset(t for t in ("I", "W", "O") if t not in held) if lv.kind != "dram" else frozenset()
        levels.append(LevelMapping(temporal=lm.temporal, order=lm.order, spatial_x=lm.spatial_x,
                                   spatial_y=lm.spatial_y, bypass=bypass))
    mapping = Mapping(tuple(levels))
    mapping.validate(problem, arch, where="executed template mapping")
    return mapping


def read_tile(problem: Problem, arch: Any, mapping: Any, spad_level: str, acc_level: str) -> tuple[int, int]:
    """(rows, group) of a template-constrained mapping: the P (FC: 1) and K (FC: N) factors below DRAM."""
    names = [lv.name for lv in arch.levels]
    below = mapping.levels[1:]
    kdim, rdim = ("N", "M") if problem.kind == "fc" else ("K", "P")
    group = 1
    for lm in below[: names.index(acc_level)]:
        group *= lm.temporal.get(kdim, 1)
    rows = 1
    for lm in below:
        rows *= lm.temporal.get(rdim, 1)
    return rows, group


def fit_tile(problem: Problem, rows: int, group: int, fits) -> tuple[int, int]:
    """The largest (rows, group) <= the mapper's, dividing the dims, that ``fits(rows, group)`` accepts."""
    size = dict(problem.dims)
    rdim = "M" if problem.kind == "fc" else "P"
    for g in sorted((d for d in _divisors(group)), reverse=True):
        for r in sorted((d for d in _divisors(size[rdim]) if d <= rows), reverse=True):
            if fits(r, g):
                return r, g
    return 0, 0


def plan(problem: Problem, arch: Any, spad_level: str, acc_level: str, lanes: int, fits, *,
         seed: int = 0, max_evaluations: int = 2000) -> Plan | None:
    """Map ``problem`` with the template's constraints; the tile that fits; None if nothing fits."""
    from dse.mappers import map_layer

    cons = template_constraints(problem, arch, spad_level, acc_level, lanes)
    res = map_layer(problem, arch, "edp", constraints=cons, seed=seed, max_evaluations=max_evaluations)
    chosen = res.mapping
    rows, group = read_tile(problem, arch, chosen, spad_level, acc_level)
    r, g = fit_tile(problem, rows, group, fits)
    if r == 0:
        return None
    mapping = chosen if (r, g) == (rows, group) else executed_mapping(problem, arch, spad_level, acc_level,
                                                                       lanes, r, g)
    return Plan(r, g, mapping, problem, chosen)


class Planner:
    """Per-compile mapper front: one search per distinct layer shape (lowering runs twice)."""

    def __init__(self, arch: Any, target: Any, seed: int = 0) -> None:
        self.arch, self.target, self.seed = arch, target, seed
        self._cache: dict[tuple, Plan | None] = {}
        self.seconds = 0.0

    def plan(self, problem: Problem, fits) -> Plan | None:
        import time

        key = (problem.kind, problem.dims, problem.params)
        if key not in self._cache:
            t0 = time.perf_counter()
            tg = self.target
            self._cache[key] = plan(problem, self.arch, tg.spad_level, tg.acc_level, tg.lanes, fits, seed=self.seed)
            self.seconds += time.perf_counter() - t0
        return self._cache[key]

    def analytical_cycles(self, p: Plan) -> int:
        from costmodel.evaluate import evaluate

        return int(evaluate(p.problem, self.arch, p.mapping, systolic_mode=self.target.gemm_timing).latency_cycles)
