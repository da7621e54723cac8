"""The fast mapper's candidates as arrays, and their evaluation with every distinct mapping scored once.

A candidate (genome) is one factorization-table row per dimension (``rows [P, D]``), the loop order
as each level's ranks (``ranks [P, L, D]``, the ranks of random keys at first), and a keep option
(``keep [P]``). :class:`Evaluator` owns the budget: it hashes each candidate's canonical form (factor-1
loops order nothing, so they are left out of the order) and sends only valid, never seen candidates
to :func:`costmodel.evaluate.evaluate_batch`, in one batch per call.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.evaluate import evaluate_batch
from costmodel.mapping import ORDER_DTYPE, MappingBatch, batch_last
from dse.mappers.seen import SeenTable, hashes

if TYPE_CHECKING:
    from dse.mappers.search_state import SearchState
    from dse.mapspace import Mapspace


class Genomes:
    """A population as arrays: ``rows [P, D]``, ``ranks [P, L, D]``, ``keep [P]``. The genetic
    operators exchange whole levels of ranks or swap two of a level's entries, which is what they did
    to random keys before ranking them, so the ranks are carried instead of being sorted out of the
    keys at every evaluation."""

    def __init__(self, rows: np.ndarray, ranks: np.ndarray, keep: np.ndarray) -> None:
        self.rows, self.ranks, self.keep = rows, ranks.astype(ORDER_DTYPE, copy=False), keep  # (ranks < D)

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, idx: np.ndarray | slice) -> Genomes:
        return Genomes(self.rows[idx], self.ranks[idx], self.keep[idx])

    def copy(self) -> Genomes:
        return Genomes(self.rows.copy(), self.ranks.copy(), self.keep.copy())

    @staticmethod
    def cat(parts: list[Genomes]) -> Genomes:
        return Genomes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("rows", "ranks", "keep")))


def ranks_of(keys: np.ndarray) -> np.ndarray:
    """[P, L, D] loop-order ranks (0 = outermost) of random keys [P, L, D]."""
    return np.argsort(np.argsort(keys, axis=2, kind="stable"), axis=2, kind="stable")


class Evaluator:
    """Scores candidates within an evaluation budget and a deadline, each distinct mapping once."""

    def __init__(self, ms: Mapspace, state: SearchState, budget: int, deadline: float,
                 eval_kw: dict[str, Any], victory: int | None = None) -> None:
        self.ms, self.state, self.budget, self.deadline, self.eval_kw = ms, state, budget, deadline, eval_kw
        self.victory = victory
        self.seen = SeenTable()  # the hashes of the candidates evaluated so far, with their scores
        self._salt = np.random.default_rng(12345).integers(1, 2**62, size=4096, dtype=np.int64) | 1

    def left(self) -> int:
        """Evaluations left: 0 once the deadline has passed or ``victory`` evaluations in a row have
        not improved the best score (or the front)."""
        st = self.state
        if self.victory is not None and st.evaluated - st.improved_at >= self.victory:
            return 0
        return self.room()

    def room(self) -> int:
        """Evaluations the budget still allows (0 once the deadline has passed)."""
        if time.perf_counter() > self.deadline:
            return 0
        return self.budget - self.state.evaluated

    def __call__(self, g: Genomes, reuse: bool = False) -> np.ndarray:
        """Scores of valid, not yet seen candidates (others +inf), within the budget; with ``reuse``,
        candidates seen before get their earlier score (without counting as evaluations)."""
        n = len(g)
        scores = np.full(n, np.inf)
        if not n:
            return scores
        g.ranks = self.ms.with_inner_orders(g.ranks)  # (the candidates keep the constrained order)
        h = self._hash(g)
        first, known = self.seen.scan(h)
        new = np.nonzero(first == np.arange(n))[0]  # the first candidates of unseen hashes
        if new.size:  # only candidates never seen are checked
            done, done_scores = self._evaluate(g, new)
            scores[new[done]] = done_scores
            self.seen.add(h[new[done]], done_scores)
        return np.where(first >= 0, scores[first], known) if reuse else scores

    def _evaluate(self, g: Genomes, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores the valid ones of candidates ``new`` within the budget. Returns the positions in
        ``new`` to remember (the ones evaluated, and the invalid ones) and their scores (+inf when
        invalid). Only candidates that fit the fan-outs (a quarter do not) are decoded."""
        ms = self.ms
        sp = np.nonzero(ms.spatial_ok(g.rows[new]))[0]
        t, sx, sy = ms.decode(g.rows[new[sp]], batch_last=True)
        keep = batch_last(ms.keep_options, g.keep[new[sp]])
        fits = ms.fits(t, sx, sy, keep)
        run = np.nonzero(fits)[0][: max(0, self.room())]
        out = np.full(new.size, np.inf)
        if run.size:
            factors = (t, sx, sy, keep)
            if run.size < fits.size:  # else every decoded candidate runs: no gather
                factors = tuple(batch_last(a, run) for a in factors)
            batch = MappingBatch(*factors[:3], batch_last(g.ranks, new[sp[run]]), factors[3])
            ev = evaluate_batch(ms.problem, ms.arch, batch, check=False, **self.eval_kw)  # valid by construction
            out[sp[run]] = self.state.update(batch, ev)
        done = np.ones(new.size, bool)
        done[sp[fits]] = False  # valid ones left unevaluated are not remembered
        done[sp[run]] = True
        return np.nonzero(done)[0], out[done]

    def _hash(self, g: Genomes) -> np.ndarray:
        """A 64-bit hash of each candidate's canonical form (a collision only skips one candidate)."""
        ms = self.ms
        return hashes(g.rows, g.ranks, g.keep, ms.row_levels, ms.row_offset, self._salt)
