"""The fast mapper's second phase: an iterated variable-neighbourhood descent by a pool of walkers.

A walker takes the best move of its cheapest improving neighbourhood and goes back to the cheapest
after every move: (0) single prime moves, keep options one keep/bypass flip away, the loop-order
classes of each level (:mod:`dse.mapspace.orders`); (1) every split of one dimension, every keep
option, alone and with each prime move; (2) two dimensions trading a place on a fan-out (out of
reach of single moves without a half-idle array). Big neighbourhoods are sampled. A walker that no neighbourhood improves has reached a local
optimum and leaves the pool.

The pool starts with the given walkers and is refilled up to ``width`` with *kicks*: the incumbent
(the best local optimum so far) with two dimensions re-split at random, sometimes another keep
option, and one mutation. Every round evaluates the neighbourhoods of all walkers (and the new kicks)
in one batch, so the cost per round (a few milliseconds of fixed cost in ``evaluate_batch`` and here)
is shared, and no walker waits for the slowest one to finish. The search stops when the budget is
spent or when ``patience`` kicks in a row have ended without beating the incumbent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dse.mappers.evolution import mutate
from dse.mappers.genomes import Evaluator, Genomes

if TYPE_CHECKING:
    from dse.mappers.moves import MoveTables
    from dse.mapspace import Mapspace

LEVELS = 3  # neighbourhood kinds


class Descent:
    def __init__(self, ms: Mapspace, moves: MoveTables, rng: np.random.Generator, evaluate: Evaluator,
                 sample: int = 512, swap_cap: int = 4096) -> None:
        self.ms, self.moves, self.rng, self.evaluate = ms, moves, rng, evaluate
        self.sample, self.swap_cap = sample, swap_cap
        self._free = [d for d, t in enumerate(ms.tables) if len(t.table) > 1]
        flat = ms.keep_options.reshape(len(ms.keep_options), -1)
        # keep options one keep/bypass flip away, per option (a config with 128 options would otherwise
        # put all of them into every cheapest neighbourhood)
        self._flips = [np.nonzero(f)[0] for f in (flat[:, None, :] != flat[None, :, :]).sum(axis=2) == 1]
        self._classes: dict[tuple[int, ...], list[np.ndarray]] = {}  # order classes by active-level bits
        self._fan_moves: dict[tuple[int, int], list[tuple[np.ndarray, np.ndarray]]] = {}

    # ---- neighbourhoods ---------------------------------------------------------------------------
    def neighbourhood(self, g: Genomes, level: int) -> Genomes | None:
        """Moves around the single candidate ``g`` of kind ``level``; None when there are none.
        Kinds 1 and 2 are sampled to ``sample``."""
        if level == 0:
            return self.single_moves(g)
        ms, moves = self.ms, self.moves
        k = len(ms.keep_options)
        rows0, keep0 = g.rows[0], int(g.keep[0])
        rows, keep = [], []  # parts

        def part(r: np.ndarray, kp: np.ndarray | int = keep0) -> None:
            if not len(r):
                return
            rows.append(r)
            keep.append(np.full(len(r), kp, np.int64) if np.ndim(kp) == 0 else kp)

        if level == 1:  # every other split of one dimension; every keep option, also with prime moves
            part(np.repeat(g.rows, k, axis=0), np.arange(k))
            for di in range(len(ms.dims)):
                n = len(ms.tables[di].table)
                if 1 < n <= 512:
                    r = np.repeat(g.rows, n, axis=0)
                    r[:, di] = np.arange(n)
                    part(r)
                nb = moves.neighbours(di, int(rows0[di]))
                if nb.size:
                    r = np.repeat(g.rows, nb.size * k, axis=0)
                    r[:, di] = np.repeat(nb, k)
                    part(r, np.tile(np.arange(k), nb.size))
        else:  # two dimensions trade a place on a fan-out
            swaps = self.spatial_swaps(g)
            if swaps is not None:
                part(*swaps)
        if not rows:
            return None
        rows_c, keep_c = np.concatenate(rows), np.concatenate(keep)
        if len(rows_c) > self.sample:  # g's ranks for all: sampled before they are copied
            pick = np.sort(self.rng.choice(len(rows_c), self.sample, replace=False))
            rows_c, keep_c = rows_c[pick], keep_c[pick]
        return Genomes(rows_c, np.repeat(g.ranks, len(rows_c), axis=0), keep_c)

    def single_moves(self, g: Genomes) -> Genomes | None:
        """Kind 0 around the single candidate ``g``: single prime moves, the keep options one
        keep/bypass flip away, every order class of each level (in that order); None when there are
        none. Copies of ``g`` with entries set: the descent builds thousands of these small sets."""
        ms = self.ms
        rows0, keep0 = g.rows[0].tolist(), int(g.keep[0])
        nbs = self.moves.all_neighbours(rows0)
        flips = self._flips[keep0]
        bits = tuple(int(t.temporal_levels[r]) for t, r in zip(ms.tables, rows0, strict=True))
        cls = self._classes.get(bits)
        if cls is None:  # the order classes depend on the rows' active levels only
            cls = [ms.order_ranks(li, m) for li, m in enumerate(ms.level_masks(rows0))]
            cls = self._classes[bits] = [c if len(c) > 1 else c[:0] for c in cls]
        n_mv, n_fl = sum(len(v) for v in nbs), len(flips)
        n = n_mv + n_fl + sum(len(c) for c in cls)
        if not n:
            return None
        out = Genomes(np.repeat(g.rows, n, axis=0), np.repeat(g.ranks, n, axis=0), np.full(n, keep0))
        _set_entries(out.rows[:n_mv], nbs)
        out.keep[n_mv:n_mv + n_fl] = flips
        _set_entries(out.ranks[n_mv + n_fl:], cls)
        return out

    def spatial_swaps(self, g: Genomes) -> tuple[np.ndarray, np.ndarray] | None:
        """Rows and keep options where two dimensions trade a place on one fan-out: one's prime
        leaves it, another's enters. Single moves cannot do this without passing through a half-idle
        array (much worse), so the descent would never cross; with every keep option, sampled down
        to ``swap_cap`` candidates."""
        ms = self.ms
        split = [self._fanout_moves(di, r) for di, r in enumerate(g.rows[0].tolist())]
        rows = []
        for j in range(len(ms.fanouts)):
            out = [s[j][0] for s in split]
            into = [s[j][1] for s in split]
            for a in range(len(ms.dims)):
                for b in range(len(ms.dims)):
                    if a == b or not out[a].size or not into[b].size:
                        continue
                    r = np.repeat(g.rows, out[a].size * into[b].size, axis=0)  # every (out, into) pair
                    r[:, a], r[:, b] = np.repeat(out[a], into[b].size), np.tile(into[b], out[a].size)
                    rows.append(r)
        if not rows:
            return None
        k = len(ms.keep_options)
        base = np.concatenate(rows)
        pick = np.arange(len(base) * k)  # candidate i: row i // k with keep option i % k
        if len(pick) > self.swap_cap:
            pick = np.sort(self.rng.choice(len(pick), self.swap_cap, replace=False))
        return base[pick // k], pick % k

    def _fanout_moves(self, di: int, row: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per fan-out, the prime moves of dimension ``di`` from table row ``row`` that lower its
        factor on that fan-out and those that raise it (kept: walkers meet the same rows again)."""
        got = self._fan_moves.get((di, row))
        if got is None:
            t, nb = self.ms.tables[di], self.moves.neighbours(di, row)
            # the spatial group of the row and of each neighbour (groups are runs of table rows)
            group = np.searchsorted(t.group_start, np.append(nb, row), side="right") - 1
            here, there = t.group_spatial[group[-1]], t.group_spatial[group[:-1]]
            got = self._fan_moves[(di, row)] = [(nb[there[:, j] < here[j]], nb[there[:, j] > here[j]])
                                                for j in range(len(here))]
        return got

    def kicks(self, g: Genomes, n: int) -> Genomes:
        """``n`` perturbations of the single candidate ``g``: two dimensions re-split at random,
        another keep option half of the time, then one mutation."""
        ms, rng = self.ms, self.rng
        kick = g.take(np.zeros(n, np.int64))
        for j in range(n):
            for di in rng.choice(self._free, size=min(2, len(self._free)), replace=False):
                kick.rows[j, di] = rng.integers(len(ms.tables[di].table))
        other = rng.random(n) < 0.5
        kick.keep[other] = rng.integers(len(ms.keep_options), size=int(other.sum()))
        return mutate(ms, self.moves, rng, kick)

    # ---- the pool ---------------------------------------------------------------------------------
    def run(self, starts: Genomes, scores: np.ndarray, width: int, patience: int) -> None:
        """Descend from ``starts`` (with their ``scores``), refilling the pool with kicks of the
        incumbent up to ``width`` walkers, until the budget is spent or ``patience`` kicks in a row
        bring nothing. The best mapping is recorded by the evaluator's search state."""
        ev = self.evaluate
        if not self._free:
            width = len(starts)  # nothing to re-split: only descend from the starts
        pos = starts.copy()
        score = np.array(scores, dtype=np.float64)
        level = np.zeros(len(pos), np.int64)
        fresh = np.zeros(len(pos), bool)  # a kick not evaluated yet
        kicked = np.zeros(len(pos), bool)
        i0 = int(np.argmin(score))
        best, best_score = pos.take(np.array([i0])), float(score[i0])
        stale = 0
        while ev.left() > 0:
            room = width - len(pos)
            if room > 0 and stale < patience and self._free:
                k = self.kicks(best, room)
                pos = Genomes.cat([pos, k])
                score = np.concatenate([score, np.full(room, np.inf)])
                level = np.concatenate([level, np.zeros(room, np.int64)])
                fresh = np.concatenate([fresh, np.ones(room, bool)])
                kicked = np.concatenate([kicked, np.ones(room, bool)])
            if not len(pos):
                break
            segs: list[tuple[int, Genomes]] = []
            for w in range(len(pos)):
                here = pos.take(slice(w, w + 1))  # a view: the neighbourhoods and the batch copy it
                if fresh[w]:
                    segs.append((w, here))
                    continue
                while level[w] < LEVELS:
                    nb = self.neighbourhood(here, int(level[w]))
                    if nb is not None:
                        segs.append((w, nb))
                        break
                    level[w] += 1
            if segs:
                sc = ev(Genomes.cat([s[1] for s in segs]), reuse=True)
                lo = 0
                for w, cand in segs:
                    hi = lo + len(cand)
                    i = lo + int(np.argmin(sc[lo:hi]))
                    if fresh[w]:
                        fresh[w], score[w] = False, sc[i]
                        if not np.isfinite(sc[i]):
                            level[w] = LEVELS  # an invalid kick: drop it
                    elif sc[i] < score[w]:
                        j = i - lo
                        pos.rows[w], pos.ranks[w], pos.keep[w] = cand.rows[j], cand.ranks[j], cand.keep[j]
                        score[w], level[w] = sc[i], 0
                    else:
                        level[w] += 1
                    lo = hi
            done = level >= LEVELS
            for w in np.nonzero(done)[0]:  # local optima leave the pool
                if score[w] < best_score:
                    best, best_score, stale = pos.take(np.array([w])), float(score[w]), 0
                elif kicked[w]:
                    stale += 1
            if done.any():
                keep = np.nonzero(~done)[0]
                pos, score = pos.take(keep), score[keep]
                level, fresh, kicked = level[keep], fresh[keep], kicked[keep]


def _set_entries(out: np.ndarray, values: list[np.ndarray]) -> None:
    """Sets entry ``j`` of the copies ``out`` [N, J, ...] of one row to each of ``values[j]`` in
    turn (j ascending; N values in all): all the moves of one kind in one assignment."""
    at = np.repeat(np.arange(len(values)), [len(v) for v in values])
    out[np.arange(len(at)), at] = np.concatenate(values)
