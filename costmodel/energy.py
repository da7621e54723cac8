"""Energy of a batch of mappings from their access counts (DESIGN.md section 2).

``energy = sum over levels and tensors of (reads * read_pj + (fills + updates) * write_pj)
+ MACs * mac.energy_pj + network words * hop_pj + leakage power * time``.

Leakage convention (the same for vector layers, ``costmodel/vector.py``): the whole chip leaks for
the layer's duration, busy or not: every instance of every level, every MAC, and the vector unit
(``vector_unit.leak_mw``, when the config has one: it idles through a MAC layer but stays powered).

Per-word energies are the architecture's resolved ``read_pj`` / ``write_pj`` (the technology model,
or the config's overrides); a fill (a word arriving from the parent) and an update (a partial sum
written back by a child) both cost one write. Everything is numpy over
the batch axis; the breakdown arrays add up to the total (up to float rounding: the total is
computed from per-level sums, the breakdown per level, tensor and action).
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
    """Energy (pJ) of B mappings. ``total``, ``mac``, ``mac_leakage``, ``vector_leakage`` (the
    vector unit's, zero without one) [B] are computed eagerly (the
    mappers need only totals); the breakdown arrays are computed on first use: ``access``
    [B, L, T, 3] (read, fill, update), ``network`` [B, L, T] (words over the fan-out below each
    level), ``leakage`` [B, L]."""

    total: np.ndarray
    mac: np.ndarray
    mac_leakage: np.ndarray
    vector_leakage: np.ndarray
    seconds: np.ndarray
    acc: Accesses
    vectors: dict[str, np.ndarray]

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
        """[B, L]: access + network + leakage energy of each level."""
        return self.access.sum(axis=(2, 3)) + self.network.sum(axis=2) + self.leakage


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
    v = level_vectors(arch)
    seconds = np.asarray(latency_s, dtype=np.float64)
    # totals as [L] . [L, B] products over per-level word sums (the hot path: no [B, L, T] temporaries)
    reads = _lbt(acc.reads).sum(axis=1)
    writes = _lbt(acc.fills).sum(axis=1) + _lbt(acc.updates).sum(axis=1)
    hops = _lbt(acc.hops).sum(axis=1)
    mac = np.asarray(acc.macs, dtype=np.float64) * float(arch.mac.energy_pj)
    mac_leakage = seconds * (float(arch.mac.leak_mw) * arch.num_pes * PJ_PER_MW_S)
    total = v["read_pj"] @ reads + v["write_pj"] @ writes + v["hop_pj"] @ hops + mac + mac_leakage
    total += seconds * (v["leak_mw"].sum() * PJ_PER_MW_S)
    vu = getattr(arch, "vector_unit", None)
    if vu is None:
        vector_leakage = np.zeros_like(seconds)
    else:
        vector_leakage = seconds * (float(vu.leak_mw) * PJ_PER_MW_S)
        total += vector_leakage
    return Energy(total=total, mac=mac, mac_leakage=mac_leakage, vector_leakage=vector_leakage,
                  seconds=seconds, acc=acc, vectors=v)
