"""Running a study on optuna: storage, trials, workers, and resuming after a kill.

Storage: by default an optuna journal file ``STUDY_DIR/study.journal`` (about 4 ms a trial, safe
for several local processes); ``storage=`` takes any optuna URL (``postgresql://...`` for workers on
several machines). The study file is copied to ``STUDY_DIR/study.yaml`` so that ``dse results`` and
``dse report`` need only the folder. A later sweep into the folder must be the same study in what
decides its trials (every field but ``trials``, ``output`` and ``mapper.workers``; comments and layout
do not count): a larger ``trials`` continues the study, a smaller one stops it where it is.

Resume: every trial records its worker (``host:pid``, :func:`dse.study.history.worker_id`). A
RUNNING trial whose worker on this host is dead (SIGKILL, power loss), or that names no worker once it is
a minute old (:func:`dse.study.history.stale_trials`), is re-run *in place* -- same
trial number, same parameters already drawn, the rest drawn by the number-keyed samplers of
:mod:`dse.study.samplers` -- before any new trial starts. So a resumed serial study has exactly the
trials, in the same order and with the same results, as an uninterrupted one, and no finished trial
is lost or repeated. Trials of live workers, or of other hosts, are left alone (a dead remote
worker's trial stays RUNNING; delete or fail it by hand). Several workers (``workers > 1``, or Dask
tasks) run the same trials as one: grid and random draw from the trial number alone, TPE and NSGA-II
from a history fixed by the number (``sampler.history_lag``, :mod:`dse.study.history`).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from costmodel.atomic import atomic_write_text, place_error
from costmodel.errors import UserError, causes
from costmodel.problem import as_int
from costmodel.yamlio import format_path
from dse.network.solve import worker_count
from dse.study.dask_run import dask_client, run_on_dask
from dse.study.design import MAPPING_DB, Layers, evaluate_design, load_layers
from dse.study.history import WORKER_ATTR, StaleHistory, stale_trials, worker_id
from dse.study.knobs import PathKey
from dse.study.samplers import make_sampler
from dse.study.schema import Study, StudySpec, load_study, read_spec
from dse.study.storage import JOURNAL, STORAGE_NOTE, open_storage, storage_file

if TYPE_CHECKING:
    import pandas as pd

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
STUDY_COPY = "study.yaml"
ROOT_NOTE = "root.txt"
INPUTS_NOTE = "inputs.json"
"""Digests of the files the trials depend on besides the study file (see :func:`input_digests`)."""


def input_files(out: Path, storage: str | None = None) -> list[Path]:
    """Every file a report of sweep folder ``out`` reads, which it must not replace: the folder's own
    files, the storage's file (``storage`` or the one the folder remembers), the hardware template
    and the workloads' ONNX models (the study's own resolved paths)."""
    from dse.study.results import TABLES

    files = [out / name for name in (STUDY_COPY, ROOT_NOTE, INPUTS_NOTE, STORAGE_NOTE, JOURNAL, *TABLES, MAPPING_DB,
                                     f"{MAPPING_DB}-wal", f"{MAPPING_DB}-shm")]  # (SQLite's journal files)
    stored = storage_file(out, storage)
    if stored is not None and stored not in files:  # (a database server has no file here; the
        files.append(stored)  # folder's own journal is listed already)
    try:
        study = load_study_dir(out)
    except UserError:  # no study here: the report says so itself
        return files
    models = [Path(study.model_path(w)) for w in study.spec.workloads if w.model and w.model.endswith(".onnx")]
    return [*files, study.hw_source, *models]


class Interrupted(BaseException):
    """SIGINT/SIGTERM during a sweep. Not an Exception (nor KeyboardInterrupt), so optuna does not mark
    the running trial FAIL: it stays RUNNING and the next ``dse sweep`` re-runs it in place."""


@contextmanager
def interruptible() -> Iterator[None]:
    def stop(signum: int, _frame: Any) -> None:
        solve = sys.modules.get("dse.network.solve")
        if solve is not None:  # a trial's search workers: `kill PID` does not reach them
            solve.kill_workers()
        raise Interrupted(signal.Signals(signum).name)

    main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    except Exception as exc:
        # a library's error raised while the interruption unwound it is the interruption: optuna's
        # _run_trial, stopped in its tell, raises UnboundLocalError from its `finally` (exit 1 and a
        # traceback, where Ctrl-C is 130 and the trial stays RUNNING)
        first = next((e for e in causes(exc) if isinstance(e, Interrupted)), None)
        if first is None:
            raise
        raise first from None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _suggest(trial: optuna.trial.Trial, study: Study) -> dict[str, Any]:
    values: dict[str, Any] = {}
    grid = study.spec.sampler.kind == "grid"
    for k in study.sampled_knobs:
        if grid or k.choices is not None:
            values[k.name] = trial.suggest_categorical(k.name, list(k.grid_values() if grid else k.choices))
        elif k.is_int:
            values[k.name] = trial.suggest_int(k.name, int(k.low), int(k.high), step=int(k.step or 1), log=k.log)
        else:
            values[k.name] = trial.suggest_float(k.name, float(k.low), float(k.high), step=k.step, log=k.log)
    return values


class Objective:
    """The optuna objective: one design per trial; all metrics go into the trial's user attrs.

    A design the cost model rejects (invalid config, a layer that fits no mapping) is PRUNED with
    the reason in ``invalid``; an unexpected exception FAILs the trial (optuna logs it) and the
    study goes on.
    """

    def __init__(self, study: Study, layers: Layers) -> None:
        self.study, self.layers = study, layers

    def __call__(self, trial: optuna.trial.Trial) -> list[float]:
        trial.set_user_attr(WORKER_ATTR, worker_id())
        sampled = _suggest(trial, self.study)
        same = self._earlier(trial, sampled)
        if same is not None:  # samplers revisit designs: reuse the result, it is deterministic
            trial.set_user_attr("same_as", same.number)
            attrs = same.user_attrs
            knobs, invalid = attrs.get("knobs", {}), attrs.get("invalid")
            metrics, violations = attrs.get("metrics", {}), attrs.get("violations", {})
        else:
            res = evaluate_design(self.study, self.layers, sampled)
            knobs, invalid, metrics, violations = res.values, res.invalid, res.metrics, res.violations
        trial.set_user_attr("knobs", knobs)
        if invalid is not None:
            trial.set_user_attr("invalid", invalid)
            raise optuna.TrialPruned(invalid)
        trial.set_user_attr("metrics", metrics)
        trial.set_user_attr("violations", violations)
        with warnings.catch_warnings():
            # A resumed trial (its worker died after setting them) already holds these constraints;
            # designs are deterministic, so the stored values are the same ones.
            warnings.filterwarnings("ignore", message="The constraint value is ignored")
            for key, v in violations.items():
                trial.set_constraint(key, v)
        return [metrics[o.metric] for o in self.study.spec.objectives]

    @staticmethod
    def _earlier(trial: optuna.trial.Trial, sampled: dict[str, Any]) -> optuna.trial.FrozenTrial | None:
        for t in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
            if t.params == sampled and "knobs" in t.user_attrs and "same_as" not in t.user_attrs:
                return t
        return None


def create(study: Study, storage: Any) -> optuna.Study:
    """Create or load the optuna study (quietly: progress is ours, per-trial logs are noise)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = study.spec
    sampler = make_sampler(spec.sampler.kind, study.sampled_knobs, spec.sampler.seed, spec.sampler.population,
                           spec.sampler.history_lag)
    return optuna.create_study(storage=storage, study_name=spec.name, sampler=sampler, load_if_exists=True,
                               directions=[o.direction for o in spec.objectives])


