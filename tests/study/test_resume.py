"""A sweep killed with SIGKILL in the middle of a trial resumes: exactly N finished trials, none
repeated, and the same trials and results as an uninterrupted run with the same seed."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from dse.study.runner import open_study, run_study
from tests.study.helpers import REPO, paced_env, small_study

N = 14  # TPE: 10 random start-up trials, then 4 that depend on the history


def _states(out: Path) -> list[optuna.trial.FrozenTrial]:
    return open_study(out)[1].get_trials()


def _ready(out: Path) -> bool:
    """The sweep folder can be read: the journal is opened before the study's copy is written (a bad
    storage leaves no folder behind), so the copy's presence says the folder is ready."""
    return (out / "study.journal").exists() and (out / "study.yaml").exists()


def _signature(trials: list[optuna.trial.FrozenTrial]) -> list[tuple]:
    return [(t.number, t.state.name, tuple(sorted(t.params.items())), tuple(t.values or ())) for t in trials]


def _paced_sweep(tmp: Path, args: list[str], stderr: int, *, two_workers: bool = False) -> subprocess.Popen:
    """`dse sweep ARGS --no-progress` in a subprocess, each trial paced to last at least 0.3 s (a
    revisited design otherwise takes a millisecond, and a whole random sweep could end between two
    reads of the journal: CI saw it, and 38 of 40 trials of two workers); ``two_workers``: the
    default worker count 2 on any machine."""
    patch = "from dse.network import solve; solve.default_workers = lambda: 2; " if two_workers else ""
    code = (f"import sys; {patch}from tests.study.helpers import study_app; "
            "study_app()(['sweep', *sys.argv[1:], '--no-progress'])")
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=REPO, env=paced_env(tmp, 0.3),
                            stdout=subprocess.DEVNULL, stderr=stderr, text=True)


def _kill_mid_trial(path: Path, out: Path, sig: signal.Signals) -> int | None:
    """Runs ``dse sweep`` on ``path`` (paced: see _paced_sweep) and sends ``sig`` while a trial is
    RUNNING, after two have finished. Returns the exit status, or None when the signal missed a trial."""
    proc = _paced_sweep(path.parent, [str(path)], subprocess.PIPE)
    deadline = time.monotonic() + 60
    sent = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            if not _ready(out):
                continue
            trials = _states(out)
            done = sum(t.state.name == "COMPLETE" for t in trials)
            # early, so that many trials are left: with faster trials, a kill after half of them
            # could land after the sweep had run out the study while this process read the journal
            if done >= 2 and any(t.state.name == "RUNNING" for t in trials):
                os.kill(proc.pid, sig)
                sent = True
                break
        code = proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert sent, "the sweep ended before it could be killed mid-trial"
    return code if [t.state.name for t in _states(out)].count("RUNNING") == 1 else None


@pytest.mark.parametrize(("sampler", "sig"), [("tpe", signal.SIGKILL), ("random", signal.SIGKILL),
                                              ("random", signal.SIGINT)])
def test_kill_mid_trial_then_resume(tmp_path: Path, sampler: str, sig: signal.Signals) -> None:
    """SIGKILL, or Ctrl-C (SIGINT: `dse sweep` exits 130 and leaves the trial RUNNING, not FAIL)."""
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref = run_study(small_study(ref_dir, sampler=sampler, trials=N))
    for attempt in range(5):  # until the signal lands inside a trial (see _kill_mid_trial)
        run_dir = tmp_path / f"run{attempt}"
        run_dir.mkdir()
        path = small_study(run_dir, sampler=sampler, trials=N)
        out = run_dir / "out"
        code = _kill_mid_trial(path, out, sig)
        if code is not None:
            break
    assert code is not None, "five signals in a row landed between trials"
    assert code == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    before = _states(out)
    finished_before = {t.number: t for t in before if t.state.name == "COMPLETE"}

    res = run_study(path)
    after = res.optuna_study.get_trials()
    assert res.resumed == 1
    assert len(after) == N and all(t.state.name == "COMPLETE" for t in after)
    assert [t.number for t in after] == list(range(N))
    for n, t in finished_before.items():  # nothing finished was re-run
        assert after[n].datetime_complete == t.datetime_complete
    assert _signature(after) == _signature(ref.optuna_study.get_trials())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _two_worker_sweep(path: Path, stderr: int) -> subprocess.Popen:
    """`dse sweep PATH --workers 2`, paced, with two workers on any machine."""
    return _paced_sweep(path.parent, [str(path), "--workers", "2"], stderr, two_workers=True)


