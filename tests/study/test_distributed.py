"""Distributed sweeps: two worker processes on one PostgreSQL-backed study finish every trial
exactly once; a study on a Dask LocalCluster (loopback) has the trials and results of a local run
with the same seed (the random sampler draws from the trial number, so order does not matter)."""

from __future__ import annotations

import uuid
from pathlib import Path

import optuna
import pytest
from typer.testing import CliRunner

from costmodel.errors import UserError
from dse.study.runner import open_study, run_study
from dse.study.storage import masked, rdb_url
from tests.study.helpers import small_study, study_app

N = 8


def _signature(trials: list[optuna.trial.FrozenTrial]) -> list[tuple]:
    return sorted((t.number, t.state.name, tuple(sorted(t.params.items())), tuple(t.values or ())) for t in trials)


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    """The same random study, serial, on the default journal storage."""
    tmp = tmp_path_factory.mktemp("local")
    return _signature(run_study(small_study(tmp, sampler="random", trials=N)).optuna_study.get_trials())


@pytest.mark.usefixtures("two_cores")
def test_postgres_two_workers_finish_each_trial_once(pg_url: str, tmp_path: Path, local_reference) -> None:
    name = f"pg_{uuid.uuid4().hex[:8]}"  # a fresh study in a database that may hold earlier runs
    path = small_study(tmp_path, sampler="random", trials=N, name=name)
    res = run_study(path, workers=2, storage=pg_url)
    trials = res.optuna_study.get_trials()
    assert sorted(t.number for t in trials) == list(range(N))  # N trials, no number twice
    assert all(t.state.name == "COMPLETE" for t in trials)
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both processes ran trials
    # the rows really live in PostgreSQL: a fresh RDB storage (not the folder's) sees them all
    direct = optuna.load_study(study_name=name, storage=rdb_url(pg_url))
    assert _signature(direct.get_trials()) == _signature(trials)
    # the parameters and results are those of the serial journal run (same seed, random sampler)
    assert [s[2:] for s in _signature(trials)] == [s[2:] for s in local_reference]
    # `dse results` finds the storage from the folder's storage.txt; a rerun adds nothing
    assert open_study(tmp_path / "out")[1].get_trials()[-1].number == N - 1
    assert run_study(path).ran == 0 and len(res.optuna_study.get_trials()) == N
    r = CliRunner().invoke(study_app(), ["results", str(tmp_path / "out"), "--json"])
    assert r.exit_code == 0 and f'"trials": {N}' in r.output


def test_dask_local_cluster_matches_local_run(tmp_path: Path, local_reference) -> None:
    from distributed import LocalCluster

    path = small_study(tmp_path, sampler="random", trials=N)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        res = run_study(path, dask=cluster.scheduler_address)
    trials = res.optuna_study.get_trials()
    assert res.ran == N and len(trials) == N
    assert _signature(trials) == local_reference


def test_bad_storage_and_dask_address(tmp_path: Path) -> None:
    """A server that refuses the connection, or an address that is not one: exit 2 naming the flag,
    the password masked, no output folder left behind."""
    path = small_study(tmp_path, sampler="random", trials=2)
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--storage", "postgresql://u:secret@127.0.0.1:1/db"])
    assert isinstance(r.exception, UserError)
    msg = str(r.exception)
    assert msg.startswith("storage postgresql://u:***@127.0.0.1:1/db: cannot open") and "secret" not in msg
    assert not (tmp_path / "out").exists()
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--storage", str(tmp_path / "trials.db")])
    assert isinstance(r.exception, UserError) and str(r.exception).startswith(
        f"storage {tmp_path / 'trials.db'}: expected a journal file (.journal or .log) or a database URL")
    assert not (tmp_path / "out").exists()
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--dask", "nonsense://x", "--no-progress"])
    assert isinstance(r.exception, UserError) and "dask nonsense://x: cannot connect" in str(r.exception)
    assert not (tmp_path / "out").exists()
    # a finished study resumed with an address: nothing to run, so no connection is needed
    assert CliRunner().invoke(study_app(), ["sweep", str(path), "--no-progress"]).exit_code == 0
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--dask", "nonsense://x", "--no-progress"])
    assert r.exit_code == 0, r.output
    # trials left: the address is needed, and refused as before
    r = CliRunner().invoke(study_app(), ["sweep", str(path), "--dask", "nonsense://x", "--trials", "3",
                                         "--no-progress"])
    assert isinstance(r.exception, UserError) and "dask nonsense://x: cannot connect" in str(r.exception)
    assert masked("postgresql://u@h/db") == "postgresql://u@h/db"
