"""Shared helpers for the study tests: a tiny study file and a CLI app with the study commands."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml

REPO = Path(__file__).resolve().parents[2]

# Two small layers: 16x32x24 matmul (12,288 MACs) and a 3x3 conv 8->16 on 8x8 (6x6 out: 41,472 MACs).
LAYERS = [{"kind": "matmul", "m": 16, "k": 32, "n": 24},
          {"kind": "conv2d", "c_in": 8, "c_out": 16, "h": 8, "w": 8, "kernel": 3}]


def small_study(tmp: Path, *, sampler: str = "grid", trials: int = 12, name: str = "small", **extra) -> Path:
    """A 2 x 3 x 2 = 12-point study on the tiny config (rows, cols, buffer size; MACs derived)."""
    doc = {
        "name": name,
        "hardware": "tiny",
        "workloads": [{"name": "net", "fps": 1000, "layers": LAYERS,
                       "constraints": ["latency_ms <= 1000 / fps"]}],
        "knobs": {
            "rows": {"path": "levels.buffer.fanout.y", "choices": [2, 4]},
            "cols": {"path": "levels.buffer.fanout.x", "choices": [1, 2, 4]},
            "pes": {"path": "mac.count", "expr": "rows * cols"},
            "glb": {"path": "levels.buffer.capacity", "choices": [1, 4], "format": "{} KiB"},
        },
        "objectives": [{"metric": "energy_pj"}, {"metric": "latency_ms"}],
        "constraints": ["area_mm2 <= 1"],
        "sampler": {"kind": sampler, "seed": 3},
        "trials": trials,
        "mapper": {"max_evaluations": 200},
        "output": str(tmp / "out"),
    }
    doc.update(extra)
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def dse(*args: str | Path) -> tuple[int, str]:
    """``dse ARGS`` through the console script's ``main()`` in this process (a UserError is one line on
    stderr and exit 2; any other exception propagates and fails the test): (exit status, stderr)."""
    import contextlib
    import io
    import sys

    from dse.cli import main

    err, argv = io.StringIO(), sys.argv
    sys.argv = ["dse", *map(str, args)]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    return code, err.getvalue()


def pace_trials(pace: float) -> None:
    """Make every trial of this process last ``pace`` seconds more (results unchanged): the
    kill tests then find a trial RUNNING however fast trials get (a revisited design takes a
    millisecond, and a whole random sweep could otherwise end between two reads of the journal)."""
    import time

    from dse.study import runner

    call = runner.Objective.__call__

    def paced(self: runner.Objective, trial: object) -> list[float]:
        values = call(self, trial)
        time.sleep(pace)  # (after: the trial has named its worker, so a resume takes it for a killed one at once)
        return values

    runner.Objective.__call__ = paced


def paced_env(tmp: Path, pace: float) -> dict[str, str]:
    """An environment whose Python processes, the spawned sweep workers too, pace their trials (see
    ``pace_trials``): a ``sitecustomize`` on PYTHONPATH, which every interpreter imports at start."""
    import os

    folder = tmp / "paced"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(f"from tests.study.helpers import pace_trials\npace_trials({pace!r})\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(REPO)])}


def study_app() -> typer.Typer:
    """The study commands as a CLI app."""
    from dse.cli import study_cmd

    app = typer.Typer(pretty_exceptions_enable=False)
    study_cmd.register(app)
    return app
