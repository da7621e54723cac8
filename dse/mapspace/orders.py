"""Loop orders of one level, reduced to the classes that can give different access counts.

Why two orders are interchangeable (the proof the exhaustive mapper's optimality rests on). Fix the
factors; consider a tensor ``T`` and any storage boundary below this level. The boundary's fills (and
read-backs and write-backs, which follow the same tile sequence) are a sum over loop steps: a step where
loop ``x`` increments and the loops inside it wrap moves the tile from one position to the next.

* A loop is *irrelevant* to ``T`` if its dimension does not index ``T``; *rigid* if the dimension is
  alone on some axis of ``T`` (``K`` of ``W``): any step that changes a rigid loop lands on a disjoint
  tile, so it moves the full tile whatever the order; *sliding* otherwise (``P`` and ``R`` share an input
  axis, so consecutive tiles can overlap: halo reuse).
* Let the level's order (factor-1 loops dropped, they never step) end with its last rigid loop at
  position ``j``. Every step of a loop at or above ``j`` wraps or moves that rigid loop: a full tile.
  Their number is ``F_above * (prod(prefix) - 1)``, a function of the *set* of prefix loops only.
* The loops after ``j`` (the suffix) are sliding or irrelevant; a step there costs the overlap of the
  tiles before and after, which depends only on the stepping loop and the suffix loops inside it; the
  number of such steps depends on the suffix loops outside it. Adjacent irrelevant loops step together
  (same inner loops, product of factors), so each maximal run of them counts as a set.
* Loops above this level see this level's loops wrap from their maximum to zero, which depends on the
  factors, not their order; loops below are inside the tile.

So ``key_T = (set(prefix), suffix with irrelevant runs as sets)`` determines every count of ``T``, and
orders with equal keys for every tensor are one class. (The simpler "innermost loop's relevance class"
rule is exact only without sliding windows; this one is exact with them.) The exhaustive mapper's
tests check the claim against the cost model by evaluating every permutation on small layers.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from costmodel.problem import Problem

IRR, RIGID, SLIDE = 0, 1, 2


def dim_roles(problem: Problem) -> tuple[tuple[int, ...], ...]:
    """``roles[t][d]``: IRR, RIGID or SLIDE of dimension ``d`` for tensor ``t`` (problem order)."""
    out = []
    for t in problem.tensors:
        row = []
        for d in problem.dim_names:
            if d not in t.dims():
                row.append(IRR)
            elif any(len(axis) == 1 and axis[0][1] == d and axis[0][0] != 0 for axis in t.axes):
                row.append(RIGID)
            else:
                row.append(SLIDE)
        out.append(tuple(row))
    return tuple(out)


def _key(order: tuple[int, ...], roles: tuple[tuple[int, ...], ...]) -> tuple:
    key = []
    for r in roles:
        last = max((i for i, d in enumerate(order) if r[d] == RIGID), default=-1)
        suffix: list = []
        for d in order[last + 1:]:
            if r[d] == IRR:
                if suffix and isinstance(suffix[-1], frozenset):
                    suffix[-1] = suffix[-1] | {d}
                else:
                    suffix.append(frozenset({d}))
            else:
                suffix.append(d)
        key.append((frozenset(order[: last + 1]), tuple(suffix)))
    return tuple(key)


@lru_cache(maxsize=4096)
def order_classes(active: tuple[int, ...], roles: tuple[tuple[int, ...], ...],
                  inner: tuple[int, ...] = ()) -> np.ndarray:
    """One representative order per class, as an int array ``[classes, len(active)]`` of dim indices.

    ``active`` are the level's dims with a factor above 1; ``inner`` (a constraint) lists dims that must
    be the level's innermost loops in that order -- those of them that are active.
    """
    tail = tuple(d for d in inner if d in active)
    free = [d for d in active if d not in tail]
    seen: dict[tuple, tuple[int, ...]] = {}
    for head in itertools.permutations(free):
        order = head + tail
        seen.setdefault(_key(order, roles), order)
    reps = sorted(seen.values())
    return np.array(reps, dtype=np.int64).reshape(len(reps), len(active))


def ranks_for(active_mask: int, num_dims: int, roles: tuple[tuple[int, ...], ...],
              inner: tuple[int, ...] = ()) -> np.ndarray:
    """Rank arrays ``[classes, D]`` (0 = outermost) for every order class of a level.

    Inactive dims (factor 1) take the outermost ranks; where they sit cannot matter.
    """
    return _ranks(active_mask, num_dims, roles, inner).copy()


@lru_cache(maxsize=4096)
def _ranks(active_mask: int, num_dims: int, roles: tuple[tuple[int, ...], ...],
           inner: tuple[int, ...]) -> np.ndarray:
    active = tuple(d for d in range(num_dims) if active_mask >> d & 1)
    idle = [d for d in range(num_dims) if not active_mask >> d & 1]
    reps = order_classes(active, roles, inner)
    out = np.empty((len(reps), num_dims), dtype=np.int64)
    out[:, idle] = np.arange(len(idle))
    for pos in range(len(active)):
        out[np.arange(len(reps)), reps[:, pos]] = len(idle) + pos
    return out


def ranks_from_orders(orders: np.ndarray) -> np.ndarray:
    """Orders (dim indices, outer to inner) ``[..., D]`` as ranks ``[..., D]``."""
    return np.argsort(orders, axis=-1)
