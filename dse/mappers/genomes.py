"""The fast mapper's candidates as arrays, and their evaluation with every distinct mapping scored once.

A candidate (genome) is one factorization-table row per dimension (``rows [P, D]``), random keys per
level and dimension whose ranks are the loop order (``keys [P, L, D]``), and a keep option
(``keep [P]``). :class:`Evaluator` owns the budget: it hashes each candidate's canonical form (factor-1
loops order nothing, so they are left out of the order) and sends only valid, never seen candidates
to :func:`costmodel.evaluate.evaluate_batch`, in one batch per call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.evaluate import evaluate_batch
from costmodel.mapping import MappingBatch
from costmodel.tiles import tile_words
from dse.mappers.result import batch_last

if TYPE_CHECKING:
    from dse.mappers.search_state import SearchState
    from dse.mapspace import Mapspace


class Genomes:
    """A population as arrays: ``rows [P, D]``, ``keys [P, L, D]``, ``keep [P]``."""

    def __init__(self, rows: np.ndarray, keys: np.ndarray, keep: np.ndarray) -> None:
        self.rows, self.keys, self.keep = rows, keys, keep

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, idx: np.ndarray) -> Genomes:
        return Genomes(self.rows[idx], self.keys[idx], self.keep[idx])

    def copy(self) -> Genomes:
        return Genomes(self.rows.copy(), self.keys.copy(), self.keep.copy())

    def ranks(self) -> np.ndarray:
        """[P, L, D] loop-order ranks (0 = outermost) from the keys."""
        return np.argsort(np.argsort(self.keys, axis=2, kind="stable"), axis=2, kind="stable")

    @staticmethod
    def cat(parts: list[Genomes]) -> Genomes:
        return Genomes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("rows", "keys", "keep")))


class Evaluator:
    """Scores candidates within an evaluation budget and a deadline, each distinct mapping once."""

    def __init__(self, ms: Mapspace, state: SearchState, budget: int, deadline: float,
                 eval_kw: dict[str, Any], victory: int | None = None) -> None:
        self.ms, self.state, self.budget, self.deadline, self.eval_kw = ms, state, budget, deadline, eval_kw
        self.victory = victory
        self.seen = np.zeros(0, np.int64)  # sorted hashes of the candidates evaluated so far
        self.seen_score = np.zeros(0)  # and their scores
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

    def __call__(self, g: Genomes, ranks: np.ndarray | None = None, reuse: bool = False) -> np.ndarray:
        """Scores of valid, not yet seen candidates (others +inf), within the budget; with ``reuse``,
        candidates seen before get their earlier score (without counting as evaluations)."""
        ms, n = self.ms, len(g)
        scores = np.full(n, np.inf)
        if not n:
            return scores
        ranks = g.ranks() if ranks is None else ranks
        h = self._hash(g, ms.active(g.rows), ranks)
        order = np.argsort(h, kind="stable")
        hs = h[order]
        fresh = np.zeros(n, bool)
        fresh[order[np.concatenate([[True], hs[1:] != hs[:-1]])]] = True  # first of equal hashes
        known, at = self._known(h)
        new = np.nonzero(fresh & ~known)[0]
        if new.size:  # only candidates never seen are decoded and checked
            t, sx, sy = ms.decode(g.rows[new])
            keep = ms.keep_options[g.keep[new]]
            valid = self._valid(t, sx, sy, keep)
            ok = np.nonzero(valid)[0][: max(0, self.room())]
            idx = new[ok]
            if idx.size:
                batch = MappingBatch(*(batch_last(a) for a in (t[ok], sx[ok], sy[ok], ranks[idx], keep[ok])))
                scores[idx] = self.state.update(batch, evaluate_batch(ms.problem, ms.arch, batch, **self.eval_kw))
            bad = new[~valid]  # invalid candidates are remembered too, with their +inf
            self._remember(np.concatenate([h[idx], h[bad]]), np.concatenate([scores[idx], scores[bad]]))
        if reuse:
            known, at = self._known(h)
            scores = np.where(known & np.isinf(scores), self.seen_score[at], scores)
        return scores

    def _valid(self, t: np.ndarray, sx: np.ndarray, sy: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Mapping.validate's rule for factors [C, L, D] and keep choices [C, L, T]."""
        ms = self.ms
        words = tile_words(ms.problem, _Factors(t, sx, sy))
        return ms.spatial_ok(sx, sy) & ((words * keep).sum(axis=2) <= ms.usable).all(axis=1)

    def _hash(self, g: Genomes, active: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """A 64-bit hash of each candidate's canonical form (a collision only skips one candidate);
        ``ranks`` [P, L, D] are permutations of each level's dims."""
        n, n_lv, n_d = ranks.shape
        # factor-1 loops order nothing: rank the others among themselves (the active loops at smaller
        # ranks, counted in a bitmask of ranks), so equal nests hash equal. Small integer types: the
        # [P, L, D] temporaries of int64 cost more in page faults than in arithmetic
        one = np.min_scalar_type(1 << n_d).type(1)  # the smallest unsigned type for a bit per rank
        bit = np.left_shift(one, ranks.astype(np.uint8))
        on = np.bitwise_or.reduce(bit * active, axis=2, keepdims=True)
        canon = np.where(active, np.bitwise_count(on & (bit - one)).view(np.int8), np.int8(-1))
        salt = self._salt
        with np.errstate(over="ignore"):  # the dot product of [rows, canon, keep] with the salt
            return (g.rows @ salt[:n_d] + canon.reshape(n, -1) @ salt[n_d:n_d * (n_lv + 1)]
                    + g.keep * salt[n_d * (n_lv + 1)])

    def _remember(self, h: np.ndarray, scores: np.ndarray) -> None:
        new = np.argsort(h, kind="stable")
        pos = np.searchsorted(self.seen, h[new])
        self.seen = np.insert(self.seen, pos, h[new])
        self.seen_score = np.insert(self.seen_score, pos, scores[new])

    def _known(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(self.seen):
            return np.zeros(len(h), bool), np.zeros(len(h), np.int64)
        at = np.minimum(np.searchsorted(self.seen, h), len(self.seen) - 1)
        return self.seen[at] == h, at


@dataclass
class _Factors:
    """The factor arrays ``tile_words`` reads (a MappingBatch without orders or keeps)."""

    temporal: np.ndarray
    spatial_x: np.ndarray
    spatial_y: np.ndarray
