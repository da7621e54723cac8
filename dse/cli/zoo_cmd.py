"""`dse zoo list|export`: the built-in AR/VR model zoo.

``list`` reads the catalogue only (no torch import); ``export`` builds the model and writes ONNX.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from dse.cli.params import PlainTypes, path_option


def _list(as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False) -> None:
    """The zoo's models: task, input shape, default frame rate, source architecture."""
    from dse import workloads

    models = [workloads.info(n) for n in workloads.names()]
    if as_json:
        print(json.dumps([asdict(m) | {"inputs": {k: list(v) for k, v in m.inputs.items()}} for m in models],
                         indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="accel-dse model zoo")
    for column in ("name", "task", "input", "fps", "source"):
        table.add_column(column, overflow="fold")
    for m in models:
        table.add_row(m.name, m.task, m.input_summary, f"{m.fps:g}", m.short_source)
    Console(markup=False).print(table)


def _export(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Zoo model name (see `dse zoo list`).")],
    output: Annotated[Path, path_option("-o", "--output", file=True, help="ONNX file to write.")],
    legacy: Annotated[bool, typer.Option("--legacy", help="Use torch's TorchScript exporter (faster).")] = False,
) -> None:
    """Export a zoo model to ONNX (seeded random weights, opset 20)."""
    from costmodel.atomic import check_writable
    from dse import workloads

    workloads.info(name)   # unknown name -> UserError listing the names, before torch loads
    check_writable(output)  # likewise an output that cannot be written
    path = workloads.export(name, output, dynamo=not legacy)
    typer.echo(f"wrote {path}", err=True)


def register(app: typer.Typer) -> None:
    """Add the ``zoo`` command group to the root app."""
    zoo = typer.Typer(help="The built-in model zoo (plain torch.nn models, seeded weights).", no_args_is_help=True,
                      cls=PlainTypes)
    zoo.command("list")(_list)
    zoo.command("export")(_export)
    app.add_typer(zoo, name="zoo")
