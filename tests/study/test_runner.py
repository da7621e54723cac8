"""Sweeps on optuna: the grid is covered once, the Pareto set equals brute force, constraints work,
the table round-trips through CSV, and several workers finish each trial exactly once."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from costmodel.errors import UserError
from dse.study.design import evaluate_design, load_layers
from dse.study.pareto import pareto_mask
from dse.study.results import pareto_table, trials_table, write_tables
from dse.study.runner import _Progress, run_study
from dse.study.schema import load_study
from tests.study.helpers import small_study, study_app


def _naive_front(points: dict[tuple, tuple[float, float]]) -> set[tuple]:
    """Brute-force Pareto set (both objectives minimized): keep p unless some q is <= everywhere, < once."""
    return {p for p, a in points.items()
            if not any(all(x <= y for x, y in zip(b, a, strict=True)) and b != a for b in points.values())}


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("grid")
    res = run_study(small_study(tmp, trials=100))  # capped at the 12 grid points
    return res, trials_table(res.study, res.optuna_study)


def test_grid_covers_every_point_once(grid_run) -> None:
    _, table = grid_run
    assert len(table) == 12 and (table["state"] == "COMPLETE").all()
    seen = set(map(tuple, table[["rows", "cols", "glb"]].to_numpy().tolist()))
    assert seen == set(itertools.product([2, 4], [1, 2, 4], [1, 4]))
    assert (table["pes"] == table["rows"] * table["cols"]).all()


def test_pareto_equals_bruteforce_grid(grid_run) -> None:
    """Every grid point evaluated directly (no optuna), then the front by a naive double loop."""
    res, table = grid_run
    study = res.study
    layers = load_layers(study)
    points = {}
    for rows, cols, glb in itertools.product([2, 4], [1, 2, 4], [1, 4]):
        d = evaluate_design(study, layers, {"rows": rows, "cols": cols, "glb": glb})
        assert d.invalid is None
        if d.feasible:
            points[(rows, cols, glb)] = (d.metrics["energy_pj"], d.metrics["latency_ms"])
    front = pareto_table(study, table)
    got = set(map(tuple, front[["rows", "cols", "glb"]].to_numpy().tolist()))
    assert got == _naive_front(points) and got
    # optuna's own Pareto set (it reads the constraints set with trial.set_constraint) agrees
    assert {t.number for t in res.optuna_study.best_trials} == set(front["trial"])


def test_constraints_mark_infeasible(tmp_path: Path) -> None:
    """An area budget between the smallest and largest design splits the grid by area."""
    res = run_study(small_study(tmp_path, constraints=["area_mm2 <= 0.03"]))
    table = trials_table(res.study, res.optuna_study)
    assert table["feasible"].any() and not table["feasible"].all()
    np.testing.assert_array_equal(table["feasible"], table["area_mm2"] <= 0.03)
    assert set(pareto_table(res.study, table)["trial"]) == {t.number for t in res.optuna_study.best_trials}


def test_tables_round_trip(grid_run, tmp_path: Path) -> None:
    """trials.csv and trials.parquet hold the same table; pandas reads both back."""
    _, table = grid_run
    files = write_tables(table, tmp_path)
    assert files == [tmp_path / "trials.csv", tmp_path / "trials.parquet"]
    back = pd.read_csv(tmp_path / "trials.csv")
    assert len(back) == 12 and {"rows", "cols", "glb", "pes", "energy_pj", "area_mm2", "feasible"} <= set(back)
    np.testing.assert_allclose(back["energy_pj"], table["energy_pj"])
    pq = pd.read_parquet(tmp_path / "trials.parquet")
    assert list(pq.columns) == list(table.columns)
    pd.testing.assert_frame_equal(pq, table, check_dtype=False)
    assert pq["feasible"].dtype == bool and pq["rows"].dtype.kind == "i"
    assert not list(tmp_path.glob(".*tmp"))


def test_a_running_trial_leaves_integer_knobs_integers(tmp_path: Path) -> None:
    """A trial still running has no knob values yet: its empty cells had turned every integer knob
    column into floats (512.0 in trials.csv) until the sweep ended, so the files' types depended on
    when they were written."""
    res = run_study(small_study(tmp_path, trials=2))
    res.optuna_study.ask()  # (RUNNING, no parameters yet: as a worker's trial between ask and tell)
    table = trials_table(res.study, res.optuna_study)
    assert table["state"].tolist() == ["COMPLETE", "COMPLETE", "RUNNING"]
    for k in ("rows", "cols", "glb", "pes"):
        assert str(table[k].dtype) == "Int64" and table[k].isna().tolist() == [False, False, True], k
    write_tables(table, tmp_path)
    assert pd.read_csv(tmp_path / "trials.csv", dtype=str)["pes"].tolist()[:2] == [str(int(v)) for v in table["pes"][:2]]
    assert pd.read_parquet(tmp_path / "trials.parquet")["pes"].dtype.kind == "i"


def test_parquet_mixed_choices_as_text(tmp_path: Path) -> None:
    """A knob whose choices mix numbers and text cannot be one Parquet type: it is written as text."""
    table = pd.DataFrame({"trial": [0, 1], "mode": [4, "auto"], "energy_pj": [1.0, 2.0]})
    write_tables(table, tmp_path)
    assert pd.read_parquet(tmp_path / "trials.parquet")["mode"].tolist() == ["4", "auto"]
    assert pd.read_csv(tmp_path / "trials.csv")["mode"].tolist() == ["4", "auto"]


def test_invalid_design_is_pruned_with_reason(tmp_path: Path) -> None:
    """A config with more MACs than the fan-outs give is invalid: pruned, with the config's error."""
    path = small_study(tmp_path, trials=2)
    text = path.read_text().replace("expr: rows * cols", "expr: rows * cols + 1")
    path.write_text(text)
    res = run_study(path)
    table = trials_table(res.study, res.optuna_study)
    assert (table["state"] == "PRUNED").all() and not table["feasible"].any()
    assert table["invalid"].str.contains("mac.count").all()


