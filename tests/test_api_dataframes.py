"""The results README and DESIGN.md promise as DataFrames: a layer's search (one row, or its Pareto
front), a network layer's result, and a study's trials."""

from __future__ import annotations

from pathlib import Path

from costmodel.arch import load_architecture
from costmodel.problem import matmul
from dse.mappers import map_layer

TINY = load_architecture("tiny")
LAYER = matmul(8, 8, 8)


def test_a_searchs_result_as_one_row_or_its_front() -> None:
    res = map_layer(LAYER, TINY, "edp", seed=0, max_evaluations=500)
    df = res.to_dataframe()
    assert len(df) == 1 and df.loc[0, "energy_pj"] == res.metrics["energy_pj"]
    assert df.loc[0, "mappings_evaluated"] == res.mappings_evaluated
    front = map_layer(LAYER, TINY, "edp", seed=0, max_evaluations=500, pareto=True)
    fdf = front.to_dataframe()
    assert len(fdf) == len(front.pareto) > 0 and fdf["energy_pj"].is_monotonic_increasing
    e, lat = fdf["energy_pj"].to_numpy(), fdf["latency_cycles"].to_numpy()
    for i in range(len(fdf)):  # no front point dominated by another
        assert not ((e <= e[i]) & (lat <= lat[i]) & ((e < e[i]) | (lat < lat[i]))).any()


def test_a_network_layers_result_as_one_row() -> None:
    from dse.network import best_mapping

    res = best_mapping(LAYER, TINY, db=None, max_evaluations=500)
    df = res.to_dataframe()
    assert len(df) == 1 and df.loc[0, "latency_cycles"] == res.metrics["latency_cycles"]


def test_a_studys_trials_as_its_table(tmp_path: Path) -> None:
    from dse.study.results import trials_table
    from dse.study.runner import run_study
    from tests.study.helpers import small_study

    res = run_study(small_study(tmp_path, sampler="random", trials=2))
    assert res.to_dataframe().equals(trials_table(res.study, res.optuna_study)) and len(res.to_dataframe()) == 2
