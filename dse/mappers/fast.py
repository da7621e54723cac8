"""The fast mapper (default): an evolutionary search over tilings, loop orders and keep choices,
finished by an iterated variable-neighbourhood descent; seeded, deterministic, with an evaluation
budget.

Genome per candidate: one factorization-table row per dimension (``rows [D]``), random keys per
level and dimension whose ranks are the loop order, and a keep option. Half of the first random
tilings come from the 32 spatial unrollings with the best lower bounds (:mod:`dse.mappers.bounds`).
Mutation moves one prime factor of one dimension between two slots (temporal or spatial;
:func:`neighbour_table`), swaps two loops of a level, or picks another keep option; crossover mixes
dimensions and levels of two parents. Every generation is one batch through ``evaluate_batch``.

The descent evaluates one neighbourhood per batch, cheapest first, takes the best improving move and
returns to the cheapest: (0) single prime moves, every keep option, every loop-order class of each
level (:mod:`dse.mapspace.orders`); (1) every other split of one dimension, and prime moves with every
keep option (tile sizes change what fits); (2) pairs of dimensions trading a place on a fan-out (one
prime leaves, another enters), which single moves cannot reach without a half-idle array. The large
neighbourhoods are sampled (512). Then it kicks the result (two dimensions re-split at random,
maybe another keep option, one more mutation) and descends again, until the budget is spent or 60
kicks in a row bring nothing.

Deterministic for a given seed and budget; ``time_limit_s`` stops early (results then depend on
machine speed, so tests use the evaluation budget).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.evaluate import evaluate_batch
from dse.mappers.bounds import lower_bounds
from dse.mappers.exhaustive import no_fit_error
from dse.mappers.objectives import Objective
from dse.mappers.result import MapperResult, ParetoPoint, final_mapping
from dse.mappers.search_state import SearchState
from dse.mapspace import Mapspace
from dse.mapspace.factorizations import neighbour_table

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
        self._csr: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.sample = 512
        self.seen = np.zeros(0, np.int64)  # sorted hashes of the candidates evaluated so far
        self._salt = np.random.default_rng(12345).integers(1, 2**62, size=4096, dtype=np.int64) | 1
        t_s, sx_s, sy_s = ms.spatial_factors()
        e_lb, l_lb = lower_bounds(ms, t_s, sx_s, sy_s)
        spatial_lb = obj.bound(e_lb, l_lb).min(axis=1)
        self.top_spatial = np.argsort(spatial_lb, kind="stable")[:32] if len(spatial_lb) else None

    # ---- helpers ---------------------------------------------------------------------------------
    def left(self) -> int:
        if time.perf_counter() > self.deadline:
            return 0
        return self.budget - self.state.evaluated

    def csr(self, di: int) -> tuple[np.ndarray, np.ndarray]:
        """Prime-move neighbours of dimension ``di``'s table rows: (offsets, flat indices)."""
        if di not in self._csr:
            self._csr[di] = neighbour_table(self.ms.tables[di].table)
        return self._csr[di]

    def nbrs(self, di: int, row: int) -> np.ndarray:
        offsets, flat = self.csr(di)
        return flat[offsets[row]:offsets[row + 1]]

    def valid(self, g: _Genomes) -> np.ndarray:
        t, sx, sy = self.ms.decode(g.rows)
        ok = self.ms.spatial_ok(sx, sy)
        fit = self.ms.capacity_ok(t, sx, sy)
        return ok & fit[np.arange(len(g)), g.keep]

    def ranks(self, g: _Genomes) -> np.ndarray:
        return np.argsort(np.argsort(g.keys, axis=2, kind="stable"), axis=2, kind="stable")

    def evaluate(self, g: _Genomes, ranks: np.ndarray | None = None) -> np.ndarray:
        """Scores of valid, not yet seen candidates (others +inf), within the budget."""
        scores = np.full(len(g), np.inf)
        ranks = self.ranks(g) if ranks is None else ranks
        ok = self.valid(g)
        t, _, _ = self.ms.decode(g.rows)
        canon = np.where(t > 1, ranks, -1).reshape(len(g), -1)  # factor-1 loops order nothing
        key = np.concatenate([g.rows, canon, g.keep[:, None]], axis=1)
        with np.errstate(over="ignore"):  # a 64-bit hash; a collision only skips one candidate
            h = key @ self._salt[: key.shape[1]]
        order = np.argsort(h, kind="stable")
        hs = h[order]
        fresh = np.zeros(len(g), bool)
        fresh[order[np.concatenate([[True], hs[1:] != hs[:-1]])]] = True  # first of equal hashes
        pos = np.searchsorted(self.seen, h)
        known = self.seen[np.minimum(pos, len(self.seen) - 1)] == h if len(self.seen) else np.zeros(len(h), bool)
        fresh &= ok & ~known
        idx = np.nonzero(fresh)[0][: max(0, self.left())]
        new = np.sort(h[idx])
        self.seen = np.insert(self.seen, np.searchsorted(self.seen, new), new)
        if idx.size:
            batch = self.ms.batch(g.rows[idx], ranks[idx], g.keep[idx])
            scores[idx] = self.state.update(batch, evaluate_batch(self.ms.problem, self.ms.arch, batch,
                                                                  **self.eval_kw))
        return scores

    # ---- phases ----------------------------------------------------------------------------------
    def initial(self, n: int) -> _Genomes:
        """Random tilings: half uniform, half inside the spatial unrollings with the best bounds
        (the bounds rank unrollings well by utilization and operand traffic)."""
        ms, rng = self.ms, self.rng
        pos = rng.integers(0, ms.num_tilings, size=n)
        if self.top_spatial is not None:
            m = self.top_spatial[rng.integers(len(self.top_spatial), size=n // 2)]
            lo, hi = ms._combo_cum[m], ms._combo_cum[m + 1]
            pos[: n // 2] = lo + (rng.random(n // 2) * (hi - lo)).astype(np.int64)
        rows = ms.tiling_rows_at(pos)
        t, sx, sy = ms.decode(rows)
        fit = ms.capacity_ok(t, sx, sy)
        # a random fitting keep option per tiling (tilings with none stay invalid)
        r = rng.random(fit.shape) * fit
        keep = r.argmax(axis=1)
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
                offsets, flat = self.csr(di)
                row = g.rows[sel, di]
                count = offsets[row + 1] - offsets[row]
                has = count > 0
                j = offsets[row[has]] + (pick[sel[has]] * count[has]).astype(np.int64)
                g.rows[sel[has], di] = flat[j]
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

    def evolve(self, pop: _Genomes, scores: np.ndarray, generation: int, elite: int) -> None:
        rng = self.rng
        barren = 0  # generations that found nothing new: a small mapspace is used up
        while self.left() > 0 and generation > 0 and barren < 10:
            before = self.state.evaluated
            order = np.argsort(scores, kind="stable")
            top = order[: min(elite, int(np.isfinite(scores).sum()) or 1)]
            pick = top[rng.integers(len(top), size=(2, len(pop)))]
            kids = self.crossover(pop.take(pick[0]), pop.take(pick[1]))
            kids = self.mutate(kids)
            ks = self.evaluate(kids)
            pop = _Genomes.cat([pop.take(top), kids])
            scores = np.concatenate([scores[top], ks])
            generation -= 1
            barren = barren + 1 if self.state.evaluated == before else 0
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

    def local(self, g: _Genomes, score: float) -> tuple[_Genomes, float]:
        """Variable-neighbourhood descent: take the best move of the cheapest neighbourhood that
        improves, and go back to the cheapest after every move; stop when none improves."""
        level = 0
        while self.left() > 0 and level < 3:
            parts = self.neighbourhood(g, level)
            if not parts:
                level += 1
                continue
            all_g = _Genomes.cat([p for p, _ in parts])
            all_r = np.concatenate([r for _, r in parts])
            if level > 0 and len(all_g) > self.sample:  # the big neighbourhoods are sampled
                pick = np.sort(self.rng.choice(len(all_g), self.sample, replace=False))
                all_g, all_r = all_g.take(pick), all_r[pick]
            sc = self.evaluate(all_g, all_r)
            i = int(np.argmin(sc))
            if not sc[i] < score:
                level += 1
                continue
            score, level = float(sc[i]), 0
            # keys that reproduce the winner's ranks, so the next round starts from it
            g = _Genomes(all_g.rows[i:i + 1], all_r[i:i + 1].astype(np.float64), all_g.keep[i:i + 1])
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

    def iterate(self, g: _Genomes, score: float) -> None:
        """Iterated local search: kick the incumbent with a few random moves, descend, keep the
        better, until the budget is spent or 60 kicks in a row bring nothing (a converged search
        stops early; still deterministic)."""
        stale = 0
        while self.left() > 0 and stale < 60:
            kick = g.take(np.zeros(1, np.int64))
            kick.rows = kick.rows.copy()
            free = [d for d, t in enumerate(self.ms.tables) if len(t.table) > 1]
            for di in self.rng.choice(free, size=min(2, len(free)), replace=False):  # re-split two dims
                kick.rows[0, di] = self.rng.integers(len(self.ms.tables[di].table))
            if self.rng.random() < 0.5:
                kick.keep = self.rng.integers(len(self.ms.keep_options), size=1)
            kick = self.mutate(kick)
            sc = self.evaluate(kick)
            if not np.isfinite(sc[0]):
                stale += 1
                continue
            new, new_score = self.local(kick, float(sc[0]))
            if new_score < score:
                g, score, stale = new, new_score, 0
            else:
                stale += 1


def fast_map(problem: Problem, arch: Architecture, objective: Any = "edp", *, constraints: Any = None,
             seed: int = 0, max_evaluations: int = 20_000, time_limit_s: float | None = None,
             population: int = 1024, elite: int = 64, pareto: bool = False, mapspace: Mapspace | None = None,
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
    explore = int(max_evaluations * 0.25)
    s.budget = explore
    pop = s.initial(min(4 * population, max(population, explore // 3)))
    scores = s.evaluate(pop)
    for _ in range(20):  # tight spaces: keep drawing until something fits
        if np.isfinite(scores).any() or s.left() <= 0:
            break
        pop = s.initial(4 * population)
        scores = s.evaluate(pop)
    if not np.isfinite(scores).any():
        raise no_fit_error(ms)
    s.evolve(pop, scores, generation=10**9, elite=elite)
    s.budget = max_evaluations
    order = np.argsort(s.scores, kind="stable")
    best_g, best_score = None, np.inf
    for j in order[:4]:  # descend from the best few distinct starting points
        if not np.isfinite(s.scores[j]) or s.left() <= 0:
            break
        g, sc = s.local(s.pop.take(np.array([j])), float(s.scores[j]))
        if sc < best_score:
            best_g, best_score = g, sc
    if best_g is not None:
        s.iterate(best_g, best_score)
    best = final_mapping(problem, arch, state.best, 0)
    front = None
    if pareto and state.front is not None:
        front = [ParetoPoint(float(e), float(lat), state.front.mapping(i, problem))
                 for i, (e, lat) in enumerate(zip(state.front_e, state.front_l))]
    return MapperResult(best, state.best_metrics or {}, obj, "fast", state.evaluated, time.perf_counter() - t0,
                        ms.size(), {"tilings": ms.num_tilings}, front, seed)
