"""Energy of a batch of mappings from their access counts (DESIGN.md section 2).

``energy = sum over levels and tensors of (reads * read_pj + (fills + updates) * write_pj)
+ MACs * mac.energy_pj + network words * hop_pj + leakage power * time``.

Leakage convention (the same for vector layers, ``costmodel/vector.py``): the whole chip leaks for
the layer's duration, busy or not: every instance of every level, every MAC, and the vector unit
(``vector_unit.leak_mw``, when the config has one: it idles through a MAC layer but stays powered).

Per-word energies are the architecture's resolved ``read_pj`` / ``write_pj`` (the technology model,
or the config's overrides); a fill (a word arriving from the parent) and an update (a partial sum
written back by a child) both cost one write. The totals are compiled (costmodel.energy_kernel),
the breakdown arrays numpy over the batch axis; they add up to the total (up to float rounding:
the total is computed from per-level sums, the breakdown per level, tensor and action).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from costmodel.analysis import Accesses
    from costmodel.arch import Architecture

ACTIONS = ("read", "fill", "update")
"""Actions of the per-access breakdown (a write is a fill or an update)."""

PJ_PER_MW_S = 1e9
"""1 mW for 1 s = 1e-3 J = 1e9 pJ."""


def _lbt(a: np.ndarray) -> np.ndarray:
    """A [B, L, T] count array as [L, T, B] (a view; the analysis stores counts batch-last)."""
    return a.transpose(1, 2, 0)


@dataclass
class Energy:
    """Energy (pJ) of B mappings. ``total`` and ``mac`` [B] are computed eagerly (the mappers need
    only totals), the leakage of the MACs and of the vector unit (zero without one) from
    ``seconds`` and their rates (pJ/s) on first use, and so are the breakdown arrays: ``access``
    [B, L, T, 3] (read, fill, update), ``network`` [B, L, T] (words over the fan-out below each
    level), ``leakage`` [B, L]."""

    total: np.ndarray
    mac: np.ndarray
    seconds: np.ndarray
    acc: Accesses
    vectors: dict[str, np.ndarray]
    mac_rate: float
    vector_rate: float

    @cached_property
    def mac_leakage(self) -> np.ndarray:
        return self.seconds * self.mac_rate

    @cached_property
    def vector_leakage(self) -> np.ndarray:
        return self.seconds * self.vector_rate

    @cached_property
    def access(self) -> np.ndarray:
        rd = self.vectors["read_pj"][None, :, None]
        wr = self.vectors["write_pj"][None, :, None]
        a = self.acc
        return np.stack([a.reads * rd, a.fills * wr, a.updates * wr], axis=3)

    @cached_property
    def network(self) -> np.ndarray:
        return self.acc.hops * self.vectors["hop_pj"][None, :, None]

    @cached_property
    def leakage(self) -> np.ndarray:
        return self.seconds[:, None] * self.vectors["leak_mw"][None, :] * PJ_PER_MW_S

    def per_level(self) -> np.ndarray:
        """[B, L]: access + network + leakage energy of each level. (The access energies summed as one
        contiguous axis per level: numpy's order for two axes depended on B, so a mapping evaluated
        alone and as a row of a batch differed in the last bit.)"""
        b, n_lv, n_t, n_a = self.access.shape  # (sizes, not -1: a batch of none has no size to infer)
        return self.access.reshape(b, n_lv, n_t * n_a).sum(axis=2) + self.network.sum(axis=2) + self.leakage


def level_vectors(arch: Architecture) -> dict[str, np.ndarray]:
    """Per-level constants as arrays [L]: read/write/hop pJ per word, leakage mW of all instances."""
    lv = arch.levels
    return {
        "read_pj": np.array([x.read_pj for x in lv], dtype=np.float64),
        "write_pj": np.array([x.write_pj for x in lv], dtype=np.float64),
        "hop_pj": np.array([x.hop_pj for x in lv], dtype=np.float64),
        "leak_mw": np.array([x.leak_mw * x.instances for x in lv], dtype=np.float64),
    }


def energy(arch: Architecture, acc: Accesses, latency_s: np.ndarray) -> Energy:
    """Energy of every mapping of a batch, given its access counts and its latency in seconds [B]."""
    stage = EnergyStage(arch, acc, np.asarray(latency_s, dtype=np.float64))
    stage.run(0, len(stage.en.total))
    return stage.en


class EnergyStage:
    """The energy of one batch, computed a range of mappings at a time (costmodel.energy_kernel)
    from their counts and ``seconds`` (as costmodel.analysis.CountStage, whose ranges it follows in
    ``evaluate_batch``): ``en`` holds it, ``total[i]`` once a :meth:`run` has covered ``i``.
    ``seconds`` [B] float64 is read as it stands when :meth:`run` is called."""

    def __init__(self, arch: Architecture, acc: Accesses, seconds: np.ndarray) -> None:
        v = level_vectors(arch)
        vu = getattr(arch, "vector_unit", None)
        mac_rate = float(arch.mac.leak_mw) * arch.num_pes * PJ_PER_MW_S
        vector_rate = 0.0 if vu is None else float(vu.leak_mw) * PJ_PER_MW_S
        mac = np.asarray(acc.macs, dtype=np.float64) * float(arch.mac.energy_pj)
        self.en = Energy(total=np.empty(len(mac)), mac=mac, seconds=seconds, acc=acc, vectors=v,
                         mac_rate=mac_rate, vector_rate=vector_rate)
        rates = np.array([mac_rate, v["leak_mw"].sum() * PJ_PER_MW_S, vector_rate])  # the formula's order
        self._inputs = (*(_lbt(a) for a in (acc.reads, acc.fills, acc.updates, acc.hops)), seconds, mac,
                        v["read_pj"], v["write_pj"], v["hop_pj"], rates)

    def run(self, lo: int, hi: int) -> None:
        """Totals of mappings lo..hi-1 (their counts and seconds must be in already)."""
        from costmodel import energy_kernel

        energy_kernel.totals(*self._inputs, lo, hi, self.en.total)
