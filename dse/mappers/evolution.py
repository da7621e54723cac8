"""The fast mapper's first phase: random valid candidates, then generations of crossover and mutation.

Half of the first candidates come from the (spatial unrolling, keep option) pairs with the best lower
bounds, with that keep option: a keep choice that starves the array has a bound above the optimum's
score, and a search started outside the good pairs can stay out. Mutation moves one prime factor of
one dimension between two slots (:mod:`dse.mappers.moves`: these moves connect the whole table), swaps
two loops of a level, or picks another keep option; crossover mixes dimensions and levels of two
parents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dse.mappers.genomes import Evaluator, Genomes, ranks_of

if TYPE_CHECKING:
    from dse.mappers.moves import MoveTables
    from dse.mapspace import Mapspace


def initial(ms: Mapspace, rng: np.random.Generator, n: int,
            top_pairs: tuple[np.ndarray, np.ndarray] | None) -> Genomes:
    """``n`` random tilings with a random fitting keep option; half of them inside ``top_pairs``
    (unrolling indices, keep options), with that keep option where it fits."""
    pos = rng.integers(0, ms.num_tilings, size=n)
    h = n // 2 if top_pairs is not None else 0
    if h:
        pick = rng.integers(len(top_pairs[0]), size=h)
        m, want = top_pairs[0][pick], top_pairs[1][pick]
        lo, hi = ms._combo_cum[m], ms._combo_cum[m + 1]
        pos[:h] = lo + (rng.random(h) * (hi - lo)).astype(np.int64)
    rows = ms.tiling_rows_at(pos)
    t, sx, sy = ms.decode(rows)
    fit = ms.capacity_ok(t, sx, sy)
    keep = (rng.random(fit.shape) * fit).argmax(axis=1)  # tilings with none stay invalid
    if h:
        keep[:h] = np.where(fit[np.arange(h), want], want, keep[:h])
    keys = rng.random((n, ms.n_levels, len(ms.dims)))
    return Genomes(rows, ranks_of(keys), keep)


def mutate(ms: Mapspace, moves: MoveTables, rng: np.random.Generator, g: Genomes) -> Genomes:
    """One random change per candidate: a prime move (60 %), a loop swap (25 %) or a keep option."""
    g = g.copy()
    n = len(g)
    kind = rng.random(n)
    dim = rng.integers(len(ms.dims), size=n)
    pick = rng.random(n)
    for di in range(len(ms.dims)):  # move a prime factor of one dimension
        sel = np.nonzero((kind < 0.6) & (dim == di))[0]
        if sel.size:
            g.rows[sel, di] = moves[di].random(g.rows[sel, di], pick[sel])
    sel = np.nonzero((kind >= 0.6) & (kind < 0.85))[0]  # swap two loops of one level
    li = rng.integers(ms.n_levels, size=sel.size)
    a, b = rng.integers(len(ms.dims), size=(2, sel.size))
    ra, rb = g.ranks[sel, li, a].copy(), g.ranks[sel, li, b].copy()
    g.ranks[sel, li, a], g.ranks[sel, li, b] = rb, ra
    sel = np.nonzero(kind >= 0.85)[0]  # another keep option
    g.keep[sel] = rng.integers(len(ms.keep_options), size=sel.size)
    return g


def crossover(rng: np.random.Generator, a: Genomes, b: Genomes) -> Genomes:
    """Children taking each dimension's row, each level's ranks and the keep option from either parent."""
    dm = rng.random(a.rows.shape) < 0.5
    lm = rng.random(a.ranks.shape[:2]) < 0.5
    return Genomes(np.where(dm, a.rows, b.rows), np.where(lm[:, :, None], a.ranks, b.ranks),
                   np.where(rng.random(len(a)) < 0.5, a.keep, b.keep))


def evolve(ms: Mapspace, moves: MoveTables, rng: np.random.Generator, evaluate: Evaluator, pop: Genomes,
           scores: np.ndarray, size: int, elite: int, generations: int) -> tuple[Genomes, np.ndarray]:
    """At most ``generations`` generations of ``size`` children of the ``elite`` best, until the
    budget is spent or three generations in a row find almost nothing new (a small mapspace is used
    up). Returns the last population (elite and children) with its scores."""
    barren = 0
    for _ in range(generations):
        if evaluate.left() <= 0 or barren >= 3:
            break
        before = evaluate.state.evaluated
        order = np.argsort(scores, kind="stable")
        top = order[: min(elite, int(np.isfinite(scores).sum()) or 1)]
        pick = top[rng.integers(len(top), size=(2, size))]
        kids = mutate(ms, moves, rng, crossover(rng, pop.take(pick[0]), pop.take(pick[1])))
        ks = evaluate(kids)
        pop = Genomes.cat([pop.take(top), kids])
        scores = np.concatenate([scores[top], ks])
        barren = barren + 1 if evaluate.state.evaluated - before < size // 32 else 0
    return pop, scores


def diverse(scores: np.ndarray, keep: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` best candidates with distinct keep options (the keep choice is the dataflow's
    skeleton: the elite of one evolution tends to share it, and another one's basin is then far),
    filled up with the best others; only finite scores."""
    order = np.argsort(scores, kind="stable")
    order = order[np.isfinite(scores[order])]
    _, first = np.unique(keep[order], return_index=True)
    lead = order[np.sort(first)][:n]
    rest = order[~np.isin(order, lead)][: n - len(lead)]
    return np.concatenate([lead, rest])
