"""The ``dse`` command: a thin layer over :mod:`dse.api`, one module per command group.

A user's mistake (:class:`costmodel.errors.UserError`) becomes one line on stderr and exit status 2,
never a traceback. Modules import heavy packages (torch, onnx) inside their commands, so that
``dse --help`` starts fast.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import typer

from costmodel.errors import UserError
from dse.cli import (
    compile_cmd,
    disasm_cmd,
    evaluate_cmd,
    inspect_cmd,
    map_cmd,
    schema_cmd,
    simulate_cmd,
    study_cmd,
    zoo_cmd,
)
from dse.cli.params import PlainTypes

app = typer.Typer(
    name="dse",
    help="Design-space exploration, mapping and compilation for AR/VR deep-learning accelerators.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=PlainTypes,
)

for _module in (zoo_cmd, inspect_cmd, evaluate_cmd, map_cmd, schema_cmd, study_cmd, compile_cmd, disasm_cmd, simulate_cmd):
    _module.register(app)


_SIGNALLED: list[int] = []


def _on_signal(signum: int, _frame: Any) -> None:
    """SIGTERM (``kill PID``) taken like Ctrl-C: the same cleanup runs (temp files and folders
    removed, the mapping database closed) instead of the process vanishing mid-write; and the
    search workers, which a `kill` of this process does not reach, are stopped. Both are noted, so
    the exit says which one stopped the command (typer exits 130 in silence)."""
    _SIGNALLED.append(signum)
    _kill_workers()
    raise KeyboardInterrupt


def _kill_workers() -> None:
    solve = sys.modules.get("dse.network.solve")
    if solve is not None:
        solve.kill_workers()


_STOPPED = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "terminated (SIGTERM)"}


def main() -> None:
    """Console-script entry point."""
    _SIGNALLED.clear()
    # (`dse sweep` sets its own handlers while it runs, and says itself how it stopped)
    previous = {s: signal.signal(s, _on_signal) for s in _STOPPED}
    try:
        app()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except SystemExit:
        if _SIGNALLED:  # (typer turns the KeyboardInterrupt into exit 130, Ctrl-C's status)
            _kill_workers()  # (and those started since the signal)
            solve = sys.modules.get("dse.network.solve")
            if solve is not None:
                solve.drop_pool()
            signum = _SIGNALLED[0]
            print(f"{_STOPPED[signum]}; finished work is kept, nothing half-written", file=sys.stderr)
            sys.exit(128 + signum)
        raise
    finally:  # the work is done: a signal during the exit's own cleanup is the caller's again
        for signum, handler in previous.items():
            signal.signal(signum, handler)
