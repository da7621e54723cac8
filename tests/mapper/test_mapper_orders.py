"""Loop-order classes: hand-derived counts, and the claim that orders in a class give equal counts."""

import itertools

import numpy as np
import pytest
from mapper_configs import three_level, two_level

from costmodel.analysis import access_counts
from costmodel.evaluate import evaluate_batch
from costmodel.mapping import MappingBatch
from costmodel.problem import conv2d, conv_transpose2d, depthwise_conv2d, matmul
from costmodel.random_mappings import random_mappings
from dse.mapspace.orders import IRR, RIGID, SLIDE, _key, dim_roles, order_classes


def test_roles_of_conv():
    p = conv2d(4, 4, 6, 6, kernel=3)
    roles = dict(zip(("I", "W", "O"), dim_roles(p)))
    d = {n: i for i, n in enumerate(p.dim_names)}
    assert roles["I"][d["K"]] == IRR and roles["I"][d["C"]] == RIGID and roles["I"][d["P"]] == SLIDE
    assert roles["W"][d["P"]] == IRR and roles["W"][d["R"]] == RIGID
    assert roles["O"][d["C"]] == IRR and roles["O"][d["Q"]] == RIGID


def test_matmul_has_one_class_per_innermost_loop():
    # matmul axes are all single-dim, so only each tensor's innermost irrelevant run matters; with all
    # four dims active that run is {the innermost loop} for exactly one tensor (N: I, M: W, K: O) or
    # none (B): 4 classes of the 24 orders
    p = matmul(4, 4, 4, batch=2)
    reps = order_classes((0, 1, 2, 3), dim_roles(p))
    assert len(reps) == 4
    assert sorted(p.dim_names[r[-1]] for r in reps) == ["B", "K", "M", "N"]
    # with a constraint fixing the innermost two loops (K then M), one class is left
    assert len(order_classes((0, 1, 2, 3), dim_roles(p), inner=(3, 1))) == 1


def _same_class_same_counts(problem, arch, n_tilings, seed):
    """For random tilings, every permutation at a level: equal keys -> equal access counts/latency."""
    base = random_mappings(problem, arch, n_tilings, seed=seed, bypass_p=0.3)
    roles = dim_roles(problem)
    rng = np.random.default_rng(seed)
    checked = 0
    for i in range(len(base)):
        li = int(rng.integers(len(arch.levels)))
        active = tuple(np.nonzero(base.temporal[i, li] > 1)[0])
        if len(active) < 2:
            continue
        perms = list(itertools.permutations(active))[:120]
        idle = [d for d in range(len(problem.dims)) if d not in active]
        orders = np.repeat(base.order[i:i + 1], len(perms), axis=0)
        for j, perm in enumerate(perms):
            full = idle + list(perm)
            orders[j, li, full] = np.arange(len(full))
        b = MappingBatch(np.repeat(base.temporal[i:i + 1], len(perms), 0), np.repeat(base.spatial_x[i:i + 1], len(perms), 0),
                         np.repeat(base.spatial_y[i:i + 1], len(perms), 0), orders,
                         np.repeat(base.keep[i:i + 1], len(perms), 0))
        acc = access_counts(problem, arch, b)
        lat = evaluate_batch(problem, arch, b).latency_cycles
        groups = {}
        for j, perm in enumerate(perms):
            groups.setdefault(_key(perm, roles), []).append(j)
        for members in groups.values():
            j0 = members[0]
            for j in members[1:]:
                for f in ("fills", "reads", "updates", "hops"):
                    assert np.array_equal(getattr(acc, f)[j], getattr(acc, f)[j0]), (problem.describe(), f)
                assert lat[j] == lat[j0]
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("problem", [
    conv2d(4, 4, 6, 6, kernel=3),
    conv2d(2, 4, 9, 9, kernel=3, stride=2),
    depthwise_conv2d(4, 6, 6, kernel=3, padding=1),
    conv_transpose2d(4, 2, 3, 3, kernel=2, stride=2),
    matmul(4, 6, 4, batch=2),
], ids=lambda p: p.describe())
def test_orders_in_a_class_give_equal_counts(problem):
    from costmodel.arch import load_architecture

    for arch in (load_architecture("tiny"), three_level()):
        _same_class_same_counts(problem, arch, 12, seed=3)


def test_class_claim_holds_for_systolic_latency():
    # the fold model's stream length depends on the order; it must be constant within a class
    _same_class_same_counts(conv2d(2, 4, 6, 6, kernel=3), two_level(systolic=True), 20, seed=5)
