"""Running the distinct layer searches: in this process, or in worker processes, with a progress bar.

Workers are started by ``forkserver`` (``spawn`` where that does not exist), never ``fork``: the
parent may hold torch/onnxruntime thread pools (a zoo export), and a forked copy of those can hang.
The fork server preloads numpy, the cost model and the mappers, so each worker starts in
milliseconds, and workers never import torch. Each search is seeded by the caller and runs alone,
so its answer does not depend on which worker ran it or in what order.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.mapdb import SearchKey, Stored
from dse.processes import process_gone

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.problem import Problem
    from dse.mappers import Objective

_PRELOAD = ["numpy", "costmodel.evaluate", "dse.mappers", "dse.mappers.fast", "dse.mappers.exhaustive"]


@dataclass(frozen=True)
class Search:
    """One distinct (layer shape, config, objective, mapper options) search."""

    key: SearchKey
    problem: Problem
    objective: Objective
    mapper: str
    seed: int
    options: dict[str, Any] = field(default_factory=dict)
    layers: tuple[str, ...] = ()  # the workload layers it answers, for messages


def run_search(search: Search, arch: Architecture) -> Stored:
    """The mapper on one layer (a worker's job)."""
    from dse.mappers import map_layer

    res = map_layer(search.problem, arch, search.objective, mapper=search.mapper, seed=search.seed,
                    **search.options)
    return Stored(res.mapping.to_dict(), dict(res.metrics), int(res.mappings_evaluated), float(res.search_seconds))


def _context() -> mp.context.BaseContext:
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        return ctx
    return mp.get_context("spawn")


_POOL: tuple[int, ProcessPoolExecutor] | None = None


def _pool(workers: int) -> ProcessPoolExecutor:
    """One pool per process, kept between calls: a sweep maps several models per trial, and starting
    workers each time cost more than a small model's searches. The config travels with each task
    (a few kB of pickle), so one pool serves every config."""
    global _POOL
    if _POOL is not None and (_POOL[0] != workers or getattr(_POOL[1], "_broken", False)):
        _POOL[1].shutdown(wait=False, cancel_futures=True)
        _POOL = None
    if _POOL is None:
        _POOL = (workers, ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                                              initializer=_watch_parent, initargs=(os.getpid(),)))
    return _POOL[1]


def _watch_parent(parent: int, every_s: float = 1.0) -> None:
    """In each worker: exit once ``parent`` (the process that made the pool) is gone. Why: a `kill -9`
    of `dse map --workers 2`, or the OOM killer, reaches the parent only, and its idle workers
    (their parent is the forkserver) had stayed for good, some 400 MB each time."""
    def watch() -> None:
        while True:
            time.sleep(every_s)
            if process_gone(parent, foreign=True):  # (a zombie too: exited, its own parent not reaping it)
                os._exit(0)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def shutdown_pool() -> None:
    """Stop the kept worker processes (they also stop when this process exits)."""
    global _POOL
    if _POOL is not None:
        _POOL[1].shutdown(wait=True, cancel_futures=True)
        _POOL = None


def kill_workers() -> None:
    """SIGTERM to the kept workers, mid-search, for a process that is ending on a signal (a `kill` of
    it reaches none of them, unlike Ctrl-C). Takes no lock, so a signal handler may call it: it may
    have interrupted the pool's own ``submit``, which holds the pool's lock. The pool's manager
    thread then fails futures already cancelled (InvalidStateError, a Python 3.11 race of no
    consequence to a process that is ending): that is kept off the screen."""
    if _POOL is not None:
        threading.excepthook = lambda _args: None
        for proc in list(getattr(_POOL[1], "_processes", {}).values()):  # (the executor keeps no public list)
            with contextlib.suppress(OSError, ValueError, AttributeError):
                proc.terminate()


def drop_pool() -> None:
    """After :func:`kill_workers`, outside any signal handler: the pool let go without waiting."""
    global _POOL
    if _POOL is not None:
        _POOL[1].shutdown(wait=False, cancel_futures=True)
        _POOL = None


def default_workers() -> int:
    """The cores this process may use: its CPU affinity and its cgroup CPU quota. Why the quota: in
    a container limited to 4 CPUs on a 64-core host (``docker run --cpus 4``) the affinity and
    ``os.cpu_count()`` both say 64, and 64 workers would only multiply the memory. (dask, already a
    dependency, reads both; imported here, not at start-up, as it takes about 0.3 s.)"""
    from dask.system import cpu_count

    return max(1, cpu_count())


def worker_count(requested: int | None) -> int:
    """Processes to start for ``requested`` (None: one per core): at most one per core. More only
    multiply the memory (each worker holds numpy and the kernels), never the speed of CPU-bound
    work (`dse map --workers 10000` started a process per layer)."""
    cores = default_workers()
    return min(requested or cores, cores)


def _fail(search: Search, exc: UserError) -> UserError:
    """The search's error, prefixed with its layer names, unless it starts with them already (a
    search for one shape is named by its shape: the mapper's messages start with it too)."""
    names = ", ".join(search.layers[:3]) + (" ..." if len(search.layers) > 3 else "")
    text = str(exc)
    return UserError(f"layer {text}" if text.startswith(f"{names} ") else f"layer {names}: {text}")


def solve(searches: Sequence[Search], arch: Architecture, *, workers: int | None = None,
          progress: bool = True, on_done: Callable[[Search, Stored], None] | None = None) -> dict[str, Stored]:
    """Answers by ``search.key.digest``. Biggest layers first, so two workers finish together.
    When searches fail, the error raised is the first failing one's in that order, so the same
    inputs give the same message; with several workers that means waiting for the bigger searches
    before it (their answers are kept), not stopping at the first failure to arrive."""
    order = sorted(searches, key=lambda s: -s.problem.macs)
    out: dict[str, Stored] = {}
    if not order:
        return out
    with _bar(progress, len(order)) as advance:
        def done(s: Search, stored: Stored) -> None:
            out[s.key.digest] = stored
            if on_done is not None:
                on_done(s, stored)
            advance()

        workers = 1 if len(order) == 1 else worker_count(workers)  # (no core count for one search)
        if workers <= 1:
            for s in order:
                try:
                    done(s, run_search(s, arch))
                except UserError as exc:
                    raise _fail(s, exc) from None
            return out
        pool = _pool(workers)
        pending = {pool.submit(run_search, s, arch): i for i, s in enumerate(order)}
        failed: dict[int, UserError] = {}  # by position in ``order``
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = pending.pop(fut)
                    try:
                        done(order[i], fut.result())
                    except UserError as exc:
                        failed[i] = exc
                if failed:  # the error reported is the first failing search's in ``order``, whichever
                    # finished first: wait for the searches before it only
                    for fut in [f for f, i in pending.items() if i > min(failed)]:
                        fut.cancel()
                        del pending[fut]
        finally:
            for fut in pending:
                fut.cancel()
        if failed:
            first = min(failed)
            raise _fail(order[first], failed[first]) from None
    return out


class _bar:
    """A rich progress bar on stderr, only when stderr is a terminal and ``enabled``."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.total = total
        self._progress: Any = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("mapping layers"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self._progress.start()
        task = self._progress.add_task("map", total=self.total)
        return lambda: self._progress.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