@pytest.mark.parametrize(("edit", "reason"), [
    (("expr: rows * cols", "expr: rows * cols // (rows - rows)"),
     "knob pes: 'rows * cols // (rows - rows)' cannot be evaluated for cols = "),
    (("area_mm2 <= 1", "area_mm2 <= 1 / (rows - rows)"),
     "constraint 'area_mm2 <= 1 / (rows - rows)': '1 / (rows - rows)' cannot be evaluated for rows = "),
])
def test_arithmetic_that_fails_for_a_design_prunes_it_with_the_reason(tmp_path: Path, edit, reason: str) -> None:
    """1 / 0 in a derived knob or a constraint, for the values a design draws: each trial had FAILed
    with a traceback on stderr; now the design is invalid (PRUNED) and says why."""
    path = small_study(tmp_path, trials=2)
    assert edit[0] in path.read_text()
    path.write_text(path.read_text().replace(*edit))
    res = run_study(path)
    table = trials_table(res.study, res.optuna_study)
    assert (table["state"] == "PRUNED").all() and len(table) == 2
    assert table["invalid"].str.startswith(reason).all(), table["invalid"].tolist()


@pytest.mark.usefixtures("two_cores")
def test_two_workers_finish_each_trial_once(tmp_path: Path) -> None:
    res = run_study(small_study(tmp_path, sampler="random", trials=8), workers=2)
    trials = res.optuna_study.get_trials()
    assert sorted(t.number for t in trials) == list(range(8))
    assert all(t.state.name == "COMPLETE" for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) == 2


def test_workers_above_the_core_count_count_as_one_per_core(tmp_path: Path, monkeypatch) -> None:
    """`--workers 8` on one core runs in this process, not in 8 spawned ones (the trials are
    CPU-bound: more processes than cores only multiply the memory)."""
    from dse.network import solve
    from dse.study import runner

    monkeypatch.setattr(solve, "default_workers", lambda: 1)

    def no_processes(*_args, **_kwargs) -> None:
        raise AssertionError("worker processes started on a one-core machine")

    monkeypatch.setattr(runner, "_run_processes", no_processes)
    res = run_study(small_study(tmp_path, sampler="random", trials=3), workers=8)
    trials = res.optuna_study.get_trials()
    assert sorted(t.number for t in trials) == [0, 1, 2]
    assert all(t.state.name == "COMPLETE" for t in trials)


