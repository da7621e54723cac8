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
import sys
import time
from collections.abc import Container
from datetime import datetime
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from costmodel.errors import UserError
from dse.processes import process_gone

WORKER_ATTR = "worker"
GRACE_S = 60.0
"""A RUNNING trial that has not named its worker this long after a waiter (or a starting sweep) first
saw it was killed before it could (measured on this process's clock: another host's may be skewed;
a starting sweep also takes the trial's start time when that is older)."""
NOTE_EVERY_S = 300.0
"""While waiting, a line on stderr this often: a dead worker of another host cannot be detected."""


class StaleHistory(UserError):
    """A trial that another one is drawn from can never finish: its worker died (the situation, not
    a bug: the next sweep re-runs that trial in place)."""


def worker_id() -> str:
    """This process as a trial's ``worker`` attribute (``host:pid``)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_dead(trial: FrozenTrial, *, mine: bool = True) -> bool | None:
    """Whether the worker running ``trial`` is dead: True for a process of this host that has ended,
    False for a live one or one of another host (which cannot be checked), None when the trial
    names no worker (killed before it could, or just starting). ``mine``: what a trial of this very
    process counts as (dead when resuming: it runs none then; alive for a waiting sampler: another
    thread may run it)."""
    host, _, pid = str(trial.user_attrs.get(WORKER_ATTR, ":")).partition(":")
    if not host:
        return None
    if host != socket.gethostname():
        return False
    try:
        number = int(pid)
    except ValueError:
        return False
    return mine if number == os.getpid() else process_gone(number)


def stale_trials(study: Any) -> list[FrozenTrial]:
    """The RUNNING trials a starting sweep re-runs: those whose worker on this host died, and those
    that name no worker once they are :data:`GRACE_S` old. Why wait for the latter: a trial names its
    worker milliseconds after it is created, and a sweep of another machine on the same storage may
    be in those milliseconds; taken at once, its trial would run twice. Age is the trial's start time
    when that is older than the grace (a trial killed at its start, found later), else the time this
    process has seen it unnamed (another host's clock may be skewed)."""
    seen: dict[int, float] = {}  # trial number -> when first seen without a worker
    noted = False
    while True:
        now, wall = time.monotonic(), datetime.now()
        running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        young = [t for t in running if owner_dead(t) is None
                 and not (t.datetime_start and (wall - t.datetime_start).total_seconds() >= GRACE_S)
                 and now - seen.setdefault(t.number, now) < GRACE_S]
        if not young:
            return [t for t in running if owner_dead(t) is not False]
        if not noted:
            noted = True
            print(f"note: trial {young[0].number} names no worker yet: waiting up to {GRACE_S:.0f} s to tell a "
                  "trial another sweep is starting from one killed as it started", file=sys.stderr, flush=True)
        time.sleep(0.2)


def wait_for_history(study: Any, trial: FrozenTrial, lag: int) -> None:
    """Block until trials ``0 .. trial.number - lag`` have all finished. The trial names its worker
    first, so that a worker waiting on it in turn does not take it for a dead one. A trial of a dead
    worker of this host is a :class:`StaleHistory`; for one of another host (or a reused pid) only a
    note on stderr every few minutes says what it waits for."""
    if trial.user_attrs.get(WORKER_ATTR) != worker_id():  # (a resumed trial names its dead worker)
        study._storage.set_trial_user_attr(trial._trial_id, WORKER_ATTR, worker_id())
    limit = trial.number - lag
    unnamed: dict[int, float] = {}  # trial number -> when first seen without a worker
    started = last_note = time.monotonic()
    delay = 0.05
    while limit >= 0:
        pending = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING))
                   if t.number <= limit]
        if not pending:
            return
        now = time.monotonic()
        for t in pending:
            if t.state != TrialState.RUNNING:
                continue
            dead = owner_dead(t, mine=False)
            if dead is None:
                dead = now - unnamed.setdefault(t.number, now) >= GRACE_S
            if dead:
                raise StaleHistory(
                    f"trial {t.number} will not finish (its worker {t.user_attrs.get(WORKER_ATTR, '?')} died), "
                    f"and trial {trial.number} is drawn from it (sampler.history_lag {lag}): this worker stops; "
                    "run `dse sweep` again to re-run both in place")
        if now - last_note >= NOTE_EVERY_S:
            last_note = now
            first = pending[0]
            print(f"note: trial {trial.number} has waited {(now - started) / 60:.0f} min for trial {first.number} "
                  f"(worker {first.user_attrs.get(WORKER_ATTR, '?')}; sampler.history_lag {lag}); if that worker "
                  "is gone, mark the trial failed (docs/studies.md, Resume)", file=sys.stderr, flush=True)
        time.sleep(delay)
        delay = min(2.0, delay * 1.5)  # (each poll reads every trial: a database is asked less often)


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
