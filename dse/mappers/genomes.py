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
from costmodel.mapping import MappingBatch
from dse.mappers.result import take_last

if TYPE_CHECKING:
    from dse.mappers.search_state import SearchState
    from dse.mapspace import Mapspace


class Genomes:
    """A population as arrays: ``rows [P, D]``, ``ranks [P, L, D]``, ``keep [P]``. The genetic
    operators exchange whole levels of ranks or swap two of a level's entries, which is what they did
    to random keys before ranking them, so the ranks are carried instead of being sorted out of the
    keys at every evaluation."""

    def __init__(self, rows: np.ndarray, ranks: np.ndarray, keep: np.ndarray) -> None:
        self.rows, self.ranks, self.keep = rows, ranks, keep

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

    def __call__(self, g: Genomes, reuse: bool = False) -> np.ndarray:
        """Scores of valid, not yet seen candidates (others +inf), within the budget; with ``reuse``,
        candidates seen before get their earlier score (without counting as evaluations)."""
        ms, n = self.ms, len(g)
        scores = np.full(n, np.inf)
        if not n:
            return scores
        uniq, first, inv = _distinct(self._hash(g, ms.active(g.rows)))
        known, per_hash = self._lookup(uniq)
        unseen = np.nonzero(~known)[0]
        by_index = np.argsort(first[unseen])
        slot, new = unseen[by_index], first[unseen][by_index]  # first candidates of unseen hashes
        if new.size:  # only candidates never seen are checked
            done, done_scores = self._evaluate(g, new)
            scores[new[done]] = per_hash[slot[done]] = done_scores
            self._remember(uniq[slot[done]], done_scores)
        return per_hash[inv] if reuse else scores

    def _evaluate(self, g: Genomes, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores the valid ones of candidates ``new`` within the budget. Returns the positions in
        ``new`` to remember (the ones evaluated, and the invalid ones) and their scores (+inf when
        invalid). Only candidates that fit the fan-outs (a quarter do not) are decoded."""
        ms = self.ms
        sp = np.nonzero(ms.spatial_ok(g.rows[new]))[0]
        t, sx, sy = ms.decode(g.rows[new[sp]], batch_last=True)
        keep = take_last(ms.keep_options, g.keep[new[sp]])
        fits = ms.fits(t, sx, sy, keep)
        run = np.nonzero(fits)[0][: max(0, self.room())]
        out = np.full(new.size, np.inf)
        if run.size:
            batch = MappingBatch(*(take_last(a, run) for a in (t, sx, sy)), take_last(g.ranks, new[sp[run]]),
                                 take_last(keep, run))
            ev = evaluate_batch(ms.problem, ms.arch, batch, **self.eval_kw)
            out[sp[run]] = self.state.update(batch, ev)
        done = np.ones(new.size, bool)
        done[sp[fits]] = False  # valid ones left unevaluated are not remembered
        done[sp[run]] = True
        return np.nonzero(done)[0], out[done]

    def _hash(self, g: Genomes, active: np.ndarray) -> np.ndarray:
        """A 64-bit hash of each candidate's canonical form (a collision only skips one candidate);
        the ranks are permutations of each level's dims."""
        n, n_lv, n_d = g.ranks.shape
        # factor-1 loops order nothing: the others are numbered 1, 2... in their order (counting the
        # active loops at ranks up to theirs in a bitmask of ranks), the factor-1 ones 0, so equal
        # nests hash equal. Dims-first [L, D, P] arrays of small integers: the reductions over dims
        # are then elementwise, and the temporaries small
        act = active.transpose(1, 2, 0)  # [L, D, P]
        one = np.min_scalar_type(1 << n_d).type(1)  # the smallest unsigned type for a bit per rank
        bit = np.left_shift(one, np.ascontiguousarray(g.ranks.transpose(1, 2, 0), dtype=np.uint8))
        on = np.bitwise_or.reduce(bit * act, axis=1, keepdims=True)
        canon = np.bitwise_count(on & (((bit << one) - one) * act))
        salt = self._salt
        with np.errstate(over="ignore"):  # the dot product of [rows, canon, keep] with the salt
            return (g.rows @ salt[:n_d] + salt[n_d:n_d * (n_lv + 1)] @ canon.reshape(n_lv * n_d, n)
                    + g.keep * salt[n_d * (n_lv + 1)])

    def _remember(self, h: np.ndarray, scores: np.ndarray) -> None:
        """Adds the never seen hashes ``h`` with their scores: a merge of two sorted arrays (what
        ``np.insert`` does, without its generality, which cost more than the merge)."""
        order = np.argsort(h)
        at = np.searchsorted(self.seen, h[order]) + np.arange(len(h))  # their places in the merged array
        old = np.ones(len(self.seen) + len(h), bool)
        old[at] = False
        seen, seen_score = np.empty(len(old), np.int64), np.empty(len(old))
        seen[at], seen[old] = h[order], self.seen
        seen_score[at], seen_score[old] = scores[order], self.seen_score
        self.seen, self.seen_score = seen, seen_score

    def _lookup(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whether each of the sorted hashes ``h`` was seen, and its score then (+inf if not)."""
        if not len(self.seen):
            return np.zeros(len(h), bool), np.full(len(h), np.inf)
        at = np.minimum(np.searchsorted(self.seen, h), len(self.seen) - 1)
        known = self.seen[at] == h
        return known, np.where(known, self.seen_score[at], np.inf)


def _distinct(h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct values of ``h`` sorted, the index of the first entry of each, and each entry's
    position among them (sorted needles also make the lookups in the seen hashes faster)."""
    order = np.argsort(h, kind="stable")
    hs = h[order]
    head = np.empty(len(h), bool)
    head[0] = True
    np.not_equal(hs[1:], hs[:-1], out=head[1:])
    inv = np.empty(len(h), np.int64)
    inv[order] = np.cumsum(head) - 1
    return hs[head], order[head], inv
