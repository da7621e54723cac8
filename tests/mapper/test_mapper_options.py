"""The library's search arguments are checked before any search (dse.mappers.options): a bad option,
seed or worker count is a UserError naming it; good values reach the mapper unchanged."""

import inspect

import numpy as np
import pytest

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.problem import conv2d
from dse.mappers import map_layer
from dse.mappers.exhaustive import exhaustive_map
from dse.mappers.fast import fast_map
from dse.mappers.options import ExhaustiveOptions, FastOptions
from dse.network import best_mapping, map_model

ARCH = load_architecture("tiny")
LAYER = conv2d(8, 8, 6, 6, kernel=3, padding=1)


@pytest.mark.parametrize(("model", "fn"), [(FastOptions, fast_map), (ExhaustiveOptions, exhaustive_map)])
def test_every_checked_option_is_a_parameter_of_its_mapper(model, fn):
    """The models do not drift from the mappers' signatures (the cost-model options go on to
    evaluate_batch, whose signature has them)."""
    from costmodel.evaluate import evaluate_batch

    params = set(inspect.signature(fn).parameters) | set(inspect.signature(evaluate_batch).parameters)
    assert set(model.model_fields) <= params


@pytest.mark.parametrize(("mapper", "options", "named"), [
    ("fast", {"max_evaluations": -1}, "max_evaluations"),
    ("fast", {"max_evaluations": 0}, "max_evaluations"),
    ("fast", {"max_evaluations": 2.5}, "max_evaluations"),
    ("fast", {"max_evaluations": None}, "max_evaluations"),
    ("fast", {"time_limit_s": -1}, "time_limit_s"),
    ("fast", {"time_limit_s": float("nan")}, "time_limit_s"),
    ("fast", {"population": 0}, "population"),
    ("fast", {"explore": 2.0}, "explore"),
    ("fast", {"victory": 0}, "victory"),
    ("fast", {"overlap": "no"}, "overlap"),
    ("fast", {"systolic_mode": "sideways"}, "systolic_mode"),
    ("fast", {"bogus": 3}, "bogus"),
    ("fast", {"batch_size": 64}, "batch_size"),  # the exhaustive mapper's
    ("exhaustive", {"max_evaluations": 100}, "max_evaluations"),  # the fast mapper's
    ("exhaustive", {"batch_size": 0}, "batch_size"),
    ("exhaustive", {"prune": "yes"}, "prune"),
])
def test_bad_option_is_named(mapper, options, named):
    with pytest.raises(UserError, match=f"mapper option '{named}'"):
        map_layer(LAYER, ARCH, mapper=mapper, **options)


def test_unknown_option_lists_the_known_ones():
    with pytest.raises(UserError, match="not an option of the fast mapper.*max_evaluations"):
        map_layer(LAYER, ARCH, max_evaluation=100)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, "3", True])
def test_bad_seed(seed):
    with pytest.raises(UserError, match="seed: expected an integer from 0 to 4294967295"):
        map_layer(LAYER, ARCH, seed=seed, max_evaluations=100)
    with pytest.raises(UserError, match="seed"):
        best_mapping(LAYER, ARCH, seed=seed, db=False)


def test_network_paths_check_options_and_workers():
    with pytest.raises(UserError, match="mapper option 'bogus'"):
        best_mapping(LAYER, ARCH, db=False, bogus=1)
    for workers in (0, -2, 1.5, True):
        with pytest.raises(UserError, match="workers: expected a positive integer"):
            map_model("keyword_spotting", ARCH, workers=workers, db=False, progress=False)


def test_numpy_values_reach_the_mapper_as_the_same_search():
    """numpy integers (a sweep script's values) are the same search as Python ints."""
    a = map_layer(LAYER, ARCH, seed=np.int64(3), max_evaluations=np.int64(400))
    b = map_layer(LAYER, ARCH, seed=3, max_evaluations=400)
    assert a.mapping == b.mapping and a.metrics == b.metrics and a.mappings_evaluated == b.mappings_evaluated <= 400


@pytest.mark.parametrize(("spec", "why"), [
    ({"energy": 1, "latncy": 1}, r"unknown key\(s\) \['latncy'\]"),  # was: energy only, silently
    ({"energy": "x"}, "energy weight must be a number"),
    ({"energy": True}, "energy weight must be a number"),
    ({"energy": 1, "max_energy_pj": -1}, "max_energy_pj must be a positive number"),
    (3, "expected a name, a mix"),
    (["edp"], "expected a name, a mix"),
])
def test_bad_objective_is_named(spec, why):
    with pytest.raises(UserError, match=why):
        map_layer(LAYER, ARCH, spec, max_evaluations=100)


def test_objective_dict_limits_are_kept_and_to_dict_round_trips():
    from dse.mappers.objectives import Objective

    obj = Objective.parse({"energy": 1, "latency": 2, "max_latency_cycles": 5e4})
    assert (obj.energy_weight, obj.latency_weight, obj.max_latency_cycles) == (1.0, 2.0, 5e4)
    assert Objective.parse(obj.to_dict()) == obj
    # the limit acts: a mapping above it scores +inf (infeasible), one below it a number
    assert np.isinf(obj.score(np.array([1.0]), np.array([6e4])))[0] and np.isfinite(obj.score([1.0], [4e4]))[0]
