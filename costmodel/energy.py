"""Energy of a batch of mappings from their access counts (DESIGN.md section 2).

``energy = sum over levels and tensors of (reads * read_pj + (fills + updates) * write_pj)
+ MACs * mac.energy_pj + network words * hop_pj + leakage power * time``.

Per-word energies are the architecture's resolved ``read_pj`` / ``write_pj`` (the technology model,
or the config's overrides); a fill (a word arriving from the parent) and an update (a partial sum
written back by a child) both cost one write. Leakage is charged on every instance of a level, and
on every MAC (``mac.leak_mw`` each), for the whole latency, busy or not. Everything is numpy over
the batch axis; the breakdown arrays add up to the total (the total is computed as their sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from costmodel.analysis import Accesses
    from costmodel.arch import Architecture

ACTIONS = ("read", "fill", "update")
"""Actions of the per-access breakdown (a write is a fill or an update)."""

PJ_PER_MW_S = 1e9
"""1 mW for 1 s = 1e-3 J = 1e9 pJ."""


@dataclass
class Energy:
    """Energy (pJ) of B mappings: ``access`` [B, L, T, 3] (read, fill, update), ``network`` [B, L, T]
    (words over the fan-out below each level), ``mac`` [B], ``leakage`` [B, L], ``mac_leakage`` [B],
    ``total`` [B]."""

    access: np.ndarray
    network: np.ndarray
    mac: np.ndarray
    leakage: np.ndarray
    mac_leakage: np.ndarray
    total: np.ndarray

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
    rd = v["read_pj"][None, :, None]
    wr = v["write_pj"][None, :, None]
    access = np.stack([acc.reads * rd, acc.fills * wr, acc.updates * wr], axis=3)
    network = acc.hops * v["hop_pj"][None, :, None]
    mac = np.asarray(acc.macs, dtype=np.float64) * float(arch.mac.energy_pj)
    seconds = np.asarray(latency_s, dtype=np.float64)
    leakage = seconds[:, None] * v["leak_mw"][None, :] * PJ_PER_MW_S
    mac_leakage = seconds * (float(arch.mac.leak_mw) * arch.num_pes * PJ_PER_MW_S)
    total = access.sum(axis=(1, 2, 3)) + network.sum(axis=(1, 2)) + mac + leakage.sum(axis=1) + mac_leakage
    return Energy(access=access, network=network, mac=mac, leakage=leakage, mac_leakage=mac_leakage,
                  total=total)
