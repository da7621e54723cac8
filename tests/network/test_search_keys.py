"""What a mapping database may answer: only the same search (the same layer with its dims in the same
order), not a time-limited one, and with the numbers the search optimized."""

from __future__ import annotations

from pathlib import Path

from costmodel.arch import load_architecture
from costmodel.evaluate import evaluate
from costmodel.problem import Problem, conv2d
from dse.mapdb import layer_signature
from dse.network import best_mapping

ARCH = load_architecture("tiny")
LAYER = conv2d(8, 6, 6, 6, kernel=3, padding=1)


def _reordered(problem: Problem) -> Problem:
    d = problem.to_dict()
    d["dims"] = dict(reversed(list(d["dims"].items())))
    return Problem.from_dict(d)


def test_dim_order_is_part_of_the_signature():
    other = _reordered(LAYER)
    assert other != LAYER and other.macs == LAYER.macs  # the same loop nest, numbered differently
    assert layer_signature(other) != layer_signature(LAYER)
    assert layer_signature(Problem.from_dict(LAYER.to_dict())) == layer_signature(LAYER)


def test_a_reordered_layer_is_searched_not_answered_from_the_database(tmp_path: Path):
    db = tmp_path / "m.sqlite"
    first = best_mapping(LAYER, ARCH, db=db, max_evaluations=300)
    again = best_mapping(_reordered(LAYER), ARCH, db=db, max_evaluations=300)
    assert not first.from_db and not again.from_db
    assert best_mapping(LAYER, ARCH, db=db, max_evaluations=300).from_db


def test_time_limited_searches_are_not_kept(tmp_path: Path):
    db = tmp_path / "m.sqlite"
    for _ in range(2):
        assert not best_mapping(LAYER, ARCH, db=db, max_evaluations=300, time_limit_s=60).from_db


def test_reported_metrics_use_the_search_latency_model(tmp_path: Path):
    """A search without overlap reports its mapping's latency without overlap (it reported the
    overlapped one), from the database too."""
    db = tmp_path / "m.sqlite"
    for _ in range(2):
        r = best_mapping(LAYER, ARCH, db=db, max_evaluations=300, overlap=False)
        want = evaluate(LAYER, ARCH, r.mapping, overlap=False)
        assert r.metrics["latency_cycles"] == want.latency_cycles
        assert r.metrics["energy_pj"] == want.energy_pj
    assert r.from_db
    assert r.metrics["latency_cycles"] > evaluate(LAYER, ARCH, r.mapping).latency_cycles  # (the models differ here)