def test_sweep_cli_and_bad_file(tmp_path: Path) -> None:
    path = small_study(tmp_path, sampler="random", trials=3)
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out" / "trials.csv").exists()
    r = CliRunner().invoke(study_app(), ["results", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0, r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(path.read_text().replace("levels.buffer.capacity", "levels.buffer.capacty"))
    r = CliRunner().invoke(study_app(), ["sweep", str(bad)])
    assert isinstance(r.exception, UserError) and "bad.yaml:" in str(r.exception)
    assert "unknown field 'capacty'" in str(r.exception)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=40),
       st.lists(st.sampled_from(["minimize", "maximize"]), min_size=3, max_size=3))
def test_pareto_mask_matches_naive(rows: list[tuple[int, int, int]], dirs: list[str]) -> None:
    sign = [1 if d == "minimize" else -1 for d in dirs]
    pts = [tuple(s * v for s, v in zip(sign, r, strict=True)) for r in rows]
    want = [not any(all(b <= a for a, b in zip(p, q, strict=True)) and q != p for q in pts) for p in pts]
    assert pareto_mask(np.array(rows), dirs).tolist() == want


def test_load_study_relative_hardware(tmp_path: Path) -> None:
    """A hardware path in the study file is relative to the file, not to the current directory."""
    import shutil

    from costmodel.arch import HWCONFIGS

    shutil.copy(HWCONFIGS / "tiny.yaml", tmp_path / "my_hw.yaml")
    path = small_study(tmp_path, hardware="my_hw.yaml")
    assert load_study(path).hw_source == tmp_path / "my_hw.yaml"


def test_revisited_designs_reuse_results(tmp_path: Path) -> None:
    """Random sampling of a 2-point space: repeats copy the first evaluation; the front lists designs once."""
    knobs = {"rows": {"path": "levels.buffer.fanout.y", "choices": [4]},
             "cols": {"path": "levels.buffer.fanout.x", "choices": [2]},
             "pes": {"path": "mac.count", "expr": "rows * cols"},
             "glb": {"path": "levels.buffer.capacity", "choices": [1, 4], "format": "{} KiB"}}
    res = run_study(small_study(tmp_path, sampler="random", trials=6, knobs=knobs))
    table = trials_table(res.study, res.optuna_study)
    assert len(table) == 6 and table[["rows", "cols"]].drop_duplicates().shape[0] == 1
    assert table["same_as"].isna().sum() == 2  # one evaluation per distinct (glb) design
    assert table["same_as"].dtype == "Int64"  # a trial number: written 3, not 3.0
    write_tables(table, tmp_path)
    assert pd.read_parquet(tmp_path / "trials.parquet")["same_as"].dtype == "Int64"
    text = pd.read_csv(tmp_path / "trials.csv", dtype=str, keep_default_na=False)["same_as"]
    assert all(v == "" or v.isdigit() for v in text), list(text)  # written 3, not 3.0
    for _, g in table.groupby("glb"):
        assert g["energy_pj"].nunique() == 1
    assert len(pareto_table(res.study, table)) <= 2
    bar = _Progress(res.optuna_study, 6)  # the progress bar's Pareto size counts designs, like the table
    bar.close()
    assert bar.progress.tasks[0].description.startswith(f"pareto {len(pareto_table(res.study, table))} ")


def test_same_as_does_not_depend_on_which_worker_finished_first(tmp_path: Path) -> None:
    """Two workers may evaluate the same design at once (neither sees the other finished): the table's
    same_as comes from the parameters, so it is what one worker gives: each repeat names the first
    finished trial of its design."""
    knobs = {"glb": {"path": "levels.buffer.capacity", "choices": [1, 4], "format": "{} KiB"}}
    res = run_study(small_study(tmp_path, sampler="random", trials=6, knobs=knobs))
    ost = optuna.create_study(directions=res.optuna_study.directions)
    for t in res.optuna_study.get_trials():  # as if every trial had been mapped by a worker of its own
        ost.add_trial(optuna.trial.create_trial(
            state=t.state, params=t.params, distributions=t.distributions, values=t.values,
            user_attrs={k: v for k, v in t.user_attrs.items() if k != "same_as"}, system_attrs=t.system_attrs))
    table = trials_table(res.study, ost)
    firsts = table.groupby("glb")["trial"].min()
    want = [pd.NA if t == firsts[g] else firsts[g] for t, g in zip(table["trial"], table["glb"])]
    assert table["same_as"].tolist() == want and table["same_as"].isna().sum() == 2


