"""User mistakes at `dse sweep / results / report`: one line on stderr naming the file, line and field
(or the path that cannot be written), exit 2, no traceback, and no output left behind."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from dse.study.metrics import metric_names
from dse.study.runner import run_study
from tests.study.helpers import dse, small_study


def _one_line(code: int, err: str) -> str:
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-trial study's folder."""
    tmp = tmp_path_factory.mktemp("done")
    return run_study(small_study(tmp, sampler="random", trials=2)).out


def test_bad_knob_value(tmp_path: Path) -> None:
    """A value of the wrong type fails when the study loads: sweep and `schema study --check` alike."""
    path = small_study(tmp_path, sampler="random", knobs={"clk": {"path": "clock", "choices": ["fast", "slow"]}})
    want = r"small\.yaml:\d+: knobs\.clk\.choices\[0\]: clock: expected a positive frequency .*, got 'fast'$"
    err = _one_line(*dse("sweep", path, "--no-progress"))
    assert re.search(want, err.strip()), err
    assert not (tmp_path / "out").exists()
    assert re.search(want, _one_line(*dse("schema", "study", "--check", path)).strip())


def test_broken_onnx_model(tmp_path: Path) -> None:
    """A model that does not load names the study's field and leaves no folder, so that the fixed
    study then runs in it (it used to find "a different study" there)."""
    (tmp_path / "bad.onnx").write_bytes(b"garbage")
    path = small_study(tmp_path, trials=2, workloads=[{"name": "net", "model": "bad.onnx"}])
    want = r"small\.yaml:\d+: workloads\[0\]\.model: .*bad\.onnx: not an ONNX model"
    err = _one_line(*dse("sweep", path, "--no-progress"))
    assert re.search(want, err), err
    assert not (tmp_path / "out").exists()
    assert re.search(want, _one_line(*dse("schema", "study", "--check", path)))  # the check loads models too
    code, err = dse("sweep", small_study(tmp_path, trials=2), "--no-progress")
    assert code == 0 and (tmp_path / "out" / "trials.csv").exists(), err


def test_unwritable_output_folder(tmp_path: Path) -> None:
    """-o naming a file, a folder under a file, or a place nobody may create a folder in."""
    path = small_study(tmp_path, trials=2)
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for out in (afile, afile / "sub", Path("/proc/dse-study-test/out")):
        err = _one_line(*dse("sweep", path, "--no-progress", "-o", out))
        assert f"{out}/study.journal: cannot write (" in err, err
    assert afile.read_text() == "not a folder\n" and not (tmp_path / "out").exists()


