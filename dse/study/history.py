"""What a history sampler (TPE, NSGA-II) sees of a study: a fixed lag, so that several workers
draw exactly the designs one worker would.

Trial ``n`` is drawn from trials ``0 .. n - lag`` only, once every one of them has finished (it
waits for them). Which trials it sees then depends on the numbers alone, not on which worker ran
what or when, so a sweep gives the same trials with 1, 2 or N workers, locally or on Dask. With
``lag`` 1 that is the history of a serial run; with more workers than ``lag`` they take turns
(at most ``lag`` trials evaluate at once).

Why a view rather than optuna's own parallel mode: optuna's samplers read every trial finished so
far, so the draw of trial ``n`` depends on timing.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Container
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from costmodel.errors import UserError

WORKER_ATTR = "worker"
GRACE_S = 60.0
"""A RUNNING trial whose worker has not named itself after this long was killed before it could."""
POLL_S = 0.1


class StaleHistory(UserError):
    """A trial that another one is drawn from can never finish: its worker died (the situation, not
    a bug: the next sweep re-runs that trial in place)."""


def worker_id() -> str:
    """This process as a trial's ``worker`` attribute (``host:pid``)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_dead(trial: FrozenTrial, grace_s: float = 0.0, *, mine: bool = True) -> bool:
    """Whether the worker running ``trial`` is dead: a process of this host that no longer exists, or
    no worker named ``grace_s`` seconds after the trial started (a remote worker is taken as alive).
    ``mine``: what a trial of this very process counts as (dead when resuming: it runs none then;
    alive for a waiting sampler: another thread may run it)."""
    host, _, pid = str(trial.user_attrs.get(WORKER_ATTR, ":")).partition(":")
    if not host:
        start = trial.datetime_start
        return start is None or (datetime.now() - start).total_seconds() >= grace_s
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return mine and int(pid) == os.getpid()


def wait_for_history(study: Any, trial: FrozenTrial, lag: int) -> None:
    """Block until trials ``0 .. trial.number - lag`` have all finished. The trial names its worker
    first, so that a worker waiting on it in turn does not take it for a dead one."""
    if trial.user_attrs.get(WORKER_ATTR) != worker_id():  # (a resumed trial names its dead worker)
        study._storage.set_trial_user_attr(trial._trial_id, WORKER_ATTR, worker_id())
    limit = trial.number - lag
    while limit >= 0:
        pending = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING))
                   if t.number <= limit]
        if not pending:
            return
        for t in pending:
            if t.state == TrialState.RUNNING and owner_dead(t, GRACE_S, mine=False):
                raise StaleHistory(
                    f"trial {t.number} will not finish (its worker {t.user_attrs.get(WORKER_ATTR, '?')} died), "
                    f"and trial {trial.number} is drawn from it (sampler.history_lag {lag}): this sweep stops; "
                    "run `dse sweep` again to re-run it in place")
        time.sleep(POLL_S)


class LaggedView:
    """``study`` with only its trials numbered ``limit`` or less (which :func:`wait_for_history`
    has seen finish); everything else is the study's own."""

    def __init__(self, study: Any, limit: int) -> None:
        self._study, self._limit = study, limit

    def _get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None,
                    use_cache: bool = False) -> list[FrozenTrial]:
        trials = self._study._get_trials(deepcopy=deepcopy, states=states, use_cache=use_cache)
        return [t for t in trials if t.number <= self._limit]

    def get_trials(self, deepcopy: bool = True, states: Container[TrialState] | None = None) -> list[FrozenTrial]:
        return self._get_trials(deepcopy=deepcopy, states=states)

    @property
    def trials(self) -> list[FrozenTrial]:
        return self.get_trials()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._study, name)
