"""``dse sweep --dask ADDRESS``: the new trials of a sweep as tasks on an existing Dask cluster.

Each task is one sweep worker (:func:`dse.study.runner._worker`) running a share of the trials on
the study's own storage, so Dask only schedules: the trials, their samplers (TPE and NSGA-II drawing
from a history fixed by the trial number, :mod:`dse.study.history`) and the resume logic are the
same as for local ``--workers``, and so are the results. The workers must see the study folder at
the same path (a shared file system: it holds the study file copy and the mapping database, and the
journal unless ``--storage`` names a database). Tasks: ``--workers N`` if given, else one per Dask
worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError

if TYPE_CHECKING:
    import optuna

    from dse.study.runner import _Progress
    from dse.study.schema import Study


@contextmanager
def dask_client(address: Any) -> Iterator[Any]:
    """A Client for ``address`` (a scheduler address, a cluster, or a Client; None: no Dask, yields
    None), closed on exit if made here. A new sweep enters it before it writes anything, so that a
    scheduler that cannot be reached leaves no output folder behind (as a bad ``--storage``); a
    resumed one only when trials are left to run."""
    if address is None:
        yield None
        return
    from distributed import Client

    if isinstance(address, Client):
        yield address
        return
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise UserError(f"dask {address}: cannot connect to a Dask scheduler ({exc})") from None
    try:
        yield client
    finally:
        client.close()


def run_on_dask(client: Any, study: Study, out_dir: Path, storage: str | None, left: int, target: int,
                workers: int, bar: _Progress | None, ost: optuna.Study) -> int:
    """Submit ``left`` trials in shares; wait (updating the progress bar); returns trials finished."""
    from dse.study.runner import _worker, shares, warn_if_taking_turns

    tasks = workers if workers > 1 else max(sum(client.nthreads().values()), 1)
    warn_if_taking_turns(study, min(tasks, left), "Dask tasks")
    futures = [client.submit(_worker, str(out_dir.resolve()), storage, n, target, False, pure=False)
               for n in shares(left, tasks)]
    while not all(f.done() for f in futures):
        time.sleep(0.5)
        if bar:
            bar.update(ost, None)
    return sum(client.gather(futures))  # re-raises a task's exception
