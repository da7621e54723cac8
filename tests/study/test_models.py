"""A study on a zoo model goes through map_model (vector layers included) and its mapping database."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dse.network import map_model
from dse.study.design import MAPPING_DB, build_arch
from dse.study.knobs import knob_values
from dse.study.runner import run_study


def test_zoo_model_study_matches_map_model(tmp_path: Path) -> None:
    doc = {
        "name": "kws", "hardware": "ar_glasses_npu",
        "workloads": [{"name": "kws", "model": "keyword_spotting", "fps": 3}],
        "knobs": {"rows": {"path": "levels.act_buffer.fanout.y", "choices": [16, 32]},
                  "pes": {"path": "mac.count", "expr": "rows * 32"}},
        "objectives": [{"metric": "energy_pj"}],
        "sampler": {"kind": "grid"}, "trials": 2, "mapper": {"max_evaluations": 200},
        "output": str(tmp_path / "out"),
    }
    path = tmp_path / "kws.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_study(path)
    assert (tmp_path / "out" / MAPPING_DB).exists()
    for t in res.optuna_study.get_trials():
        assert t.state.name == "COMPLETE"
        arch = build_arch(res.study, knob_values(res.study.knobs, t.params))
        net = map_model("keyword_spotting", arch, objective="edp", seed=0, workers=1, db=False, progress=False,
                        max_evaluations=200)
        tot = net.totals  # the network mapper's own sums over all layers (MAC and vector)
        m = t.user_attrs["metrics"]
        assert m["kws.energy_pj"] == pytest.approx(tot["energy_pj"], rel=1e-9)
        assert m["kws.latency_cycles"] == pytest.approx(tot["latency_cycles"], rel=1e-9)
        assert m["kws.macs"] == tot["macs"]


def test_shipped_ar_glasses_study_has_a_feasible_design(tmp_path: Path) -> None:
    """The shipped AR-glasses study is not vacuous: one design of its space (a Pareto design of a
    100-trial run, docs/studies.md) meets every constraint, each checked here from its own terms
    (area, load = sum of fps x latency, each workload's frame deadline)."""
    from dse.study.design import evaluate_design, load_layers
    from dse.study.schema import load_study

    study = load_study(Path(__file__).resolve().parents[2] / "studies" / "ar_glasses.yaml")
    study.output = tmp_path / "out"
    d = evaluate_design(study, load_layers(study), {"rows": 16, "cols": 64, "act_kib": 336, "wgt_kib": 252,
                                                    "dram": "LPDDR5", "clock_mhz": 800})
    assert d.invalid is None
    m = d.metrics
    fps = {w.name: w.fps for w in study.spec.workloads}
    assert m["area_mm2"] <= 4
    assert sum(f * m[f"{w}.latency_ms"] / 1000 for w, f in fps.items()) <= 1
    for w, f in fps.items():
        assert m[f"{w}.latency_ms"] <= 1000 / f
    assert d.feasible
