"""The fast mapper (default): an evolutionary search over tilings, loop orders and keep choices,
finished by an iterated variable-neighbourhood descent; seeded, deterministic, with an evaluation
budget.

Genome per candidate: one factorization-table row per dimension (``rows [D]``), random keys per
level and dimension whose ranks are the loop order, and a keep option. Half of the first random
tilings come from the 64 (spatial unrolling, keep option) pairs with the best lower bounds
(:mod:`dse.mappers.bounds`, over the 1024 unrollings that use the most PEs), with that keep option.
Mutation moves one prime factor of one dimension between two slots (:mod:`dse.mappers.moves`), swaps
two loops of a level, or picks another keep option; crossover mixes dimensions and levels of two
parents. Every generation is one batch of ``population`` children; evolution stops after 25 % of the
budget, or after three generations that found almost nothing new.

The descent runs several walkers at once (the best few candidates with distinct keep options); one
batch per round holds every walker's neighbourhood (``evaluate_batch`` is fast on large batches). A
walker takes the best move of its cheapest improving neighbourhood: (0) single prime moves, keep
options, the loop-order classes of each level (:mod:`dse.mapspace.orders`); (1) every split of one
dimension, prime moves with every keep option; (2) two dimensions trading a place on a fan-out (out
of reach of single moves without a half-idle array); big ones sampled (512). Then ``kicks`` random
re-splits of the incumbent descend together, until the budget is spent or ``patience`` rounds bring
nothing. Candidates are hashed, so none is evaluated twice (a descent may step onto one seen before).

Deterministic for a given seed and budget; ``time_limit_s`` stops early (results then depend on
machine speed, so tests use the evaluation budget).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.evaluate import evaluate_batch
from costmodel.mapping import MappingBatch
from costmodel.tiles import tile_words
from dse.mappers.bounds import lower_bounds
from dse.mappers.exhaustive import no_fit_error
from dse.mappers.moves import PrimeMoves
from dse.mappers.objectives import Objective
from dse.mappers.result import MapperResult, ParetoPoint, batch_last, final_mapping
from dse.mappers.search_state import SearchState
from dse.mapspace import Mapspace

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem


class _Genomes:
    """A population as arrays: ``rows [P, D]``, ``keys [P, L, D]``, ``keep [P]``."""

    def __init__(self, rows: np.ndarray, keys: np.ndarray, keep: np.ndarray) -> None:
        self.rows, self.keys, self.keep = rows, keys, keep

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, idx: np.ndarray) -> _Genomes:
        return _Genomes(self.rows[idx], self.keys[idx], self.keep[idx])

    @staticmethod
    def cat(parts: list[_Genomes]) -> _Genomes:
        return _Genomes(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("rows", "keys", "keep")))


class _Search:
    def __init__(self, ms: Mapspace, obj: Objective, rng: np.random.Generator, budget: int,
                 deadline: float, state: SearchState, eval_kw: dict[str, Any]) -> None:
        self.ms, self.obj, self.rng, self.budget, self.deadline = ms, obj, rng, budget, deadline
        self.state, self.eval_kw = state, eval_kw
        self._moves: dict[int, PrimeMoves] = {}
        self.sample = 512
        self.seen = np.zeros(0, np.int64)  # sorted hashes of the candidates evaluated so far
        self.seen_score = np.zeros(0)  # and their scores
        self._salt = np.random.default_rng(12345).integers(1, 2**62, size=4096, dtype=np.int64) | 1
        self.top_pairs = self._top_pairs(64)

    def _top_pairs(self, n: int, screen: int = 1024) -> tuple[np.ndarray, np.ndarray] | None:
        """The ``n`` (spatial unrolling, keep option) pairs with the best lower bounds, among the
        ``screen`` unrollings that use the most PEs (bounding every unrolling of a 32x32 mesh with
        128 keep options took seconds). The bounds rank both well: a keep choice that starves the
        array has a bound above the optimum's score, and a search started outside it can stay out."""
        t_s, sx_s, sy_s = self.ms.spatial_factors()
        if not len(t_s):
            return None
        pes = (sx_s * sy_s).prod(axis=(1, 2))
        cand = np.argsort(-pes, kind="stable")[:screen]
        e_lb, l_lb = lower_bounds(self.ms, t_s[cand], sx_s[cand], sy_s[cand])
        best = np.argsort(self.obj.bound(e_lb, l_lb), axis=None, kind="stable")[:n]
        m, k = np.unravel_index(best, e_lb.shape)
        return cand[m], k

    # ---- helpers ---------------------------------------------------------------------------------
    def left(self) -> int:
        if time.perf_counter() > self.deadline:
            return 0
        return self.budget - self.state.evaluated

    def moves(self, di: int) -> PrimeMoves:
        """Prime moves in dimension ``di``'s table (built on first use)."""
        if di not in self._moves:
            self._moves[di] = PrimeMoves(self.ms.tables[di].table)
        return self._moves[di]

    def nbrs(self, di: int, row: int) -> np.ndarray:
        return self.moves(di).neighbours(row)

    def ranks(self, g: _Genomes) -> np.ndarray:
        return np.argsort(np.argsort(g.keys, axis=2, kind="stable"), axis=2, kind="stable")

    def evaluate(self, g: _Genomes, ranks: np.ndarray | None = None, reuse: bool = False) -> np.ndarray:
        """Scores of valid, not yet seen candidates (others +inf), within the budget; with ``reuse``,
        candidates seen before get their earlier score (without counting as evaluations)."""
        ms, n = self.ms, len(g)
        scores = np.full(n, np.inf)
        ranks = self.ranks(g) if ranks is None else ranks
        t, sx, sy = ms.decode(g.rows)
        # factor-1 loops order nothing: rank the others among themselves, so equal nests hash equal
        active = t > 1
        canon = np.argsort(np.argsort(np.where(active, ranks, ranks + t.shape[2]), axis=2, kind="stable"),
                           axis=2, kind="stable")
        key = np.concatenate([g.rows, np.where(active, canon, -1).reshape(n, -1), g.keep[:, None]], axis=1)
        with np.errstate(over="ignore"):  # a 64-bit hash; a collision only skips one candidate
            h = key @ self._salt[: key.shape[1]]
        order = np.argsort(h, kind="stable")
        hs = h[order]
        fresh = np.zeros(n, bool)
        fresh[order[np.concatenate([[True], hs[1:] != hs[:-1]])]] = True  # first of equal hashes
        fresh &= ~self._known(h)[0]
        keep = ms.keep_options[g.keep]
        if fresh.any():  # validity (Mapping.validate's rule) for the chosen keep option only
            words = tile_words(ms.problem, _Factors(t, sx, sy))
            fresh &= ms.spatial_ok(sx, sy) & ((words * keep).sum(axis=2) <= ms.usable).all(axis=1)
        idx = np.nonzero(fresh)[0][: max(0, self.left())]
        if idx.size:
            batch = MappingBatch(*(batch_last(a[idx]) for a in (t, sx, sy, ranks, keep)))
            scores[idx] = self.state.update(batch, evaluate_batch(ms.problem, ms.arch, batch, **self.eval_kw))
            new = np.argsort(h[idx], kind="stable")
            pos = np.searchsorted(self.seen, h[idx][new])
            self.seen = np.insert(self.seen, pos, h[idx][new])
            self.seen_score = np.insert(self.seen_score, pos, scores[idx][new])
        if reuse:
            known, at = self._known(h)
            scores = np.where(known & np.isinf(scores), self.seen_score[at], scores)
        return scores

    def _known(self, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(self.seen):
            return np.zeros(len(h), bool), np.zeros(len(h), np.int64)
        at = np.minimum(np.searchsorted(self.seen, h), len(self.seen) - 1)
        return self.seen[at] == h, at

    # ---- phases ----------------------------------------------------------------------------------
    def initial(self, n: int) -> _Genomes:
        """Random tilings with a random fitting keep option; half of them inside the (unrolling,
        keep option) pairs with the best bounds, with that keep option where it fits."""
        ms, rng = self.ms, self.rng
        pos = rng.integers(0, ms.num_tilings, size=n)
        h = n // 2 if self.top_pairs is not None else 0
        if h:
            pick = rng.integers(len(self.top_pairs[0]), size=h)
            m, want = self.top_pairs[0][pick], self.top_pairs[1][pick]
            lo, hi = ms._combo_cum[m], ms._combo_cum[m + 1]
            pos[:h] = lo + (rng.random(h) * (hi - lo)).astype(np.int64)
        rows = ms.tiling_rows_at(pos)
        t, sx, sy = ms.decode(rows)
        fit = ms.capacity_ok(t, sx, sy)
        keep = (rng.random(fit.shape) * fit).argmax(axis=1)  # tilings with none stay invalid
        if h:
            keep[:h] = np.where(fit[np.arange(h), want], want, keep[:h])
        keys = rng.random((n, ms.n_levels, len(ms.dims)))
        return _Genomes(rows, keys, keep)

    def mutate(self, g: _Genomes) -> _Genomes:
        ms, rng = self.ms, self.rng
        g = _Genomes(g.rows.copy(), g.keys.copy(), g.keep.copy())
        n = len(g)
        kind = rng.random(n)
        dim = rng.integers(len(ms.dims), size=n)
        pick = rng.random(n)
        for di in range(len(ms.dims)):  # move a prime factor of one dimension
            sel = np.nonzero((kind < 0.6) & (dim == di))[0]
            if sel.size:
                g.rows[sel, di] = self.moves(di).random(g.rows[sel, di], pick[sel])
        sel = np.nonzero((kind >= 0.6) & (kind < 0.85))[0]  # swap two loops of one level
        li = rng.integers(ms.n_levels, size=sel.size)
        a, b = rng.integers(len(ms.dims), size=(2, sel.size))
        ka, kb = g.keys[sel, li, a].copy(), g.keys[sel, li, b].copy()
        g.keys[sel, li, a], g.keys[sel, li, b] = kb, ka
        sel = np.nonzero(kind >= 0.85)[0]  # another keep option
        g.keep[sel] = rng.integers(len(ms.keep_options), size=sel.size)
        return g

    def crossover(self, a: _Genomes, b: _Genomes) -> _Genomes:
        rng = self.rng
        dm = rng.random(a.rows.shape) < 0.5
        lm = rng.random(a.keys.shape[:2]) < 0.5
        return _Genomes(np.where(dm, a.rows, b.rows), np.where(lm[:, :, None], a.keys, b.keys),
                        np.where(rng.random(len(a)) < 0.5, a.keep, b.keep))

    def evolve(self, pop: _Genomes, scores: np.ndarray, size: int, elite: int) -> None:
        """Generations of ``size`` children of the elite, until the budget is spent or three
        generations in a row find almost nothing new (a small mapspace is used up)."""
        rng = self.rng
        barren = 0
        while self.left() > 0 and barren < 3:
            before = self.state.evaluated
            order = np.argsort(scores, kind="stable")
            top = order[: min(elite, int(np.isfinite(scores).sum()) or 1)]
            pick = top[rng.integers(len(top), size=(2, size))]
            kids = self.crossover(pop.take(pick[0]), pop.take(pick[1]))
            kids = self.mutate(kids)
            ks = self.evaluate(kids)
            pop = _Genomes.cat([pop.take(top), kids])
            scores = np.concatenate([scores[top], ks])
            barren = barren + 1 if self.state.evaluated - before < size // 32 else 0
        self.pop, self.scores = pop, scores

    def _variants(self, g: _Genomes, rows: np.ndarray, keep: np.ndarray | None = None,
                  ranks: np.ndarray | None = None) -> tuple[_Genomes, np.ndarray]:
        n = len(rows) if ranks is None else len(ranks)
        base = np.repeat(self.ranks(g), n, axis=0) if ranks is None else ranks
        keep = np.repeat(g.keep, n) if keep is None else keep
        return _Genomes(rows, np.repeat(g.keys, n, axis=0), keep), base

    def neighbourhood(self, g: _Genomes, level: int) -> list[tuple[_Genomes, np.ndarray]]:
        """Moves around ``g``, cheapest kind first (level 0), as (genomes, ranks) parts."""
        ms = self.ms
        k = len(ms.keep_options)
        out = []
        if level == 0:  # single prime moves, keep options, every order class of each level
            for di in range(len(ms.dims)):
                nb = self.nbrs(di, int(g.rows[0, di]))
                if nb.size:
                    rows = np.repeat(g.rows, nb.size, axis=0)
                    rows[:, di] = nb
                    out.append(self._variants(g, rows))
            out.append(self._variants(g, np.repeat(g.rows, k, axis=0), np.arange(k)))
            masks = ms.active_masks(ms.decode(g.rows)[0])[0]
            base = self.ranks(g)[0]
            for li in range(ms.n_levels):
                cls = ms.order_ranks(li, int(masks[li]))
                r = np.repeat(base[None], len(cls), axis=0)
                r[:, li] = cls
                out.append(self._variants(g, np.repeat(g.rows, len(cls), axis=0), ranks=r))
        elif level == 1:  # every other split of one dimension; prime moves with every keep option
            for di in range(len(ms.dims)):
                n = len(ms.tables[di].table)
                if 1 < n <= 512:
                    rows = np.repeat(g.rows, n, axis=0)
                    rows[:, di] = np.arange(n)
                    out.append(self._variants(g, rows))
                nb = self.nbrs(di, int(g.rows[0, di]))
                if nb.size:
                    rows = np.repeat(g.rows, nb.size * k, axis=0)
                    rows[:, di] = np.repeat(nb, k)
                    out.append(self._variants(g, rows, np.tile(np.arange(k), nb.size)))
        else:  # two dimensions trade a place on a fan-out
            pair = self.spatial_swaps(g)
            if pair is not None:
                out.append((pair, np.repeat(self.ranks(g), len(pair), axis=0)))
        return out

    def local(self, g: _Genomes, score: np.ndarray) -> tuple[_Genomes, np.ndarray]:
        """Variable-neighbourhood descent of several walkers at once (one batch per round holds every
        walker's current neighbourhood, which keeps batches large): each walker takes the best move
        of the cheapest neighbourhood that improves and goes back to the cheapest after every move;
        a walker stops when none improves."""
        g = _Genomes(g.rows.copy(), g.keys.copy(), g.keep.copy())
        score = np.array(score, dtype=np.float64)
        level = np.zeros(len(g), np.int64)
        while self.left() > 0 and (level < 3).any():
            walkers, segs, ranks = [], [], []
            for w in np.nonzero(level < 3)[0]:
                parts = self.neighbourhood(g.take(np.array([w])), int(level[w]))
                if not parts:
                    level[w] += 1
                    continue
                cand = _Genomes.cat([p for p, _ in parts])
                r = np.concatenate([r for _, r in parts])
                if level[w] > 0 and len(cand) > self.sample:  # the big neighbourhoods are sampled
                    pick = np.sort(self.rng.choice(len(cand), self.sample, replace=False))
                    cand, r = cand.take(pick), r[pick]
                walkers.append(w)
                segs.append(cand)
                ranks.append(r)
            if not walkers:
                continue
            cand, r = _Genomes.cat(segs), np.concatenate(ranks)
            sc = self.evaluate(cand, r, reuse=True)
            start = np.cumsum([0] + [len(s) for s in segs])
            for w, lo, hi in zip(walkers, start[:-1], start[1:]):
                i = lo + int(np.argmin(sc[lo:hi]))
                if not sc[i] < score[w]:
                    level[w] += 1
                    continue
                # keys that reproduce the winner's ranks, so the next round starts from it
                score[w], level[w] = sc[i], 0
                g.rows[w], g.keys[w], g.keep[w] = cand.rows[i], r[i], cand.keep[i]
        return g, score

    def spatial_swaps(self, g: _Genomes, cap: int = 4096) -> _Genomes | None:
        """Two dimensions trade a place on one fan-out: one's prime leaves it, another's enters.

        Single moves cannot do this without passing through a half-idle array (much worse), so the
        descent would never cross; with every keep option, sampled down to ``cap`` candidates."""
        ms = self.ms
        sp = [t.group_spatial for t in ms.tables]
        start = [np.searchsorted(t.group_start, np.arange(len(t.table)), side="right") - 1 for t in ms.tables]
        rows = []
        for j in range(len(ms.fanouts)):
            out, into = [], []
            for di in range(len(ms.dims)):
                here = sp[di][start[di][g.rows[0, di]], j]
                nb = self.nbrs(di, int(g.rows[0, di]))
                there = sp[di][start[di][nb], j]
                out.append(nb[there < here])
                into.append(nb[there > here])
            for a in range(len(ms.dims)):
                for b in range(len(ms.dims)):
                    if a == b or not out[a].size or not into[b].size:
                        continue
                    ra, rb = np.meshgrid(out[a], into[b], indexing="ij")
                    r = np.repeat(g.rows, ra.size, axis=0)
                    r[:, a], r[:, b] = ra.ravel(), rb.ravel()
                    rows.append(r)
        if not rows:
            return None
        r = np.concatenate(rows)
        k = len(ms.keep_options)
        r = np.repeat(r, k, axis=0)
        keep = np.tile(np.arange(k), len(r) // k)
        if len(r) > cap:
            pick = np.sort(self.rng.choice(len(r), cap, replace=False))
            r, keep = r[pick], keep[pick]
        return _Genomes(r, np.repeat(g.keys, len(r), axis=0), keep)

    def iterate(self, g: _Genomes, score: float, kicks: int, patience: int) -> None:
        """Iterated local search: kick the incumbent ``kicks`` times at once with a few random moves,
        descend from all kicks together, keep the best; until the budget is spent or ``patience``
        rounds in a row bring nothing (a converged search stops early; still deterministic)."""
        stale = 0
        free = [d for d, t in enumerate(self.ms.tables) if len(t.table) > 1]
        while self.left() > 0 and stale < patience:
            kick = g.take(np.zeros(kicks, np.int64))
            for j in range(kicks):  # re-split two dims
                for di in self.rng.choice(free, size=min(2, len(free)), replace=False):
                    kick.rows[j, di] = self.rng.integers(len(self.ms.tables[di].table))
            other = self.rng.random(kicks) < 0.5
            kick.keep[other] = self.rng.integers(len(self.ms.keep_options), size=int(other.sum()))
            kick = self.mutate(kick)
            sc = self.evaluate(kick)
            ok = np.nonzero(np.isfinite(sc))[0]
            if not ok.size:
                stale += 1
                continue
            new, new_score = self.local(kick.take(ok), sc[ok])
            j = int(np.argmin(new_score))
            if new_score[j] < score:
                g, score, stale = new.take(np.array([j])), float(new_score[j]), 0
            else:
                stale += 1


def fast_map(problem: Problem, arch: Architecture, objective: Any = "edp", *, constraints: Any = None,
             seed: int = 0, max_evaluations: int = 20_000, time_limit_s: float | None = None,
             population: int = 1024, elite: int = 64, explore: float = 0.25, starts: int = 4, kicks: int = 4,
             patience: int = 15, pareto: bool = False, mapspace: Mapspace | None = None,
             **eval_kw: Any) -> MapperResult:
    """A good mapping within ``max_evaluations`` cost-model evaluations (see the module docstring)."""
    t0 = time.perf_counter()
    obj = Objective.parse(objective)
    ms = mapspace or Mapspace(problem, arch, constraints)
    if ms.num_tilings == 0:
        raise no_fit_error(ms)
    rng = np.random.default_rng(seed)
    state = SearchState(obj, track_pareto=pareto)
    deadline = t0 + time_limit_s if time_limit_s is not None else np.inf
    s = _Search(ms, obj, rng, max_evaluations, deadline, state, eval_kw)
    s.budget = int(max_evaluations * explore)
    pop = s.initial(min(4 * population, max(population, s.budget // 3)))
    scores = s.evaluate(pop)
    for _ in range(20):  # tight spaces: keep drawing until something fits
        if np.isfinite(scores).any() or s.left() <= 0:
            break
        pop = s.initial(4 * population)
        scores = s.evaluate(pop)
    if not np.isfinite(scores).any():
        raise no_fit_error(ms)
    s.evolve(pop, scores, population, elite)
    s.budget = max_evaluations
    top = _diverse(s.scores, s.pop.keep, starts)
    if top.size and s.left() > 0:  # descend from the best few starting points together
        g, sc = s.local(s.pop.take(top), s.scores[top])
        j = int(np.argmin(sc))
        s.iterate(g.take(np.array([j])), float(sc[j]), kicks, patience)
    best = final_mapping(problem, arch, state.best, 0)
    front = None
    if pareto and state.front is not None:
        front = [ParetoPoint(float(e), float(lat), state.front.mapping(i, problem))
                 for i, (e, lat) in enumerate(zip(state.front_e, state.front_l))]
    return MapperResult(best, state.best_metrics or {}, obj, "fast", state.evaluated, time.perf_counter() - t0,
                        ms.size(), {"tilings": ms.num_tilings}, front, seed)


def _diverse(scores: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` best candidates with distinct keep options (the keep choice is the dataflow's
    skeleton: the elite of one evolution tends to share it, and another one's basin is then far),
    filled up with the best others; only finite scores."""
    order = np.argsort(scores, kind="stable")
    order = order[np.isfinite(scores[order])]
    _, first = np.unique(keep[order], return_index=True)
    lead = order[np.sort(first)][:n]
    rest = order[~np.isin(order, lead)][: n - len(lead)]
    return np.concatenate([lead, rest])


@dataclass
class _Factors:
    """The factor arrays ``tile_words`` reads (a MappingBatch without orders or keeps)."""

    temporal: np.ndarray
    spatial_x: np.ndarray
    spatial_y: np.ndarray

