"""Imperfect factors (mapspace.padding): candidates, validation, costs, and the padded optimum against
plain enumeration of every padded problem."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mapper_configs import two_level, wide
from mapper_reference import enumerate_all

from costmodel.arch import architecture_from_dict, load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate
from costmodel.mapping import LevelMapping, Mapping
from costmodel.padding import padded_problem, padding_limit
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from dse.mappers import map_layer
from dse.mappers.objectives import Objective, pareto_mask
from dse.mappers.padding import candidate_sizes, padded_candidates


def test_prime_channels_on_a_16_wide_array_by_hand():
    # K = 17 is prime: with perfect factors the 16-wide array unrolls K by 1 (17 > 16), so 17 steps.
    # Padded to 18 = 9 x 2 it runs 9 columns for 2 steps: latency 2 cycles (unlimited bandwidth),
    # 18 MACs of energy, utilization 17 real MACs / (16 PEs x 2 cycles)
    p = conv2d(1, 17, 1, 1, kernel=1)
    plain = map_layer(p, wide(), mapper="exhaustive")
    assert plain.mapping.padded == () and plain.metrics["latency_cycles"] == 17
    arch = wide({"max_fraction": 0.125})
    assert padded_candidates(p, arch) == [{"K": 18}]  # 19 (prime) would not help; 20 > 17 * 1.125
    for mapper in ("exhaustive", "fast"):
        res = map_layer(p, arch, mapper=mapper)
        assert res.mapping.padded == (("K", 18),), mapper
        assert res.metrics["latency_cycles"] == 2
        assert res.metrics["utilization"] == pytest.approx(17 / (16 * 2))
        assert res.stats["padded"] == 1 and res.stats["padding_problems"] == 2
        ev = evaluate(p, arch, res.mapping)
        assert ev.macs == 17 and ev.utilization == pytest.approx(17 / 32)
        assert ev.energy_breakdown()["mac"] == pytest.approx(18 * arch.mac.energy_pj)
        assert ev.energy_pj == pytest.approx(res.metrics["energy_pj"])
        assert res.metrics["edp"] < plain.metrics["edp"]
    assert "# padded: K 17 -> 18" in res.mapping.loop_nest(p, arch)


def test_candidate_sizes_by_hand():
    assert candidate_sizes(17, [16], 0.125, 2) == [18]   # 18 = 9 x 2: 2 folds instead of 17
    assert candidate_sizes(15, [8], 0.125, 2) == [16]    # 15 on 8 wide: 5 x 3 folds; 16: 8 x 2
    assert candidate_sizes(15, [16], 0.125, 2) == [16]   # same folds (1), more divisors (5 vs 4)
    assert candidate_sizes(7, [16], 0.125, 2) == []      # 7 * 1.125 < 8: nothing in the allowance
    # 30 = 15 x 2 folds and 8 divisors; 32 also needs 2 folds and has only 6; 36 has 9 divisors
    assert candidate_sizes(30, [16], 0.2, 1) == [36]
    assert padding_limit(10, 0.1) == 11 and padding_limit(8, 0.125) == 9 and padding_limit(7, 0.125) == 7


def _brute_candidates(size, caps, fraction, limit):
    """Independent reference: scan sizes with explicit fold counts over every divisor."""
    def folds(n, c):
        return min(n // d for d in range(1, n + 1) if n % d == 0 and d <= c)

    def ndiv(n):
        return sum(n % d == 0 for d in range(1, n + 1))

    out = []
    top = int(size * (1 + fraction) + 1e-9)
    for n in range(size + 1, top + 1):
        smaller = range(size, n)
        if any(all(folds(n, c) < folds(m, c) for m in smaller) for c in caps) or \
                all(ndiv(n) > ndiv(m) for m in smaller):
            out.append(n)
    return out[:limit]


@given(st.integers(2, 120), st.lists(st.sampled_from([2, 3, 4, 8, 12, 16, 32]), min_size=0, max_size=3),
       st.sampled_from([0.05, 0.125, 0.25, 0.5]), st.integers(1, 4))
@settings(max_examples=80, deadline=None)
def test_candidate_sizes_match_brute_force(size, caps, fraction, limit):
    got = candidate_sizes(size, caps, fraction, limit)
    assert got == _brute_candidates(size, caps, fraction, limit)
    assert all(size < n <= padding_limit(size, fraction) for n in got)


def _reference_points(problem, arch, pads):
    """(energy, latency) of every valid mapping of the unpadded and every padded problem."""
    e, lat = [], []
    for pad in pads:
        for _, ev in enumerate_all(padded_problem(problem, pad), arch):
            e.append(ev.energy_pj)
            lat.append(ev.latency_cycles.astype(np.float64))
    return np.concatenate(e), np.concatenate(lat)


PADDED_LAYERS = [
    conv2d(1, 5, 1, 1, kernel=1),                       # K5 on 2 PEs: 5 folds; padded K6: 3
    conv2d(1, 3, 5, 1, kernel=(3, 1), padding=(1, 0)),  # P5 padded to 6 enlarges the input window too
    matmul(5, 2, 3),                                    # M5 -> 6 and N3 -> 4 (max_fraction 0.4)
]


@pytest.mark.parametrize("problem", PADDED_LAYERS, ids=lambda p: p.describe())
def test_padded_optimum_equals_plain_enumeration_of_the_padded_problems(problem):
    arch = two_level(padding={"max_fraction": 0.4, "max_candidates": 2})
    pads = [{}, *padded_candidates(problem, arch)]
    assert len(pads) >= 2
    e, lat = _reference_points(problem, arch, pads)
    for name in ("edp", "energy", "latency", "energy:1,latency:2"):
        obj = Objective.parse(name)
        res = map_layer(problem, arch, obj, mapper="exhaustive")
        ev = evaluate(problem, arch, res.mapping)  # re-evaluated from the recorded padded bounds
        got = obj.score(np.array([ev.energy_pj]), np.array([float(ev.latency_cycles)]))[0]
        assert got == pytest.approx(obj.score(e, lat).min(), rel=1e-12), name
        fast = map_layer(problem, arch, obj, mapper="fast", max_evaluations=3000)
        assert obj.score(fast.metrics["energy_pj"], fast.metrics["latency_cycles"]) >= got - 1e-12
    res = map_layer(problem, arch, "edp", mapper="exhaustive", pareto=True)
    front = pareto_mask(e, lat)
    assert sorted({(round(p.energy_pj, 6), p.latency_cycles) for p in res.pareto}) == \
        sorted(set(zip(e[front].round(6), lat[front])))
    for p in res.pareto:
        p.mapping.validate(problem, arch)


@pytest.mark.parametrize("problem", [conv2d(2, 2, 3, 1, kernel=1), matmul(2, 2, 3),
                                     depthwise_conv2d(2, 3, 1, kernel=(3, 1), padding=(1, 0))],
                         ids=lambda p: p.describe())
def test_padding_off_or_empty_changes_nothing(problem):
    # no padding block, and a block whose allowance admits no larger size (3 * 1.2 < 4): the same
    # mapping and metrics as before, and no 'padded' key in the mapping
    off = two_level()
    empty = two_level(padding={"max_fraction": 0.2})
    assert padded_candidates(problem, empty) == []
    for mapper in ("exhaustive", "fast"):
        a = map_layer(problem, off, mapper=mapper, max_evaluations=2000) if mapper == "fast" else \
            map_layer(problem, off, mapper=mapper)
        b = map_layer(problem, empty, mapper=mapper, max_evaluations=2000) if mapper == "fast" else \
            map_layer(problem, empty, mapper=mapper)
        assert a.mapping == b.mapping and a.metrics == b.metrics and a.mapping.padded == ()
        assert "padded" not in a.mapping.to_dict()


def _mapping(k_spatial, k_temporal, padded=()):
    """K split as k_spatial columns below DRAM x k_temporal steps at DRAM; nothing at the rf."""
    return Mapping((LevelMapping(temporal={"K": k_temporal}, spatial_x={"K": k_spatial}), LevelMapping()), padded)


@pytest.mark.parametrize("arch_pad,mapping,match", [
    (None, _mapping(9, 2), "imperfect factors need padding, which .* does not allow"),
    (None, _mapping(9, 2, (("K", 18),)), "does not allow padding"),
    ({"max_fraction": 0.125}, _mapping(9, 2), r"declare it: padded: \{K: 18\}"),
    ({"max_fraction": 0.125}, _mapping(10, 2, (("K", 20),)), "beyond the allowance .* at most 19"),
    ({"max_fraction": 0.125, "dims": ["C"]}, _mapping(9, 2, (("K", 18),)), r"only of \['C'\]"),
    ({"max_fraction": 0.125}, _mapping(8, 2, (("K", 18),)), "expected its padded bound 18 \\(size 17\\)"),
    ({"max_fraction": 0.125}, _mapping(1, 17, (("X", 18),)), "unknown dimension 'X'"),
])
def test_validation_says_why(arch_pad, mapping, match):
    p = conv2d(1, 17, 1, 1, kernel=1)
    with pytest.raises(UserError, match=match):
        mapping.validate(p, wide(arch_pad))


def test_padded_mapping_round_trips_and_validates():
    p = conv2d(1, 17, 1, 1, kernel=1)
    arch = wide({"max_fraction": 0.125})
    m = _mapping(9, 2, (("K", 18),))
    m.validate(p, arch)
    again = Mapping.from_dict(m.to_dict(arch), arch)
    assert again == m and again.to_dict(arch)["padded"] == {"K": 18}


def test_schema_field_and_errors():
    data = {"name": "x", "clock": "1 GHz", "technology": {"node_nm": 45}, "mac": {"datatype": "int8"},
            "levels": [{"name": "DRAM", "kind": "dram", "holds": ["I", "W", "O"], "word_bits": 8}]}
    plain = architecture_from_dict(data)
    padded = architecture_from_dict({**data, "mapspace": {"padding": {"max_fraction": 0.25, "dims": ["K"]}}})
    assert plain.padding is None and padded.padding.dims == ["K"] and padded.padding.max_candidates == 2
    assert plain.fingerprint() != padded.fingerprint()
    for bad in ({"max_fraction": 0}, {"max_fraction": 0.1, "dims": ["Z"]}, {"fraction": 0.1}):
        with pytest.raises(UserError, match="padding"):
            architecture_from_dict({**data, "mapspace": {"padding": bad}})
    assert all(load_architecture(c).padding is None for c in ("tiny", "tpu_like"))  # opt-in only


def test_candidates_respect_dims_constraints_and_bound_count():
    arch = two_level(padding={"max_fraction": 0.5, "dims": ["K", "P"], "max_problems": 3})
    p = conv2d(5, 5, 5, 1, kernel=1)  # C5 K5 P5: C may not be padded
    pads = padded_candidates(p, arch)
    assert len(pads) == 3 and all(set(d) <= {"K", "P"} for d in pads)
    macs = [padded_problem(p, d).macs for d in pads]
    assert macs == sorted(macs)
    every = {tuple(sorted(d.items())) for d in padded_candidates(
        p, two_level(padding={"max_fraction": 0.5, "dims": ["K", "P"], "max_problems": 100}))}
    per_dim = candidate_sizes(5, [2], 0.5, 2)
    assert every == {tuple(sorted(x for x in (("K", k), ("P", q)) if x[1] != 5))
                     for k, q in itertools.product([5, *per_dim], repeat=2) if (k, q) != (5, 5)}
