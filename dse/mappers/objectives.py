"""What a mapper minimizes: energy, latency, EDP (default) or a weighted mix, under optional limits.

A mix is a weighted geometric one, ``energy^a * latency^b`` (EDP is a = b = 1, ED^2P is a = 1, b = 2):
unit-free, and monotone in each metric, which is what lets the exhaustive mapper prune with lower
bounds (a bound on each metric bounds the score). Limits (``max_latency_cycles``,
``max_energy_pj``) make a mapping infeasible (score +inf) rather than penalized.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodel.errors import UserError

NAMED = {"edp": (1.0, 1.0), "energy": (1.0, 0.0), "latency": (0.0, 1.0), "ed2p": (1.0, 2.0)}


@dataclass(frozen=True)
class Objective:
    """``score = energy_pj**energy_weight * latency_cycles**latency_weight`` (lower is better)."""

    energy_weight: float = 1.0
    latency_weight: float = 1.0
    max_latency_cycles: float | None = None
    max_energy_pj: float | None = None
    name: str = "edp"

    def __post_init__(self) -> None:
        a, b = self.energy_weight, self.latency_weight
        # a negative weight would search for the worst mapping; inf / nan make every score equal
        if not (0 <= a < math.inf and 0 <= b < math.inf) or a + b <= 0:
            raise UserError(f"objective {self.name!r}: weights must be finite and >= 0, not both 0; got "
                            f"energy {a:g}, latency {b:g}")
        for limit in ("max_latency_cycles", "max_energy_pj"):
            v = getattr(self, limit)
            if v is not None and (not _real(v) or not 0 < v < math.inf):
                raise UserError(f"objective {self.name!r}: {limit} must be a positive number, got {v!r}")

    def limits(self) -> str:
        """The limits as written, e.g. ``max_latency_cycles 48``; "" when there are none."""
        return ", ".join(f"{k} {v:g}" for k, v in (("max_latency_cycles", self.max_latency_cycles),
                                                   ("max_energy_pj", self.max_energy_pj)) if v is not None)

    @classmethod
    def parse(cls, spec: str | Objective | dict[str, Any] | None, **limits: Any) -> Objective:
        """``"edp"``, ``"energy"``, ``"latency"``, ``"ed2p"``, ``"energy:1,latency:2"`` or a dict."""
        if isinstance(spec, Objective):
            return spec
        if spec is None:
            spec = "edp"
        if isinstance(spec, dict):
            return cls._from_dict(spec, limits)
        if not isinstance(spec, str):
            raise UserError(f"objective: expected a name, a mix like 'energy:1,latency:2', a dict or an "
                            f"Objective, got {spec!r}")
        key = spec.strip().lower()
        if key in NAMED:
            a, b = NAMED[key]
            return cls(a, b, name=key, **limits)
        try:
            pairs = [p.split(":") for p in key.split(",")]
            parts = dict(pairs)
            if len(parts) < len(pairs):  # energy:1,energy:2
                raise ValueError
            a, b = float(parts.pop("energy", 0)), float(parts.pop("latency", 0))
            if parts:
                raise ValueError
        except ValueError:
            raise UserError(f"objective: expected one of {sorted(NAMED)} or a mix like 'energy:1,latency:2' "
                            f"(each named once), got {spec!r}") from None
        return cls(a, b, name=key, **limits)

    @classmethod
    def _from_dict(cls, spec: dict[str, Any], limits: dict[str, Any]) -> Objective:
        """``{"energy": a, "latency": b}`` plus optional limits; also the form :meth:`to_dict` writes.
        An unknown key is an error: a misspelt weight would silently count as 0."""
        known = {"energy": "energy_weight", "latency": "latency_weight", "energy_weight": "energy_weight",
                 "latency_weight": "latency_weight", "max_latency_cycles": "max_latency_cycles",
                 "max_energy_pj": "max_energy_pj", "name": "name"}
        unknown = sorted(set(map(str, spec)) - set(known))
        if unknown:
            raise UserError(f"objective: unknown key(s) {unknown}; expected energy, latency, max_latency_cycles, "
                            f"max_energy_pj")
        fields: dict[str, Any] = {"energy_weight": 0.0, "latency_weight": 0.0, "name": "mix"}
        for k, v in spec.items():
            fields[known[k]] = v
        for w in ("energy_weight", "latency_weight"):
            if not _real(fields[w]):
                raise UserError(f"objective: {w.split('_')[0]} weight must be a number, got {fields[w]!r}")
            fields[w] = float(fields[w])
        return cls(**{**fields, **limits})

    def score(self, energy_pj: np.ndarray, latency_cycles: np.ndarray) -> np.ndarray:
        """Scores (log domain, so large mixes do not overflow); +inf where a limit is exceeded."""
        e = np.asarray(energy_pj, dtype=np.float64)
        lat = np.asarray(latency_cycles, dtype=np.float64)
        with np.errstate(divide="ignore"):
            s = self.energy_weight * np.log(e) + self.latency_weight * np.log(lat)
        bad = np.zeros(s.shape, bool)
        if self.max_latency_cycles is not None:
            bad |= lat > self.max_latency_cycles
        if self.max_energy_pj is not None:
            bad |= e > self.max_energy_pj
        return np.where(bad, np.inf, s)

    def bound(self, energy_lb: np.ndarray, latency_lb: np.ndarray) -> np.ndarray:
        """A lower bound on the score of every mapping whose metrics are at least these bounds."""
        return self.score(energy_lb, latency_lb)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "energy_weight": self.energy_weight, "latency_weight": self.latency_weight,
                "max_latency_cycles": self.max_latency_cycles, "max_energy_pj": self.max_energy_pj}


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def pareto_mask(energy: np.ndarray, latency: np.ndarray) -> np.ndarray:
    """True for points no other point beats in both metrics (of equal points, one survives)."""
    order = np.lexsort((latency, energy))
    lat = np.asarray(latency, dtype=np.float64)[order]
    prev = np.concatenate([[np.inf], np.minimum.accumulate(lat)[:-1]])
    keep = np.zeros(len(order), bool)
    keep[order] = lat < prev
    return keep


def dominated(front_energy: np.ndarray, front_latency: np.ndarray, energy: np.ndarray,
              latency: np.ndarray) -> np.ndarray:
    """True where some front point is no worse in both metrics (``front_*`` sorted by energy)."""
    if len(front_energy) == 0:
        return np.zeros(np.shape(energy), bool)
    best_lat = np.minimum.accumulate(front_latency)
    i = np.searchsorted(front_energy, energy, side="right") - 1
    return (i >= 0) & (best_lat[np.maximum(i, 0)] <= latency)