def _signal_after_two_trials(proc: subprocess.Popen, out: Path, sig: signal.Signals, deadline: float) -> None:
    """Send ``sig`` to the sweep once two of its trials have finished (or give up at ``deadline``)."""
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        if _ready(out) and sum(t.state.name == "COMPLETE" for t in _states(out)) >= 2:
            os.kill(proc.pid, sig)
            return


def test_sigkill_parent_of_two_workers(tmp_path: Path) -> None:
    """Killing `dse sweep --workers 2` leaves its workers orphaned: they finish their current trial and
    stop; a rerun then completes exactly N trials, each once. N is large against the two trials
    after which the parent is killed, so that the workers cannot run out the study while this
    process polls the journal on a busy machine (with 10, a loaded machine once let them finish)."""
    n = 30
    path = small_study(tmp_path, sampler="random", trials=n, mapper={"max_evaluations": 1500})
    out = tmp_path / "out"
    proc = _two_worker_sweep(path, subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        _signal_after_two_trials(proc, out, signal.SIGKILL, deadline)
    finally:
        proc.kill()
        proc.wait()
    pids = {int(t.user_attrs["worker"].rpartition(":")[2]) for t in _states(out) if "worker" in t.user_attrs}
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "orphaned workers did not stop"
    assert len(_states(out)) < n  # they stopped early instead of running all their share
    res = run_study(path)
    trials = res.optuna_study.get_trials()
    assert [t.number for t in trials] == list(range(n))
    assert all(t.state.name == "COMPLETE" for t in trials)


def test_sigterm_stops_two_workers(tmp_path: Path) -> None:
    """`kill PID` (SIGTERM) reaches the parent of `dse sweep --workers 2` only: it stops its workers
    (their trials stay RUNNING) and exits 130 at once, not after they have run out their shares;
    a rerun then completes exactly N trials, each once."""
    n = 40
    path = small_study(tmp_path, sampler="random", trials=n, mapper={"max_evaluations": 1500})
    out = tmp_path / "out"
    proc = _two_worker_sweep(path, subprocess.PIPE)
    try:
        _signal_after_two_trials(proc, out, signal.SIGTERM, time.monotonic() + 60)
        err = proc.communicate(timeout=30)[1]  # (the workers get 10 s to stop, then are killed)
        status = proc.returncode
    finally:
        proc.kill()
        proc.wait()
    assert status == 130, err
    assert "interrupted (SIGTERM)" in err
    pids = {int(t.user_attrs["worker"].rpartition(":")[2]) for t in _states(out) if "worker" in t.user_attrs}
    assert pids and not any(_alive(p) for p in pids), "the workers outlived the sweep"
    assert sum(t.state.name == "COMPLETE" for t in _states(out)) < n / 2  # (they ran all 40 before)
    res = run_study(path)
    trials = res.optuna_study.get_trials()
    assert [t.number for t in trials] == list(range(n))
    assert all(t.state.name == "COMPLETE" for t in trials)


def test_two_sweeps_at_once_count_their_own_new_trials(tmp_path: Path) -> None:
    """Two `dse sweep` processes on one folder (as on two machines sharing a storage): the "K new" of
    their summaries add up to the trials they ran (each had counted the trials left when it
    started, so both said N - 1 new)."""
    n = 10
    path = small_study(tmp_path, sampler="random", trials=1)
    run_study(path)  # (the folder exists: neither sweep creates it)
    procs = [_paced_sweep(tmp_path, [str(path), "--trials", str(n)], subprocess.PIPE) for _ in range(2)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    new = [int(re.search(r"\((\d+) new, ", e).group(1)) for e in errs]
    trials = _states(tmp_path / "out")  # (n, or one more if both started a trial as the n-th finished)
    assert len(trials) >= n and all(t.state.name == "COMPLETE" for t in trials)
    assert sum(new) == len(trials) - 1, errs


def _kept(before: list[optuna.trial.FrozenTrial], after: list[optuna.trial.FrozenTrial]) -> bool:
    """The same finished trials, not run again (same completion times)."""
    return _signature(before) == _signature(after) and all(
        a.datetime_complete == b.datetime_complete for a, b in zip(before, after, strict=True))


def test_edits_that_keep_the_trials_resume(tmp_path: Path) -> None:
    """A comment, a larger trial budget (the study goes on) or a smaller one (it stops where it is)
    reuse the folder's finished trials; a change to what the trials depend on is refused at the first
    field that differs, with the folder left as it was."""
    import yaml

    from costmodel.errors import UserError
    from tests.study.helpers import dse

    path = small_study(tmp_path, sampler="random", trials=4)
    first = run_study(path).optuna_study.get_trials()
    path.write_text("# tuned by hand\n" + path.read_text().replace("trials: 4", "trials: 4  # for now"))
    res = run_study(path)
    assert res.ran == 0 and _kept(first, res.optuna_study.get_trials())
    path.write_text(path.read_text().replace("trials: 4", "trials: 6"))
    res = run_study(path)
    after = res.optuna_study.get_trials()
    assert res.ran == 2 and len(after) == 6 and _kept(first, after[:4])
    path.write_text(path.read_text().replace("trials: 6", "trials: 3"))
    res = run_study(path)
    assert res.ran == 0 and _kept(after, res.optuna_study.get_trials())
    # the mapper's worker count is parallelism only: the same trials
    path.write_text(path.read_text().replace("max_evaluations: 200", "max_evaluations: 200\n  workers: 2"))
    res = run_study(path)
    assert res.ran == 0 and _kept(after, res.optuna_study.get_trials())
    assert (tmp_path / "out" / "study.yaml").read_text() == path.read_text()

    copy = (tmp_path / "out" / "study.yaml").read_text()
    path.write_text(copy.replace("seed: 3", "seed: 4"))
    with pytest.raises(UserError, match=r"small\.yaml:\d+: sampler\.seed: differs from the study whose trials"):
        run_study(path)
    doc = yaml.safe_load(copy)
    doc["knobs"] = dict(reversed(doc["knobs"].items()))  # the grid walks the knobs in this order
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = dse("sweep", path, "--no-progress")
    assert code == 2 and err.count("\n") == 1 and re.search(r"small\.yaml:\d+: knobs: differs from", err), err
    assert (tmp_path / "out" / "study.yaml").read_text() == copy


def test_an_edited_hardware_template_is_refused_on_resume(tmp_path: Path) -> None:
    """Trials of one template and of an edited one had mixed in one Pareto set; a comment may change.
    The report of a folder whose template changed since says that its breakdowns are of the file as
    it is now."""
    import shutil
    import warnings

    from costmodel.arch import HWCONFIGS
    from costmodel.errors import UserError
    from dse.report import write_report

    hw = tmp_path / "hw.yaml"
    shutil.copy(HWCONFIGS / "tiny.yaml", hw)
    path = small_study(tmp_path, sampler="random", trials=2, hardware="hw.yaml")
    first = run_study(path).optuna_study.get_trials()
    hw.write_text("# a comment\n" + hw.read_text())
    res = run_study(path)
    assert res.ran == 0 and _kept(first, res.optuna_study.get_trials())
    hw.write_text(hw.read_text().replace("node_nm: 45", "node_nm: 28"))
    path.write_text(path.read_text().replace("trials: 2", "trials: 4"))
    with pytest.raises(UserError, match=r"small\.yaml:2: hardware: the file changed since the trials in .* were run"):
        run_study(path)
    assert len(_states(tmp_path / "out")) == 2
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        write_report(tmp_path / "out", tmp_path / "r.html")
    assert any("hardware: the file changed since the trials were run" in str(w.message) for w in seen)


def test_old_folders_with_strict_constraints_and_damaged_digests_are_refused(tmp_path: Path) -> None:
    """A folder from before inputs.json judged `rows < 4` at rows = 4 as met: resuming it would put
    two rules in one Pareto set. A damaged inputs.json is one line, not a traceback."""
    from costmodel.errors import UserError

    path = small_study(tmp_path, sampler="random", trials=2, constraints=["area_mm2 <= 1", "rows < 4"])
    run_study(path)
    note = tmp_path / "out" / "inputs.json"
    note.write_text('{"hardware": ')
    with pytest.raises(UserError, match=r"inputs\.json: cannot read the digests of the study's inputs"):
        run_study(path)
    note.unlink()  # (as a folder made before the note existed)
    with pytest.raises(UserError, match=r"small\.yaml:\d+: constraints\[1\]: the trials in .* were judged before a "
                                        r"strict comparison"):
        run_study(path)
    path.write_text(path.read_text().replace("rows < 4", "rows <= 3"))  # (a changed study, refused as such)
    with pytest.raises(UserError, match="differs from the study whose trials"):
        run_study(path)


@pytest.mark.parametrize("damage", [b"garbage{\n", b"[1, 2]\n", b"\xff\xfe\n", b"{\"op_code\": 5\n"])
@pytest.mark.parametrize("where", ["end", "middle"])
def test_a_damaged_journal_line_is_refused_before_anything_is_written(tmp_path: Path, damage: bytes,
                                                                      where: str) -> None:
    """A complete line that is not a journal record (optuna skips one at the end, then a resumed
    sweep appends behind it, and the next read fails on it with a traceback) is an error naming the
    file and line, from the sweep and from the readers; the journal is left as it was."""
    from tests.study.helpers import dse

    path = small_study(tmp_path, sampler="random", trials=2)
    run_study(path)
    journal = tmp_path / "out" / "study.journal"
    lines = journal.read_bytes().splitlines(keepends=True)
    at = len(lines) if where == "end" else 3
    journal.write_bytes(b"".join(lines[:at]) + damage + b"".join(lines[at:]))
    before = journal.read_bytes()
    path.write_text(path.read_text().replace("trials: 2", "trials: 3"))
    for args in (("sweep", path, "--no-progress"), ("results", tmp_path / "out")):
        code, err = dse(*args)
        assert code == 2 and err.count("\n") == 1, err
        assert f"study.journal: line {at + 1}: not a study journal record" in err, err
        assert f"keep only its first {at} lines" in err, err
    assert journal.read_bytes() == before
    if where == "middle" and damage == b"garbage{\n":  # the advice works: the sweep resumes from there
        journal.write_bytes(b"".join(lines[:at]))
        assert dse("sweep", path, "--no-progress")[0] == 0
        trials = open_study(tmp_path / "out")[1].get_trials()
        assert [t.state.name for t in trials] == ["COMPLETE"] * 3


def test_a_full_disk_stops_the_sweep_in_one_line_and_the_same_command_resumes(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal's disk fills up after a few trials. optuna answered with its own
    ``AssertionError: Should not reach`` and a traceback; now ``dse sweep`` says what failed in one
    line (exit 2). Once there is room, the same command runs the study to the end and keeps every
    trial that had finished."""
    import errno

    from optuna.storages.journal import JournalFileBackend

    from tests.study.helpers import dse

    path = small_study(tmp_path, sampler="random", trials=8)
    append, calls = JournalFileBackend.append_logs, []

    def full_after_20(self: JournalFileBackend, logs: list) -> None:
        calls.append(1)
        if len(calls) > 20:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        append(self, logs)

    monkeypatch.setattr(JournalFileBackend, "append_logs", full_after_20)
    code, err = dse("sweep", path, "--no-progress")
    out = tmp_path / "out"
    assert code == 2 and err.count("\n") == 1, err
    assert f"{out / 'study.journal'}: cannot write (No space left on device)" in err and "resume" in err, err
    monkeypatch.setattr(JournalFileBackend, "append_logs", append)
    before = [t for t in _states(out) if t.state.name == "COMPLETE"]
    assert 0 < len(before) < 8
    code, err = dse("sweep", path, "--no-progress")
    after = [t for t in _states(out) if t.state.name == "COMPLETE"]
    assert code == 0 and len(after) == 8, err
    assert _signature(before) == _signature(after[:len(before)])