def test_no_knobs_is_one_design(tmp_path: Path) -> None:
    """Without knobs every trial evaluates the template: the Pareto set lists it once."""
    res = run_study(small_study(tmp_path, sampler="random", trials=3, knobs={}))
    table = trials_table(res.study, res.optuna_study)
    front = pareto_table(res.study, table)
    assert len(table) == 3 and table["feasible"].all() and front["trial"].tolist() == [0]


def test_journal_opens_for_optuna_dashboard(grid_run) -> None:
    """`optuna-dashboard DIR/study.journal` (docs/studies.md): the journal loads with optuna.load_study
    and with the dashboard's own storage guess for a file path, and shows every trial."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    res, _ = grid_run
    path = res.out / "study.journal"
    st = optuna.load_study(study_name=res.study.name, storage=JournalStorage(JournalFileBackend(str(path))))
    assert len(st.get_trials()) == 12 and st.user_attrs == res.optuna_study.user_attrs
    dashboard = pytest.importorskip("optuna_dashboard._storage_url")
    names = [s.study_name for s in optuna.get_all_study_summaries(dashboard.get_storage(str(path)))]
    assert names == [res.study.name]


def test_results_table_is_never_cut(grid_run) -> None:
    """On a 40-column terminal `dse results` still prints every column name and every value whole."""
    res, table = grid_run
    r = CliRunner().invoke(study_app(), ["results", str(res.out)], env={"COLUMNS": "40"})
    assert r.exit_code == 0, r.output
    front = pareto_table(res.study, table)
    for name in ("trial", "rows", "cols", "pes", "glb", "energy_pj", "latency_ms"):
        assert name in r.output
    for v in front["energy_pj"]:
        assert f"{v:.4g}" in r.output
    assert "…" not in r.output


def test_results_of_a_folder_without_journal_creates_nothing(tmp_path: Path) -> None:
    """`dse results` only reads: a folder whose journal is gone is an error, and stays as it was."""
    from costmodel.errors import UserError
    from dse.study.runner import read_study

    path = small_study(tmp_path, sampler="random", trials=1)
    run_study(path)
    (tmp_path / "out" / "study.journal").unlink()
    before = sorted(p.name for p in (tmp_path / "out").iterdir())
    with pytest.raises(UserError, match="no such study journal"):
        read_study(tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == before


def test_folder_copy_is_the_text_that_was_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The study file edited while the sweep loads its models: the folder's copy (which a resume
    compares with) is the text the sweep runs, not the edited file."""
    from dse.study import runner

    path = small_study(tmp_path, trials=2)
    parsed = path.read_text()
    real = runner.load_layers

    def edit_then_load(study):  # the user saves a changed budget meanwhile
        path.write_text(parsed.replace("trials: 2", "trials: 3"))
        return real(study)

    monkeypatch.setattr(runner, "load_layers", edit_then_load)
    res = run_study(path)
    assert len(res.optuna_study.get_trials()) == 2
    assert (res.out / "study.yaml").read_text() == parsed != path.read_text()


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize("kind", ["tpe", "nsga2"])
def test_history_samplers_run_the_same_trials_with_two_worker_processes(tmp_path: Path, kind: str) -> None:
    """With ``history_lag: 2``, two spawned workers sweep exactly the designs (and metrics) one does:
    past TPE's 10 random start-up trials, and over NSGA-II's generations of 3."""
    import yaml

    tables = []
    for workers in (1, 2):
        path = small_study(tmp_path, sampler=kind, trials=14, name=f"w{workers}", output=str(tmp_path / f"w{workers}"))
        doc = yaml.safe_load(path.read_text())
        doc["sampler"].update(history_lag=2, population=3)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        res = run_study(path, workers=workers)
        tables.append(trials_table(res.study, res.optuna_study).drop(columns=["state"]))
    assert tables[0]["rows"].nunique() > 1 and len(tables[0]) == 14
    pd.testing.assert_frame_equal(tables[0], tables[1])


