"""The vectorized access counts equal the brute-force walker exactly, on random layers (conv
strided/dilated/depthwise/grouped, conv1d, transposed conv, matmul), random architectures
(1-4 levels below DRAM, fan-outs, multicast and reduction on/off) and random mappings (random
factorizations over all temporal and spatial slots, random loop orders, random bypass)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from bruteforce import walk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from standin import Arch, Level, random_arch, random_mapping, random_problem

from costmodel import problem as P
from costmodel.analysis import CountStage, access_counts
from costmodel.mapping import LevelMapping, Mapping, MappingBatch
from costmodel.tiles import packed_tables

FIELDS = ("fills", "reads", "updates", "hops", "tile_words")


def _case(seed: int):
    rng = random.Random(seed)
    prob = random_problem(rng)
    arch = random_arch(rng, rng.choice([2, 3, 3, 4, 5]))
    return prob, arch, random_mapping(rng, prob, arch)


def _check(prob, arch, mapping, got, row, model="exact"):
    ref = walk(prob, arch, mapping, model=model)
    for f in FIELDS:
        assert np.array_equal(getattr(got, f)[row], ref[f]), (f, prob.describe(), mapping, ref[f], getattr(got, f)[row])


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_random_single_mapping_matches_walker(seed):
    prob, arch, m = _case(seed)
    _check(prob, arch, m, access_counts(prob, arch, MappingBatch.from_mappings([m], prob, arch)), 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_timeloop_model_matches_walker(seed):
    """The model="timeloop" variant (window slides only under the innermost loop, multicast of
    identical tiles only) against the walker's literal version of the same rules."""
    prob, arch, m = _case(seed)
    batch = MappingBatch.from_mappings([m], prob, arch)
    _check(prob, arch, m, access_counts(prob, arch, batch, model="timeloop"), 0, model="timeloop")


def test_batch_rows_are_independent():
    """150 mappings of one layer in one batch: each row equals its own walk (no cross-talk)."""
    rng = random.Random(7)
    prob = P.conv2d(2, 2, 6, 5, kernel=3, stride=1)
    arch = random_arch(rng, 4)
    maps = [random_mapping(rng, prob, arch) for _ in range(150)]
    got = access_counts(prob, arch, MappingBatch.from_mappings(maps, prob, arch))
    for i, m in enumerate(maps):
        _check(prob, arch, m, got, i)


def test_macs_and_steps():
    prob, arch, m = _case(3)
    got = access_counts(prob, arch, MappingBatch.from_mappings([m], prob, arch))
    steps = 1
    for lm in m.levels:
        for f in lm.temporal.values():
            steps *= f
    sizes = 1
    for _, size in prob.dims:  # one MAC per point of the iteration space
        sizes *= size
    assert got.macs[0] == sizes and got.temporal_steps[0] == steps


@pytest.mark.slow
def test_many_random_mappings_match_walker():
    for seed in range(100_000, 105_000):
        prob, arch, m = _case(seed)
        _check(prob, arch, m, access_counts(prob, arch, MappingBatch.from_mappings([m], prob, arch)), 0)


def test_single_mac_problem():
    """Every dimension of size 1 (no loops at all): one word of I and W read, one O written."""
    prob = P.matmul(1, 1, 1)
    arch = Arch((Level("DRAM"), Level("RF")))
    m = Mapping((LevelMapping(), LevelMapping()))
    acc = access_counts(prob, arch, MappingBatch.from_mappings([m], prob, arch))
    _check(prob, arch, m, acc, 0)
    # DRAM reads I 1, W 1, O 0 (never written); DRAM receives the 1 output; the RF serves the MAC.
    assert acc.reads[0].tolist() == [[1, 1, 0], [1, 1, 0]]
    assert acc.updates[0].tolist() == [[0, 0, 1], [0, 0, 1]]


@pytest.mark.parametrize("bad", [0, 257, 1500])  # every mapping is checked, not a sample
@pytest.mark.parametrize("flaw", ["repeated", "negative", "too large"])
def test_order_must_be_a_permutation(bad, flaw):
    prob, arch, m = _case(5)
    batch = MappingBatch.from_mappings([m] * 1600, prob, arch)
    level = batch.order.shape[1] - 1
    if flaw == "repeated":
        batch.order[bad, level, :] = 0
    else:  # one rank out of 0..D-1 (the others stay distinct)
        d = int(np.argmax(batch.order[bad, level]))
        batch.order[bad, level, d] = -1 if flaw == "negative" else 64
    with pytest.raises(ValueError, match=f"mapping {bad}: .*permutation"):
        access_counts(prob, arch, batch)
    stage = CountStage(prob, arch, batch)  # in ranges, as evaluate_batch runs it: each range is checked
    with pytest.raises(ValueError, match=f"mapping {bad}: .*permutation"):
        for lo in range(0, len(batch), 100):
            stage.run(lo, lo + 100)
    assert lo == bad // 100 * 100  # the ranges before it were counted


@pytest.mark.parametrize("model", ["exact", "timeloop"])
def test_more_than_eight_active_dims(model):
    """A 3-D convolution with 9 active dims: the kernel runs its version compiled for 16 (one
    version serves up to 8, costmodel.count_kernel.shape_tags) and still equals the walker."""
    def axes(*groups):
        return [[[1, d] for d in g] for g in groups]

    prob = P.Problem.from_dict({
        "kind": "conv3d", "dims": dict.fromkeys("NKCDHWTRS", 2),
        "tensors": [{"name": "I", "axes": axes("N", "C", "DT", "HR", "WS")},
                    {"name": "W", "axes": axes("K", "C", "T", "R", "S")},
                    {"name": "O", "axes": axes("N", "K", "D", "H", "W"), "is_output": True}]})
    assert len(packed_tables(prob).idx) == 9
    rng = random.Random(11)
    for _ in range(12):
        arch = random_arch(rng, rng.choice([2, 3, 4]))
        maps = [random_mapping(rng, prob, arch) for _ in range(4)]
        got = access_counts(prob, arch, MappingBatch.from_mappings(maps, prob, arch), model=model)
        for i, m in enumerate(maps):
            _check(prob, arch, m, got, i, model=model)
