"""Evaluation of mappings: access counts -> latency -> energy, power, EDP, utilization, area.

``evaluate_batch`` is the hot path for the mappers (numpy over B mappings of one layer);
``evaluate`` is a batch of one with a plain-data view (``to_dict``, the keys of DESIGN.md section 4)
for the CLI and notebooks.

Units: energy pJ, latency cycles and seconds, power mW, area mm2, ``edp`` = energy_pj * latency_s
(pJ*s). ``utilization`` = MACs / (PEs * latency cycles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.energy import ACTIONS, Energy, EnergyStage
from costmodel.errors import UserError
from costmodel.latency import Latency, LatencyStage, SystolicMode
from costmodel.problem import as_int

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.analysis import Accesses
    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping, MappingBatch
    from costmodel.problem import Problem

RESERVED = ("mac", "network", "leakage", "vector_unit")
"""Keys of ``energy_breakdown_pj`` next to the level names."""

CHUNK = 4096
"""Mappings per pass of ``evaluate_batch`` through counts, latency and energy: a chunk's counts
(~0.5 KB per mapping) are still in cache when the later stages read them."""


@dataclass
class BatchEvaluation:
    """Metrics of B mappings of one layer on one config (arrays over B)."""

    level_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    accesses: Accesses
    lat: Latency
    en: Energy
    macs: np.ndarray
    latency_cycles: np.ndarray
    latency_s: np.ndarray
    energy_pj: np.ndarray
    power_mw: np.ndarray
    edp: np.ndarray
    utilization: np.ndarray

    def __len__(self) -> int:
        return int(self.energy_pj.shape[0])

    @property
    def level_energy_pj(self) -> np.ndarray:
        """[B, L]: access + network + leakage energy per level."""
        return self.en.per_level()

    @property
    def tensor_energy_pj(self) -> np.ndarray:
        """[B, L, T]: access energy per level and tensor (read + fill + update)."""
        return self.en.access.sum(axis=3)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per mapping: the scalar metrics, and the parts of ``energy_pj`` (they add up to it;
        a stacked bar of the level columns and ``mac_energy_pj`` alone had left out the MACs' and the
        vector unit's leakage, up to 40 % of the energy): ``energy_<level>_pj`` (its accesses, network
        and leakage), ``mac_energy_pj`` (the MACs' dynamic energy), ``mac_leakage_pj`` and
        ``vector_unit_leakage_pj`` (0 without a vector unit)."""
        import pandas as pd

        cols: dict[str, Any] = {
            "energy_pj": self.energy_pj, "latency_cycles": self.latency_cycles, "latency_s": self.latency_s,
            "power_mw": self.power_mw, "edp": self.edp, "utilization": self.utilization, "macs": self.macs,
            "compute_cycles": self.lat.compute, "mac_energy_pj": self.en.mac,
            "mac_leakage_pj": self.en.mac_leakage, "vector_unit_leakage_pj": self.en.vector_leakage,
        }
        for li, name in enumerate(self.level_names):
            cols[f"energy_{name}_pj"] = self.level_energy_pj[:, li]
        return pd.DataFrame(cols)

    def row(self, i: int, area: dict[str, float]) -> Evaluation:
        """Mapping ``i`` as an :class:`Evaluation`; ``area`` is the config's area breakdown
        (costmodel.area.area_breakdown: its parts and their ``total``)."""
        if as_int(i) is None or not -len(self) <= i < len(self):
            raise IndexError(f"row {i!r}: the batch has {len(self)} mappings")
        if "total" not in area:
            raise ValueError("area: expected costmodel.area.area_breakdown(arch), with its 'total'")
        return Evaluation(self, int(i) % len(self), dict(area))


def _scalar(name: str) -> property:
    """A metric of one row of the batch, as a Python number."""
    return property(lambda self: getattr(self.batch, name)[self.index].item(), doc=f"``{name}`` of this mapping.")


@dataclass
class Evaluation:
    """One mapping's metrics: a view on row ``index`` of a BatchEvaluation plus the config's area."""

    batch: BatchEvaluation
    index: int
    area: dict[str, float]

    energy_pj = _scalar("energy_pj")
    latency_cycles = _scalar("latency_cycles")
    latency_s = _scalar("latency_s")
    power_mw = _scalar("power_mw")
    edp = _scalar("edp")
    utilization = _scalar("utilization")
    macs = _scalar("macs")

    @property
    def area_mm2(self) -> float:
        return float(self.area["total"])

    def accesses_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """{level: {tensor: {reads, writes, fills, updates}}} (totals over the level's instances)."""
        a, i = self.batch.accesses, self.index
        out: dict[str, dict[str, dict[str, int]]] = {}
        for li, lv in enumerate(self.batch.level_names):
            out[lv] = {}
            for ti, t in enumerate(self.batch.tensor_names):
                fills, updates = int(a.fills[i, li, ti]), int(a.updates[i, li, ti])
                out[lv][t] = {"reads": int(a.reads[i, li, ti]), "writes": fills + updates,
                              "fills": fills, "updates": updates}
        return out

    def energy_breakdown(self) -> dict[str, Any]:
        """{level: {tensor: {read, fill, update}}, mac, network: {level}, leakage: {level, mac,
        vector_unit}} in pJ; its leaves add up to ``energy_pj``."""
        en, i = self.batch.en, self.index
        out: dict[str, Any] = {}
        for li, lv in enumerate(self.batch.level_names):
            out[lv] = {t: {act: float(en.access[i, li, ti, k]) for k, act in enumerate(ACTIONS)}
                       for ti, t in enumerate(self.batch.tensor_names)}
        out["mac"] = float(en.mac[i])
        out["network"] = {lv: float(en.network[i, li].sum()) for li, lv in enumerate(self.batch.level_names)}
        out["leakage"] = {lv: float(en.leakage[i, li]) for li, lv in enumerate(self.batch.level_names)}
        out["leakage"]["mac"] = float(en.mac_leakage[i])
        out["leakage"]["vector_unit"] = float(en.vector_leakage[i])
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain data with the keys of DESIGN.md section 4 (JSON-ready)."""
        return {
            "energy_pj": self.energy_pj,
            "latency_cycles": int(self.latency_cycles),
            "latency_s": self.latency_s,
            "area_mm2": self.area_mm2,
            "power_mw": self.power_mw,
            "macs": int(self.macs),
            "utilization": self.utilization,
            "edp": self.edp,
            "accesses": self.accesses_dict(),
            "energy_breakdown_pj": self.energy_breakdown(),
            "area_breakdown_mm2": {k: float(v) for k, v in self.area.items() if k != "total"},
            "compute_cycles": int(self.batch.lat.compute[self.index]),
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per (level, tensor): accesses and energy by action."""
        import pandas as pd

        acc, en = self.accesses_dict(), self.energy_breakdown()
        rows = [{"level": lv, "tensor": t, **acc[lv][t], **{f"{k}_pj": v for k, v in en[lv][t].items()}}
                for lv in self.batch.level_names for t in self.batch.tensor_names]
        return pd.DataFrame(rows)