def test_unwritable_report(done: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    err = _one_line(*dse("report", done, "-o", afile / "r.html"))
    assert f"{afile}/r.html: cannot write (" in err, err
    (tmp_path / "r_files").write_text("")  # where the report's images go
    err = _one_line(*dse("report", done, "-o", tmp_path / "r.html"))
    assert "r_files: cannot write (" in err and not (tmp_path / "r.html").exists(), err


def test_results_without_completed_trials(tmp_path: Path) -> None:
    """Every design invalid: `dse results` says so (like `dse report`), and trials.csv still has every
    metric and violation column, empty."""
    path = small_study(tmp_path, trials=2)
    path.write_text(path.read_text().replace("expr: rows * cols", "expr: rows * cols + 1"))
    assert dse("sweep", path, "--no-progress")[0] == 0
    for extra in ((), ("--json",)):
        err = _one_line(*dse("results", tmp_path / "out", *extra))
        assert "out: no completed trials to show (of its 2 trials 2 pruned; reasons are in" in err, err
    from dse.study.runner import open_study

    open_study(tmp_path / "out")[1].ask()  # a trial left running, as by a killed sweep
    err = _one_line(*dse("results", tmp_path / "out"))
    assert "(of its 3 trials 2 pruned, 1 running; reasons are in `dse sweep`'s trials.csv; `dse sweep` again " \
           "resumes those that were running when it stopped)" in err, err
    table = pd.read_csv(tmp_path / "out" / "trials.csv")
    cols = [*metric_names(["net"]), "violation:area_mm2 <= 1", "violation:net: latency_ms <= 1000 / fps"]
    assert set(cols) <= set(table.columns) and table[cols].isna().all().all()


def test_results_without_feasible_design_says_so(tmp_path: Path) -> None:
    """Trials that completed but met no constraint: an empty Pareto table (exit 0) and a note
    pointing at the violation columns."""
    path = small_study(tmp_path, trials=2, constraints=["area_mm2 <= 0.000001"])
    assert dse("sweep", path, "--no-progress")[0] == 0
    code, err = dse("results", tmp_path / "out")
    assert code == 0 and "note: no feasible design among the 2 completed trials; the 'violation:' columns" in err
    table = pd.read_csv(tmp_path / "out" / "trials.csv")
    assert (table["state"] == "COMPLETE").all() and not table["feasible"].any()
    assert (table["violation:area_mm2 <= 0.000001"] > 0).all()


@pytest.mark.parametrize("n", ["0", "-1"])
def test_trials_must_be_positive(tmp_path: Path, n: str) -> None:
    code, err = dse("sweep", small_study(tmp_path), "--trials", n, "--no-progress")
    assert code == 2 and "--trials" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("field", "value", "want"), [
    ("sampler", {"kind": "nsga2", "seed": -5, "population": 4}, r"sampler\.seed: expected a number >= 0, got -5"),
    ("sampler", {"kind": "random", "seed": 2**32}, r"sampler\.seed: expected a number <= 4294967295, got 4294967296"),
    ("mapper", {"max_evaluations": 200, "seed": -3}, r"mapper\.seed: expected a number >= 0, got -3"),
])
def test_seed_out_of_numpys_range(tmp_path: Path, field: str, value: dict, want: str) -> None:
    """numpy takes seeds 0..2**32-1: outside, the study is refused when it loads (it had passed the
    check, then the sweep crashed with a traceback, or pruned every design for the file's mistake)."""
    import yaml

    path = small_study(tmp_path, sampler="random")
    doc = yaml.safe_load(path.read_text())
    doc[field] = value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert re.search(r"small\.yaml:\d+: " + want + "$", _one_line(*dse("schema", "study", "--check", path)).strip())
    assert re.search(want, _one_line(*dse("sweep", path, "--no-progress")))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("knob", [
    {"path": "levels.buffer.fanout.y", "choices": [1, 2]},
    {"presets": {"a": {"mac.count": 4}, "b": {"levels.buffer.capacity": "2 KiB"}}},
])
def test_two_knobs_may_not_write_one_field(tmp_path: Path, knob: dict) -> None:
    """The later knob's value would win unseen, and trials.csv would list the other's values next to
    numbers computed without them."""
    knobs = {"rows": {"path": "levels.buffer.fanout.y", "choices": [2, 4]},
             "pes": {"path": "mac.count", "expr": "rows * 2"},
             "glb": {"path": "levels.buffer.capacity", "choices": [1, 4], "format": "{} KiB"}, "again": knob}
    path = small_study(tmp_path, sampler="random", knobs=knobs)
    err = _one_line(*dse("schema", "study", "--check", path))
    assert re.search(r"small\.yaml:\d+: knobs\.again: writes .*, which knob '(rows|pes|glb)' writes too", err), err


@pytest.mark.parametrize("kind", ["tpe", "nsga2"])
def test_largest_seed_runs(tmp_path: Path, kind: str) -> None:
    """The samplers derive a seed per trial from the study's: at the top of the range it stays in
    numpy's range (a seed of 42,950 or more had crashed the first trial)."""
    import yaml

    path = small_study(tmp_path, sampler=kind, trials=2)
    doc = yaml.safe_load(path.read_text())
    doc["sampler"] = {"kind": kind, "seed": 2**32 - 1, **({"population": 2} if kind == "nsga2" else {})}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert run_study(path).ran == 2
