"""The ``dse`` command: a thin layer over :mod:`dse.api`, one module per command group.

A user's mistake (:class:`costmodel.errors.UserError`) becomes one line on stderr and exit status 2,
never a traceback. Modules import heavy packages (torch, onnx) inside their commands, so that
``dse --help`` starts fast.
"""

from __future__ import annotations

import sys

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

app = typer.Typer(
    name="dse",
    help="Design-space exploration, mapping and compilation for AR/VR deep-learning accelerators.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for _module in (zoo_cmd, inspect_cmd, evaluate_cmd, map_cmd, schema_cmd, study_cmd, compile_cmd, disasm_cmd, simulate_cmd):
    _module.register(app)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