def evaluate_batch(problem: Problem, arch: Architecture, batch: MappingBatch, *, overlap: bool = True,
                   systolic_mode: SystolicMode | None = None, check: bool = True) -> BatchEvaluation:
    """Evaluate B mappings of one layer at once. ``check`` (costmodel.batch_check) refuses a batch that
    is not a set of mappings of this problem on this config, which the counting kernel would read out
    of bounds; the mappers, whose batches are valid by construction, skip it (it costs 6-9 % of the
    evaluation: a second pass over the batch)."""
    from costmodel.analysis import CountStage
    from costmodel.arch import as_architecture
    from costmodel.mapping import MappingBatch
    from costmodel.problem import expect_problem

    problem, arch = expect_problem(problem), as_architecture(arch)
    if not isinstance(batch, MappingBatch):
        raise TypeError(f"batch: expected a MappingBatch (MappingBatch.from_mappings([...], problem, arch), or "
                        f"evaluate() for one Mapping), got {type(batch).__name__}")
    for name, flag in (("overlap", overlap), ("check", check)):
        if not isinstance(flag, (bool, np.bool_)):  # "no" would be taken as True
            raise TypeError(f"evaluate_batch: {name} must be True or False, got {flag!r}")
    level_names = tuple(lv.name for lv in arch.levels)
    clash = sorted(set(level_names) & set(RESERVED))
    if clash:
        raise UserError(f"{getattr(arch, 'source', arch.name)}: level names {clash} are reserved for the "
                        f"energy breakdown ({', '.join(RESERVED)}); rename the level")
    b = len(batch)
    counts = CountStage(problem, arch, batch, check=check)
    acc = counts.acc
    timing = LatencyStage(problem, arch, batch, acc, overlap=overlap, systolic_mode=systolic_mode)
    cycles, seconds = timing.lat.total, np.empty(b)
    energies = EnergyStage(arch, acc, seconds)
    for lo in range(0, b, CHUNK):  # each chunk through every stage (see CHUNK)
        hi = min(b, lo + CHUNK)
        counts.run(lo, hi)
        timing.run(lo, hi)
        np.divide(cycles[lo:hi], float(arch.clock_hz), out=seconds[lo:hi])
        energies.run(lo, hi)
    lat, en = timing.lat, energies.en
    macs = np.asarray(acc.macs, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.where(seconds > 0, en.total * 1e-9 / seconds, 0.0)  # pJ/s * 1e-9 = mW
    return BatchEvaluation(
        level_names=level_names,
        tensor_names=tuple(t.name for t in problem.tensors),
        accesses=acc, lat=lat, en=en, macs=macs,
        latency_cycles=cycles, latency_s=seconds, energy_pj=en.total, power_mw=power,
        edp=en.total * seconds,
        utilization=macs / (float(arch.num_pes) * np.maximum(cycles, 1)),
    )


def evaluate(problem: Problem, arch: Architecture, mapping: Mapping, *, overlap: bool = True,
             systolic_mode: SystolicMode | None = None) -> Evaluation:
    """Evaluate one mapping: a batch of one, with the config's area breakdown. The mapping is
    validated first (a UserError names what makes it impossible: a tile that overflows a buffer
    gets no numbers).

    A padded mapping is costed as the padded loop nest it executes (padded MACs and tiles take energy
    and cycles); ``macs`` and ``utilization`` count the layer's real MACs."""
    from costmodel.arch import as_architecture
    from costmodel.area import area_breakdown
    from costmodel.mapping import Mapping, MappingBatch
    from costmodel.problem import expect_problem

    problem, arch = expect_problem(problem), as_architecture(arch)
    if not isinstance(mapping, Mapping):
        raise TypeError(f"mapping: expected a Mapping (Mapping.from_dict(data, arch) or load_mapping(path, ...)), "
                        f"got {type(mapping).__name__}")
    mapping.validate(problem, arch)
    executed = mapping.problem_for(problem)
    batch = MappingBatch.from_mappings([mapping], executed, arch)
    ev = evaluate_batch(executed, arch, batch, overlap=overlap, systolic_mode=systolic_mode)
    if executed is not problem:
        ev.macs = np.full_like(ev.macs, problem.macs)
        ev.utilization = ev.macs / (float(arch.num_pes) * np.maximum(ev.latency_cycles, 1))
    return ev.row(0, dict(area_breakdown(arch)))
