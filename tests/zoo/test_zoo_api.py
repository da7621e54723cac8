"""Registry, cache and CLI of the model zoo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
import torch
from typer.testing import CliRunner

from costmodel.errors import UserError
from dse import workloads
from dse.cli import app
from dse.workloads import cache

CONTRACT_NAMES = ["hand_tracking", "eye_segmentation", "gaze_estimation", "keyword_spotting", "speech_encoder",
                  "depth_estimation", "action_segmentation", "mobilenet_v2", "resnet18", "resnet50"]
DSE = Path(sys.executable).with_name("dse")


def test_names_are_the_contract_names() -> None:
    assert workloads.names() == CONTRACT_NAMES


def test_info_shapes_match_what_build_makes() -> None:
    meta = workloads.info("keyword_spotting")
    model, inputs = workloads.build("keyword_spotting")
    assert [tuple(x.shape) for x in inputs] == list(meta.inputs.values()) == [(1, 1, 98, 40)]
    assert meta.fps == 3.0 and "Tang" in meta.source and not model.training


def test_unknown_name_lists_the_names() -> None:
    with pytest.raises(UserError, match="resnet50"):
        workloads.info("resnet17")


def test_names_and_info_do_not_import_torch() -> None:
    code = ("import sys, dse.cli, dse.workloads as w; [w.info(n) for n in w.names()]; "
            "assert 'torch' not in sys.modules and 'onnx' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_build_is_seeded() -> None:
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    a, xa = workloads.build("keyword_spotting", seed=1)
    assert torch.equal(torch.rand(3), expected)           # the caller's RNG stream is untouched
    b, xb = workloads.build("keyword_spotting", seed=1)
    c, _ = workloads.build("keyword_spotting", seed=2)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa) and torch.equal(xa[0], xb[0])
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


def test_load_exports_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEL_DSE_CACHE", str(tmp_path))
    first = workloads.load("keyword_spotting", dynamo=False)
    files = list((tmp_path / "zoo").iterdir())
    assert [f.name for f in files] == [cache.cached_path("keyword_spotting", dynamo=False).name]

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cache hit must not export again")

    monkeypatch.setattr(workloads, "export", fail)
    second = workloads.load("keyword_spotting", dynamo=False)
    assert second.total_macs == first.total_macs > 0


def test_cache_key_follows_the_model_source() -> None:
    keys = {cache.source_hash(n) for n in workloads.names()}
    assert len(keys) == len(workloads.names())            # resnet18/50 share a file but not a key
    assert cache.cached_path("resnet18", True) != cache.cached_path("resnet18", False)


def test_cli_list_json_is_one_document() -> None:
    result = CliRunner().invoke(app, ["zoo", "list", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == CONTRACT_NAMES
    assert rows[0]["inputs"] == {"x": [1, 3, 128, 128]} and rows[0]["fps"] == 45.0


def test_cli_list_table() -> None:
    result = subprocess.run([str(DSE), "zoo", "list"], capture_output=True, text=True, check=True,
                            env=os.environ | {"COLUMNS": "200"})
    for name in CONTRACT_NAMES:
        assert name in result.stdout
    assert "Tang & Lin, ICASSP 2018" in result.stdout


def test_cli_export_legacy(tmp_path: Path) -> None:
    out = tmp_path / "kws.onnx"
    result = CliRunner().invoke(app, ["zoo", "export", "keyword_spotting", "-o", str(out), "--legacy"])
    assert result.exit_code == 0, result.output
    onnx.checker.check_model(onnx.load(out), full_check=True)
    assert [f.name for f in tmp_path.iterdir()] == ["kws.onnx"]     # no temp or .data files left


def test_cli_unknown_model_exits_2_with_one_line(tmp_path: Path) -> None:
    out = tmp_path / "x.onnx"
    result = subprocess.run([str(DSE), "zoo", "export", "nosuch", "-o", str(out)], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "nosuch" in result.stderr and "resnet18" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