def _ask_within(ost: optuna.Study, seconds: float) -> BaseException | None:
    """``ost.ask()`` in a thread: what it raised, or a failure if it still waits after ``seconds``
    (a regression must not hang the suite)."""
    import threading

    out: list[BaseException | None] = []

    def ask() -> None:
        try:
            ost.ask()
            out.append(None)
        except BaseException as exc:  # noqa: BLE001 -- handed to the test
            out.append(exc)

    t = threading.Thread(target=ask, daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"ask() still waits after {seconds} s"
    return out[0]


def _lagged_study(tmp_path: Path) -> tuple[Path, optuna.Study]:
    """A TPE study (history lag 1) with trial 0 finished, its optuna study open."""
    from dse.study.runner import create
    from dse.study.schema import load_study
    from dse.study.storage import open_storage

    path = small_study(tmp_path, sampler="tpe", trials=3)
    study = load_study(path)
    study.output.mkdir(parents=True)
    ost = create(study, open_storage(study.output, None))
    ost.optimize(lambda t: [1.0, 1.0], n_trials=1)
    return path, ost


def test_a_trial_drawn_from_a_dead_workers_trial_stops_with_a_message(tmp_path: Path) -> None:
    """A RUNNING trial whose worker on this host died never finishes: the trial drawn from it (history
    lag) stops with a UserError instead of waiting forever; the next sweep re-runs both."""
    import socket

    from dse.study.history import WORKER_ATTR, StaleHistory

    path, ost = _lagged_study(tmp_path)
    dead = ost.ask()  # trial 1, left RUNNING by a worker that no longer exists
    ost._storage.set_trial_user_attr(dead._trial_id, WORKER_ATTR, f"{socket.gethostname()}:999999999")
    err = _ask_within(ost, 30)
    assert isinstance(err, StaleHistory) and "trial 1 will not finish" in str(err), err
    assert "trial 2 is drawn from it" in str(err)
    res = run_study(path)  # resumes trial 1 (and the stopped trial 2) in place
    assert res.resumed == 2
    assert [t.state.name for t in res.optuna_study.get_trials()] == ["COMPLETE"] * 3


def test_a_zombie_worker_counts_as_dead(tmp_path: Path) -> None:
    """A worker process that exited but was not yet reaped by its parent (a zombie) still answers
    signal 0; the trial it left RUNNING must not be waited for forever."""
    import subprocess
    import time

    from dse.study.history import WORKER_ATTR, StaleHistory, owner_dead, worker_id

    child = subprocess.Popen(["true"])
    for _ in range(100):  # until it has exited (and, not waited for, is a zombie)
        with open(f"/proc/{child.pid}/stat", "rb") as f:
            if f.read().rpartition(b")")[2].split()[0] == b"Z":
                break
        time.sleep(0.05)
    try:
        _, ost = _lagged_study(tmp_path)
        dead = ost.ask()
        ost._storage.set_trial_user_attr(dead._trial_id, WORKER_ATTR, f"{worker_id().partition(':')[0]}:{child.pid}")
        assert owner_dead(ost.trials[1]) is True
        assert isinstance(_ask_within(ost, 30), StaleHistory)
    finally:
        child.wait()


def test_a_trial_that_never_names_its_worker_is_dead_after_the_grace(tmp_path: Path, monkeypatch) -> None:
    """A trial killed between its creation and naming its worker: dead once a waiter has seen it
    unnamed for the grace period (on the waiter's own clock), not before."""
    import time

    from dse.study import history

    _, ost = _lagged_study(tmp_path)
    unnamed = ost._storage.create_new_trial(ost._study_id)  # trial 1: RUNNING, no worker
    assert history.owner_dead(ost._storage.get_trial(unnamed)) is None
    monkeypatch.setattr(history, "GRACE_S", 0.5)
    t0 = time.monotonic()
    assert isinstance(_ask_within(ost, 30), history.StaleHistory)
    assert time.monotonic() - t0 >= 0.5


def test_an_interruption_in_optunas_tell_is_an_interruption(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C while optuna stores a trial's result: optuna's own cleanup then raised UnboundLocalError
    (exit 1, a traceback); the sweep stops as interrupted (exit 130), the trial RUNNING, to be resumed."""
    import optuna.study._optimize as optimize_mod

    from dse.study.runner import Interrupted

    def interrupted(**_kw: object) -> None:
        raise Interrupted("SIGINT")

    monkeypatch.setattr(optimize_mod, "_tell_with_warning", interrupted)
    path = small_study(tmp_path, sampler="random", trials=2)
    with pytest.raises(Interrupted, match="SIGINT"):
        run_study(path)
    monkeypatch.undo()
    assert [t.state.name for t in run_study(path).optuna_study.get_trials()] == ["COMPLETE"] * 2


def _unnamed_trial(tmp_path: Path, age_s: float = 0.0) -> tuple[Path, optuna.Study, int]:
    """A random study (2 trials) whose one trial is RUNNING, names no worker and started ``age_s``
    ago: the trial id."""
    import datetime

    from dse.study.runner import create
    from dse.study.storage import open_storage

    tmp_path.mkdir(exist_ok=True)
    path = small_study(tmp_path, sampler="random", trials=2)
    study = load_study(path)
    study.output.mkdir(parents=True)
    ost = create(study, open_storage(study.output, None))
    start = datetime.datetime.now() - datetime.timedelta(seconds=age_s)
    template = optuna.trial.FrozenTrial(number=0, state=optuna.trial.TrialState.RUNNING, value=None,
                                        datetime_start=start, datetime_complete=None, params={},
                                        distributions={}, user_attrs={}, system_attrs={},
                                        intermediate_values={}, trial_id=0)
    return path, ost, ost._storage.create_new_trial(ost._study_id, template_trial=template)


def test_a_trial_that_names_no_worker_is_resumed_once_it_is_the_grace_old(tmp_path: Path, monkeypatch, capsys) -> None:
    """A starting sweep takes a RUNNING trial that names no worker for one killed as it started only
    after the grace period (another machine's sweep names its new trial within milliseconds; taken
    at once, that trial would run twice); one already that old, at once."""
    import time

    from dse.study import history

    monkeypatch.setattr(history, "GRACE_S", 0.6)
    path, _, _ = _unnamed_trial(tmp_path / "young")
    t0 = time.monotonic()
    res = run_study(path)
    assert time.monotonic() - t0 >= 0.6 and res.resumed == 1
    assert [t.state.name for t in res.optuna_study.get_trials()] == ["COMPLETE"] * 2
    assert "names no worker yet" in capsys.readouterr().err

    monkeypatch.setattr(history, "GRACE_S", 30.0)
    path, _, _ = _unnamed_trial(tmp_path / "old", age_s=60)
    t0 = time.monotonic()
    res = run_study(path)
    assert time.monotonic() - t0 < 30 and res.resumed == 1
    assert [t.state.name for t in res.optuna_study.get_trials()] == ["COMPLETE"] * 2


def test_a_trial_that_names_a_live_worker_during_the_grace_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    """The trial of another sweep that names its worker while the starting sweep waits is that
    sweep's: not re-run (it stays RUNNING here, its stand-in worker never finishing it)."""
    import socket
    import subprocess
    import threading
    import time

    from dse.study import history

    monkeypatch.setattr(history, "GRACE_S", 30.0)
    path, ost, trial_id = _unnamed_trial(tmp_path)
    live = subprocess.Popen(["sleep", "60"])
    name = threading.Timer(0.3, ost._storage.set_trial_user_attr,
                           (trial_id, history.WORKER_ATTR, f"{socket.gethostname()}:{live.pid}"))
    try:
        name.start()
        t0 = time.monotonic()
        res = run_study(path)
        assert time.monotonic() - t0 < 30 and res.resumed == 0
        states = [t.state.name for t in res.optuna_study.get_trials()]
        assert states == ["RUNNING", "COMPLETE"]  # (the running trial counts towards the 2 wanted)
    finally:
        name.cancel()
        live.kill()
        live.wait()


def test_a_stale_history_in_a_dask_task_is_raised_not_an_exit(tmp_path: Path, monkeypatch) -> None:
    """In a Dask task (``watch_parent=False``) the StaleHistory goes back to the client as itself: a
    SystemExit would kill the Dask worker and every task it runs."""
    from dse.study import runner
    from dse.study.history import StaleHistory

    path = small_study(tmp_path, sampler="tpe", trials=2)
    run_study(path, trials=1)

    def stale(*_args: object, **_kw: object) -> None:
        raise StaleHistory("trial 0 will not finish")

    monkeypatch.setattr(optuna.Study, "optimize", stale)
    with pytest.raises(StaleHistory):
        runner._worker(str(tmp_path / "out"), None, 1, 2, watch_parent=False)
    with pytest.raises(SystemExit):
        runner._worker(str(tmp_path / "out"), None, 1, 2, watch_parent=True)


def test_a_design_read_back_from_a_table_with_float_columns(tmp_path: Path) -> None:
    """A trials table whose knob column has a missing value (a failed trial) holds 4 as 4.0; the
    report re-evaluates its chosen design from that row, and a config now refuses 4.0 for a fan-out:
    integer knobs take their values back as ints."""
    study = load_study(small_study(tmp_path, trials=1))
    row = pd.DataFrame({"rows": [4, None], "cols": [2, None], "glb": [4, None]}).iloc[0]
    assert isinstance(row["rows"], np.floating)
    res = evaluate_design(study, load_layers(study), {k: row[k] for k in ("rows", "cols", "glb")})
    assert res.invalid is None, res.invalid
    assert res.values["rows"] == 4 and type(res.values["rows"]) is int and res.values["pes"] == 8


def test_journal_lock_resolves_from_a_relative_folder(tmp_path: Path, monkeypatch) -> None:
    """optuna's journal lock is a symlink to the journal, and a lock older than its grace period is
    taken as left by a killed worker only if the link resolves (os.stat). With the folder given
    relative (`runs/NAME`, the default), the link pointed nowhere: a killed worker's lock hung every
    later command."""
    import os

    from dse.study.storage import open_storage

    monkeypatch.chdir(tmp_path)
    links: list[bool] = []
    real = os.symlink

    def symlink(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        links.append(os.path.exists(dst))  # (exists follows the link)

    monkeypatch.setattr(os, "symlink", symlink)
    storage = open_storage(Path("runs") / "s", None)
    optuna.create_study(storage=storage, study_name="s").optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    assert links and all(links)


def test_a_dangling_lock_of_an_older_version_is_removed(tmp_path: Path) -> None:
    """A worker of the version before absolute lock links, killed holding the lock, left a link that
    never resolves: every later command spun on it. (In a subprocess: a regression hangs, here it
    times out.)"""
    import os
    import subprocess
    import sys

    from dse.study.storage import open_storage

    run = tmp_path / "runs" / "s"
    optuna.create_study(storage=open_storage(run, None), study_name="s")
    os.symlink("runs/s/study.journal", run / "study.journal.lock")  # relative: resolves against runs/s/
    code = ("import optuna, sys; from pathlib import Path; from dse.study.storage import open_storage; "
            "st = optuna.load_study(storage=open_storage(Path('runs/s'), None), study_name='s'); "
            "st.optimize(lambda t: t.suggest_float('x', 0, 1), n_trials=1); print(len(st.trials))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "1", proc.stderr


def test_inline_layers_use_the_folders_mapping_database(tmp_path: Path) -> None:
    """As a model's layers do (docs/studies.md): a design evaluated again costs no search (inline
    layers had been searched every time, and the folder had no database)."""
    from dse.mapdb import MappingDB

    res = run_study(small_study(tmp_path, sampler="random", trials=2))
    with MappingDB(res.out / "mappings.sqlite") as db:
        assert len(db) >= 2  # (the two layer shapes of the first design at least)
    table = trials_table(res.study, res.optuna_study)
    row = table.iloc[0]
    again = evaluate_design(res.study, load_layers(res.study), {k.name: row[k.name] for k in res.study.sampled_knobs})
    assert [x.mappings_evaluated for x in again.layers["net"]] == [0, 0]
    assert again.metrics["energy_pj"] == pytest.approx(row["energy_pj"])
