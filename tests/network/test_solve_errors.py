"""Which error `solve` reports when several searches fail in parallel: the first failing one in its
own (biggest-first) order, whichever finishes first, so the same inputs give the same message."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.problem import conv2d
from dse.mapdb import SearchKey
from dse.network import solve as solve_mod
from dse.network.solve import Search, Stored, solve


def _search(name: str, channels: int) -> Search:
    key = SearchKey(name, "cfg", "{}", "{}")
    return Search(key, conv2d(channels, channels, 8, 8, kernel=3, padding=1), None, "fast", 0,  # type: ignore[arg-type]
                  layers=(name,))


def test_the_first_failing_search_in_order_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The biggest layer fails last (after the smaller ones have failed or finished): its error is
    the one raised, not the first to arrive."""

    def fake_run(search: Search, arch: object) -> Stored:
        if search.layers == ("big",):
            time.sleep(0.3)
            raise UserError("big: no mapping")
        if search.layers == ("small",):
            raise UserError("small: no mapping")
        return Stored({}, {}, 1, 0.0)

    pool = ThreadPoolExecutor(2)
    monkeypatch.setattr(solve_mod, "_pool", lambda workers: pool)
    monkeypatch.setattr(solve_mod, "run_search", fake_run)
    searches = [_search("small", 4), _search("mid", 8), _search("big", 16)]
    try:
        with pytest.raises(UserError, match=r"^layer big: big: no mapping$"):
            solve(searches, load_architecture("tiny"), workers=2, progress=False)
    finally:
        pool.shutdown(wait=True)


def test_a_message_that_starts_with_the_layer_names_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search for one shape is named by the shape, as the mapper's messages start: the layer was
    named twice (`layer matmul B1 M64 N48 K32: matmul B1 M64 N48 K32 has no valid mapping ...`)."""
    prob = conv2d(4, 4, 8, 8, kernel=3, padding=1)
    name = prob.describe()

    def fake_run(search: Search, arch: object) -> Stored:
        raise UserError(f"{search.layers[0]} has no valid mapping on tiny")

    monkeypatch.setattr(solve_mod, "run_search", fake_run)
    search = Search(SearchKey(name, "cfg", "{}", "{}"), prob, None, "fast", 0, layers=(name,))  # type: ignore[arg-type]
    with pytest.raises(UserError) as err:
        solve([search], load_architecture("tiny"), workers=1, progress=False)
    assert str(err.value) == f"layer {name} has no valid mapping on tiny"


@pytest.mark.parametrize("zombie", [False, True])
def test_a_worker_exits_when_the_process_that_made_its_pool_is_gone(zombie: bool) -> None:
    """`kill -9` of `dse map --workers 2` (or the OOM killer) reaches the parent only: its workers,
    children of the forkserver, had stayed idle for good (about 400 MB each time). Gone includes a
    zombie: the parent killed but not reaped by its own parent (a caller that never waits)."""
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    code = f"import sys, time; from dse.network.solve import _watch_parent; _watch_parent({parent.pid}, 0.1); " \
           "time.sleep(60); sys.exit(3)"
    worker = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(1.0)
        assert worker.poll() is None  # (the parent lives: the worker stays)
        parent.kill()
        if zombie:
            assert _state(parent.pid) == "Z"  # (killed, not yet reaped: it still answers signal 0)
        else:
            parent.wait()
        assert worker.wait(timeout=10) == 0
    finally:
        parent.kill()
        parent.wait()
        worker.kill()


def _state(pid: int) -> str:
    """A process's state letter (Linux /proc), waiting up to 10 s for it to leave R / S."""
    deadline = time.monotonic() + 10
    while True:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0].decode()
        if state not in "RS" or time.monotonic() > deadline:
            return state
        time.sleep(0.05)
