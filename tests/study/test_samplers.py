"""A trial killed after drawing some of its parameters and resumed draws the rest as an
uninterrupted run would (the resume contract of dse.study.runner), for every sampler kind."""

from __future__ import annotations

import optuna
import pytest

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


@pytest.mark.parametrize("kind", ["tpe", "nsga2", "random", "grid"])
def test_history_samplers_with_several_workers_warn_that_runs_differ(tmp_path, kind: str) -> None:
    """TPE and NSGA-II draw from the trials finished so far, so with several workers the designs
    tried depend on timing: `dse sweep` says so before it runs them (on one line), and not for one
    worker, for the samplers that draw from the trial number alone, or when no trial is left."""
    from tests.study.helpers import dse, small_study

    path = small_study(tmp_path, sampler=kind, trials=1)
    code, err = dse("sweep", path, "--no-progress")
    assert code == 0 and "warning:" not in err, err
    code, err = dse("sweep", path, "--no-progress", "--workers", "2")  # (nothing left to run)
    assert code == 0 and "warning:" not in err, err
    code, err = dse("sweep", path, "--no-progress", "--workers", "2", "--trials", "2")
    warned = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0
    expected = (f"warning: sampler {kind} with 2 workers: each trial is drawn from the trials finished when it "
                "starts, so which designs are tried depends on timing and differs between runs (grid and random "
                "do not; one worker reproduces a run exactly)")
    assert warned == ([expected] if kind in ("tpe", "nsga2") else []), err
