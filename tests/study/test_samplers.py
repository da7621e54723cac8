"""A trial killed after drawing some of its parameters and resumed draws the rest as an
uninterrupted run would (the resume contract of dse.study.runner), for every sampler kind."""

from __future__ import annotations

import optuna
import pytest
import yaml

from dse.study.samplers import make_sampler

NAMES = ("rows", "cols", "glb", "pes")


def _draw(trial: optuna.trial.Trial) -> dict[str, int]:
    return {n: trial.suggest_categorical(n, [1, 2, 4, 8, 16]) for n in NAMES}


def _study(kind: str, storage: optuna.storages.BaseStorage) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(storage=storage, study_name="s", load_if_exists=True,
                               sampler=make_sampler(kind, [], seed=3))


@pytest.mark.parametrize("kind", ["random", "tpe", "nsga2"])
@pytest.mark.parametrize("held", [1, 2, 3])
@pytest.mark.parametrize("number", [3, 11])  # TPE: one of its 10 random start-up trials, one after
def test_resumed_trial_draws_the_rest_as_before(kind: str, held: int, number: int) -> None:
    ref = _study(kind, optuna.storages.InMemoryStorage())
    ref.optimize(lambda t: sum(_draw(t).values()), n_trials=number + 1)
    want = ref.trials[-1].params

    storage = optuna.storages.InMemoryStorage()
    first = _study(kind, storage)
    first.optimize(lambda t: sum(_draw(t).values()), n_trials=number)
    killed = first.ask()  # drew `held` parameters, then its process died
    for n in NAMES[:held]:
        killed.suggest_categorical(n, [1, 2, 4, 8, 16])
    again = _study(kind, storage)  # a new process: fresh sampler objects
    resumed = optuna.trial.Trial(again, killed._trial_id)
    assert _draw(resumed) == want


@pytest.mark.usefixtures("two_cores")
@pytest.mark.parametrize("kind", ["tpe", "nsga2", "random", "grid"])
def test_more_workers_than_the_history_lag_warn_that_they_take_turns(tmp_path, kind: str) -> None:
    """TPE and NSGA-II trial n waits for trials up to n - history_lag: with more workers than the lag,
    `dse sweep` says (on one line, before it runs them) that they take turns; not for one worker,
    nor for workers within the lag, nor for the samplers that draw from the trial number alone, nor
    when no trial is left."""
    from tests.study.helpers import dse, small_study

    path = small_study(tmp_path, sampler=kind, trials=1)
    code, err = dse("sweep", path, "--no-progress")
    assert code == 0 and "warning:" not in err, err
    code, err = dse("sweep", path, "--no-progress", "--workers", "2")  # (nothing left to run)
    assert code == 0 and "warning:" not in err, err
    code, err = dse("sweep", path, "--no-progress", "--workers", "2", "--trials", "2")  # (one left: one worker)
    assert code == 0 and "warning:" not in err, err
    code, err = dse("sweep", path, "--no-progress", "--workers", "2", "--trials", "4")
    warned = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0
    expected = (f"warning: sampler {kind} with 2 workers and history_lag 1: at most 1 trial(s) run at once (trial "
                "n is drawn from trials up to n - history_lag and waits for them); raise sampler.history_lag in the "
                "study file to run more (the results depend on it, never on the workers)")
    assert warned == ([expected] if kind in ("tpe", "nsga2") else []), err
    lagged = small_study(tmp_path, sampler=kind, trials=3, name="lagged", output=str(tmp_path / "lagged"))
    doc = yaml.safe_load(lagged.read_text())
    doc["sampler"]["history_lag"] = 2
    lagged.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = dse("sweep", lagged, "--no-progress", "--workers", "2")
    assert code == 0 and "warning:" not in err, err


def _timed_objective(trial: optuna.trial.Trial) -> tuple[float, float]:
    """Two objectives of the drawn values, after a sleep that reorders the finishing of parallel
    trials (its length is random, not a function of the trial: timing must not matter)."""
    import random
    import time

    v = _draw(trial)
    time.sleep(random.uniform(0, 0.04))
    return float(v["rows"] * v["cols"] + v["glb"]), float(abs(v["pes"] - v["rows"]) + 16 / v["glb"])


@pytest.mark.parametrize("kind", ["tpe", "nsga2"])
def test_history_samplers_draw_the_same_trials_with_any_number_of_threads(kind: str) -> None:
    """With a history lag, trial n is drawn from trials 0 .. n - lag only, once they are finished:
    3 threads draw exactly the trials one does (optuna's own parallel mode draws from whatever has
    finished, so which designs it tries depends on timing)."""
    def run(jobs: int) -> list[dict[str, int]]:
        st = optuna.create_study(directions=["minimize", "minimize"],
                                 sampler=make_sampler(kind, [], seed=5, population=4, lag=3))
        st.optimize(_timed_objective, n_trials=30, n_jobs=jobs)
        assert len(st.trials) == 30
        return [t.params for t in sorted(st.trials, key=lambda t: t.number)]

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    serial = run(1)
    assert len({tuple(p.values()) for p in serial}) > 5  # (a sampler that draws, not a constant)
    assert run(3) == serial
    assert run(2) == serial


def test_history_lag_hides_the_latest_trials_from_the_sampler() -> None:
    """The sampler of trial n sees trials 0 .. n - lag and nothing later."""
    from dse.study.samplers import ReseededSampler

    seen: dict[int, list[int]] = {}

    class Spy(optuna.samplers.RandomSampler):
        def infer_relative_search_space(self, study: object, trial: optuna.trial.FrozenTrial) -> dict:
            seen[trial.number] = [t.number for t in study.get_trials(deepcopy=False)]
            return {}

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    st = optuna.create_study(sampler=ReseededSampler(lambda s: Spy(seed=s), 0, lag=2))
    st.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=5)
    assert seen == {0: [], 1: [], 2: [0], 3: [0, 1], 4: [0, 1, 2]}
