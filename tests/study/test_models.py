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