def _resume_stale(ost: optuna.Study, objective: Objective) -> int:
    """Re-run, in place, the RUNNING trials whose worker died; returns how many."""
    stale = stale_trials(ost)
    for ft in sorted(stale, key=lambda t: t.number):
        trial = optuna.trial.Trial(ost, ft._trial_id)
        try:
            values = objective(trial)
        except optuna.TrialPruned:
            ost.tell(trial, state=TrialState.PRUNED)
        except Exception:  # noqa: BLE001 -- as optimize(catch=Exception): the study goes on
            ost.tell(trial, state=TrialState.FAIL)
        else:
            ost.tell(trial, values)
    return len(stale)


def load_study_dir(out: str | Path) -> Study:
    """The study a sweep folder holds (its copy of the study file; relative paths as the original's)."""
    out = Path(out)
    copy = out / STUDY_COPY
    if not copy.exists():
        raise UserError(f"{out}: not a study folder (no {STUDY_COPY}; run `dse sweep STUDY.yaml` first)")
    root = (out / ROOT_NOTE).read_text().strip() if (out / ROOT_NOTE).exists() else None
    study = load_study(copy, root=root)
    study.output = out
    return study


def open_study(out: str | Path, storage: str | None = None) -> tuple[Study, optuna.Study]:
    """A sweep folder's study and its optuna study (storage: ``storage``, else the folder's own)."""
    study = load_study_dir(out)
    return study, create(study, open_storage(Path(out), storage))


