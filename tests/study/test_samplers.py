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
