"""The incumbent and the Pareto front a search keeps while it evaluates batches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dse.mappers.objectives import Objective, dominated, pareto_mask
from dse.mappers.result import concat, metrics_of, take

if TYPE_CHECKING:
    from costmodel.mapping import MappingBatch


@dataclass
class SearchState:
    objective: Objective
    track_pareto: bool = False
    best_score: float = np.inf
    best: MappingBatch | None = None
    best_metrics: dict[str, float] | None = None
    evaluated: int = 0
    improved_at: int = 0  # ``evaluated`` when the best score (or the front) last improved
    front_e: np.ndarray = field(default_factory=lambda: np.zeros(0))
    front_l: np.ndarray = field(default_factory=lambda: np.zeros(0))
    front: MappingBatch | None = None
    lowest: tuple[float, float] = (np.inf, np.inf)
    """The lowest energy (pJ) and latency (cycles) among the mappings evaluated, limits or not: what
    to tell a user whose limits no mapping met."""

    def update(self, batch: MappingBatch, ev) -> np.ndarray:
        """Take a batch's evaluation into account; returns its scores."""
        self.evaluated += len(batch)
        if len(batch):
            self.lowest = (min(self.lowest[0], float(ev.energy_pj.min())),
                           min(self.lowest[1], float(ev.latency_cycles.min())))
        scores = self.objective.score(ev.energy_pj, ev.latency_cycles)
        i = int(np.argmin(scores))
        if scores[i] < self.best_score:
            self.improved_at = self.evaluated
            self.best_score = float(scores[i])
            self.best = take(batch, np.array([i]))
            self.best_metrics = metrics_of(ev, i)
        if self.track_pareto:
            ok = np.isfinite(scores)
            e, lat = ev.energy_pj[ok], ev.latency_cycles[ok].astype(np.float64)
            cand = np.nonzero(ok)[0][pareto_mask(e, lat)]
            if cand.size:
                all_e = np.concatenate([self.front_e, ev.energy_pj[cand]])
                all_l = np.concatenate([self.front_l, ev.latency_cycles[cand].astype(np.float64)])
                parts = [p for p in (self.front, take(batch, cand)) if p is not None]
                merged = concat(parts)
                keep = np.nonzero(pareto_mask(all_e, all_l))[0]
                if (keep >= len(self.front_e)).any():  # a new point joined the front
                    self.improved_at = self.evaluated
                order = keep[np.argsort(all_e[keep], kind="stable")]
                self.front_e, self.front_l, self.front = all_e[order], all_l[order], take(merged, order)
        return scores

    def prunable(self, score_lb: np.ndarray, energy_lb: np.ndarray, latency_lb: np.ndarray) -> np.ndarray:
        """Candidates whose bounds show they can neither beat the incumbent nor join the front."""
        out = score_lb >= self.best_score
        if self.track_pareto:
            out &= dominated(self.front_e, self.front_l, energy_lb, latency_lb)
        return out