def read_study(out: str | Path, storage: str | None = None) -> tuple[Study, optuna.Study]:
    """As :func:`open_study` for ``dse results`` / ``dse report``, which only read: the optuna study is
    loaded, never created (creating appends a record to the journal on every read)."""
    study = load_study_dir(out)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return study, optuna.load_study(study_name=study.spec.name,
                                        storage=open_storage(Path(out), storage, read_only=True))
    except KeyError:
        raise UserError(f"{out}: holds no trials of study {study.spec.name!r} yet (run `dse sweep` first)") from None


class _Enough:
    """Stop once finished + running trials reach the target. Sweeps on other machines sharing the
    storage count too; each checks before starting a trial, so the total can overshoot only when two
    independent sweeps finish a trial in the same instant (a ``--workers`` split is exact)."""

    def __init__(self, target: int) -> None:
        self.target = target

    def __call__(self, st: optuna.Study, _trial: Any) -> None:
        if len(st.get_trials(deepcopy=False, states=(*FINISHED, TrialState.RUNNING))) >= self.target:
            st.stop()


def _worker(out: str, url: str | None, n_trials: int, target: int, watch_parent: bool = True) -> int:
    """Run up to ``n_trials`` new trials of the study in folder ``out`` (a spawned process or a Dask
    task); returns how many this worker finished."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study, ost = open_study(out, url)
    parent = os.getppid()
    mine: list[int] = []

    def orphaned(st: optuna.Study, t: Any) -> None:  # the sweep was killed: stop after this trial
        mine.append(t.number)
        if watch_parent and os.getppid() != parent:
            st.stop()

    try:
        with interruptible():
            ost.optimize(Objective(study, load_layers(study)), n_trials=n_trials, catch=(Exception,),
                         callbacks=[orphaned, _Enough(target)])
    except Interrupted:
        pass
    except Exception as exc:
        stop = exc if isinstance(exc, StaleHistory) else _out_of_room(exc, Path(out), url)
        if stop is None:
            raise
        if not watch_parent:  # a Dask task: the error goes back to the client (SystemExit would kill
            raise stop from None  # the Dask worker and the other tasks it runs)
        print(f"error: {stop}", file=sys.stderr)  # a spawned process: one line, no traceback
        raise SystemExit(2) from None
    return len(mine)


def _out_of_room(exc: BaseException, out_dir: Path, url: str | None) -> UserError | None:
    """A sweep's write that failed for want of space (or on a read-only mount) as one line naming the
    file (the storage's, when the error does not say), or None for any other error. Why: optuna
    answers a journal write that fails so with its own ``AssertionError: Should not reach`` and a
    traceback; the trials finished before it are in the storage, and the same command resumes once
    there is room."""
    err = place_error(exc)
    if err is None:
        return None
    return UserError(f"{err.filename or storage_file(out_dir, url) or out_dir}: cannot write "
                     f"({err.strerror or err}); the trials that finished are kept: make room and run the same "
                     "command to resume")


@dataclass
class SweepResult:
    """A finished ``run_study``: ``resumed`` trials of dead workers re-run in place, ``ran`` new trials
    this sweep finished (not those of another sweep on the same storage at the same time)."""

    study: Study
    optuna_study: optuna.Study
    out: Path
    resumed: int
    ran: int

    def to_dataframe(self) -> pd.DataFrame:
        """The study's trials table (:func:`dse.study.results.trials_table`: one row per trial)."""
        from dse.study.results import trials_table

        return trials_table(self.study, self.optuna_study)


def _trial_fields(spec: StudySpec) -> dict[str, Any]:
    """What decides a study's trials: every field but the trial budget, the output folder and the
    mapper's worker count (parallelism only: the same results)."""
    return spec.model_dump(exclude={"trials": True, "output": True, "mapper": {"workers"}})


def _first_difference(a: Any, b: Any, at: PathKey = ()) -> PathKey | None:
    """The first field path where two parsed studies differ, or None. The order of mapping keys
    counts (the grid sampler walks the knobs in the file's order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in dict.fromkeys([*a, *b]):
            if key not in a or key not in b:
                return (*at, key)
            if (diff := _first_difference(a[key], b[key], (*at, key))) is not None:
                return diff
        return None if list(a) == list(b) else at
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        diffs = (_first_difference(x, y, (*at, i)) for i, (x, y) in enumerate(zip(a, b, strict=True)))
        return next((d for d in diffs if d is not None), None)
    return None if a == b else at


def input_digests(study: Study) -> list[tuple[tuple, str]]:
    """sha256 of what a study's trials read besides the study file, with the field that names it:
    the hardware template (its data, so a comment may change) and each workload's ONNX file."""
    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    out = [(("hardware",), digest(json.dumps(study.base_config, sort_keys=True, default=str).encode()))]
    for i, w in enumerate(study.spec.workloads):
        if w.model is not None and w.model.endswith(".onnx"):
            out.append((("workloads", i, "model"), digest(Path(study.model_path(w)).read_bytes())))
    return out


def changed_input(study: Study, out: Path) -> tuple | None:
    """The field whose file changed since the trials in folder ``out`` were run (as its
    :data:`INPUTS_NOTE` says), or None (unchanged, or a folder from before the note existed)."""
    note = out / INPUTS_NOTE
    if not note.exists():
        return None
    try:
        held = json.loads(note.read_text())
        if not isinstance(held, dict):
            raise TypeError("expected a JSON object")
    except (OSError, ValueError, TypeError) as exc:  # (UnicodeDecodeError, JSONDecodeError)
        raise UserError(f"{note}: cannot read the digests of the study's inputs ({str(exc)[:80]}); restore the "
                        "file, or delete it to take the inputs as they are now") from None
    return next((at for at, v in input_digests(study) if held.get(format_path(at), v) != v), None)


def _check_same_study(study: Study, out: Path) -> None:
    """A folder that holds another study's trials is refused, at the first field that differs, or the
    first input file whose content did (an edited hardware template had mixed two designs' results
    in one Pareto set)."""
    copy = out / STUDY_COPY
    if not copy.exists():
        return
    held, _ = read_spec(copy)
    diff = _first_difference(_trial_fields(held), _trial_fields(study.spec))
    if diff is not None:
        raise study.lines.error(diff, f"differs from the study whose trials {out} holds ({copy}); use "
                                "another output folder, or delete that one to start over")
    strict = next((c.at for c in study.constraints if c.op in ("<", ">")), None)
    if strict is not None and not (out / INPUTS_NOTE).exists():  # (a folder from before the note)
        raise study.lines.error(strict, f"the trials in {out} were judged before a strict comparison (< or >) failed "
                                "when both sides are equal (6 December 2026): resume in another output folder, so "
                                "that one Pareto set is not judged by two rules")
    if (at := changed_input(study, out)) is not None:
        raise study.lines.error(at, f"the file changed since the trials in {out} were run (its digest in "
                                f"{out / INPUTS_NOTE} differs); restore it, or use another output folder")


def _prepare_output(study: Study, out: Path, storage: str | None) -> None:
    """The folder's notes and its copy of the study file (the current text: comments or the trial
    budget may have changed); a place that cannot be written is a UserError. The copy comes last: a
    reader (`dse results` during a sweep) that finds it finds the notes it needs beside it."""
    atomic_write_text(out / ROOT_NOTE, str(study.root.resolve()) + "\n")
    atomic_write_text(out / INPUTS_NOTE, json.dumps({format_path(at): v for at, v in input_digests(study)},
                                                    indent=1) + "\n")
    if storage:
        atomic_write_text(out / STORAGE_NOTE, storage + "\n")
    atomic_write_text(out / STUDY_COPY, study.lines.text)  # the text that was parsed, not a re-read


def target_trials(study: Study, trials: int | None) -> int:
    """Finished trials wanted: ``trials`` or the file's, at most the grid's size for a grid study."""
    target = trials if trials is not None else study.spec.trials
    if study.spec.sampler.kind == "grid":
        from dse.study.samplers import GridSampler

        target = min(target, len(GridSampler(study.sampled_knobs, 0).points))
    return target


def run_study(path: str | Path, *, trials: int | None = None, workers: int = 1, storage: str | None = None,
              out: str | Path | None = None, progress: bool = False, dask: Any = None) -> SweepResult:
    """Run (or resume) a study until it has ``trials`` finished trials (default: the file's).
    ``dask``: a Dask scheduler address (or Client/cluster) to run the new trials on."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for name, value in (("trials", trials), ("workers", workers)):  # (the CLI's flags check their own)
        if value is not None and (as_int(value) is None or value < 1):
            raise UserError(f"{name}: expected a positive integer, got {value!r}")
    study = load_study(path)
    out_dir = Path(out) if out else study.output
    study.output = out_dir
    target = target_trials(study, trials)
    # before writing anything: a model that does not load, a folder holding another study, a bad
    # storage URL or (for a new folder) an unreachable Dask scheduler leaves no output behind
    _check_same_study(study, out_dir)
    layers = load_layers(study)
    with dask_client(dask if not out_dir.exists() else None) as client:
        return _sweep(study, out_dir, layers, target, storage, workers, progress, client or dask)


def _sweep(study: Study, out_dir: Path, layers: Layers, target: int, storage: str | None, workers: int,
           progress: bool, dask: Any) -> SweepResult:
    """:func:`run_study` once its inputs are checked: the new trials locally, in processes or as
    tasks on ``dask`` (an address, connected to only if trials are left, or a connected Client)."""
    st = open_storage(out_dir, storage)
    _prepare_output(study, out_dir, storage)
    ost = create(study, st)
    objective = Objective(study, layers)
    with interruptible():
        resumed = _resume_stale(ost, objective)
        states = [t.state for t in ost.get_trials(deepcopy=False)]
        left = target - sum(s in FINISHED for s in states) - states.count(TrialState.RUNNING)
        if dask is None:
            workers = worker_count(workers)  # (the trials and their results do not depend on it)
            if left > 0:
                warn_if_taking_turns(study, min(workers, left), "workers")
        bar = _Progress(ost, target) if progress else None
        ran = 0  # the trials this sweep finished (another one may run on the same storage meanwhile)
        try:
            if left <= 0:
                pass
            elif dask is not None:
                with dask_client(dask) as client:
                    ran = run_on_dask(client, study, out_dir, storage, left, target, workers, bar, ost)
            elif workers <= 1:
                done: list[int] = []
                ost.optimize(objective, n_trials=left, catch=(Exception,),
                             callbacks=[*([bar.update] if bar else []), _Enough(target),
                                        lambda _st, t: done.append(t.number)])
                ran = len(done)
            else:
                ran = _run_processes(out_dir, storage, left, target, workers, bar, ost)
        except Exception as exc:
            stop = _out_of_room(exc, out_dir, storage)
            if stop is None:
                raise
            raise stop from None
        finally:
            if bar:
                bar.close()
    return SweepResult(study, ost, out_dir, resumed, ran)


def warn_if_taking_turns(study: Study, runners: int, what: str) -> None:
    """TPE / NSGA-II trial n waits for trials up to n - history_lag: more runners than the lag take
    turns; say so before they run."""
    sampler = study.spec.sampler
    if sampler.kind in ("tpe", "nsga2") and runners > sampler.history_lag:
        warnings.warn(f"sampler {sampler.kind} with {runners} {what} and history_lag {sampler.history_lag}: at most "
                      f"{sampler.history_lag} trial(s) run at once (trial n is drawn from trials up to n - history_lag "
                      "and waits for them); raise sampler.history_lag in the study file to run more (the results "
                      "depend on it, never on the workers)", UserWarning, stacklevel=3)


def shares(left: int, workers: int) -> list[int]:
    """``left`` trials split as evenly as possible over ``workers`` (no empty shares)."""
    return [n for n in (left // workers + (i < left % workers) for i in range(workers)) if n]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # (a real-time signal has no name)
        return f"signal {number}"


def _stop(procs: list[Any], grace_s: float = 10.0) -> None:
    """Stop the workers as SIGTERM stops a sweep (their trials stay RUNNING, to be resumed); any that
    has not stopped after ``grace_s`` is killed. Without it they ran out their whole share after the
    sweep said it was interrupted, and multiprocessing's exit waited for them."""
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + grace_s
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()


def _run_processes(out_dir: Path, storage: str | None, left: int, target: int, workers: int,
                   bar: _Progress | None, ost: optuna.Study) -> int:
    """The new trials split over ``workers`` spawned processes on the same storage; returns how many
    they finished (the trials that name them as their worker)."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(str(out_dir), storage, n, target)) for n in shares(left, workers)]
    for p in procs:
        p.start()
    running = list(procs)
    try:
        while running:  # every child reaped as it ends (a zombie would pass for a live worker)
            wait([p.sentinel for p in running], timeout=0.5)
            running = [p for p in running if p.is_alive()]
            if bar:
                bar.update(ost, None)
    except BaseException:  # Interrupted: `kill PID` reaches this process only (Ctrl-C, the group)
        _stop(running)
        raise
    codes = [p.exitcode for p in procs]
    killed = [_signal_name(-c) for c in codes if c is not None and c < 0]
    if killed:  # (SIGKILL, the OOM killer): no bug of ours, and the trials it finished are kept
        raise UserError(f"a sweep worker was killed ({', '.join(killed)}); finished trials are kept: run the "
                        "same `dse sweep` to resume")
    if any(codes) and all(c in (0, 2) for c in codes):  # a worker stopped with a message (StaleHistory)
        raise UserError("a sweep worker stopped (its message is above); finished trials are kept")
    if any(codes):
        raise RuntimeError(f"a sweep worker failed (exit codes {codes})")
    ours = {f"{socket.gethostname()}:{p.pid}" for p in procs}
    return sum(t.state in FINISHED and t.user_attrs.get(WORKER_ATTR) in ours for t in ost.get_trials(deepcopy=False))


class _Progress:
    """A rich progress bar on stderr: trials done, feasible Pareto size, best of each objective."""

    def __init__(self, ost: optuna.Study, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 TextColumn("{task.description}"), console=Console(stderr=True))
        self.task = self.progress.add_task("", total=total)
        self.progress.start()
        self.update(ost, None)

    def update(self, ost: optuna.Study, _trial: Any) -> None:
        trials = ost.get_trials(deepcopy=False)
        done = sum(t.state in FINISHED for t in trials)
        try:
            front = ost.best_trials
        except (ValueError, RuntimeError):
            front = []
        best = ""
        if front:
            cols = list(zip(*(t.values for t in front), strict=True))
            best = " best " + ", ".join(f"{min(c) if d.name == 'MINIMIZE' else max(c):.4g}"
                                        for c, d in zip(cols, ost.directions, strict=True))
        designs = len({tuple(sorted(t.params.items())) for t in front})  # a revisited design counts once
        self.progress.update(self.task, completed=done, description=f"pareto {designs}{best}")

    def close(self) -> None:
        self.progress.stop()
