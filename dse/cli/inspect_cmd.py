"""`dse inspect MODEL.onnx|ZOO_NAME`: the per-layer table of a model."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from dse.cli.messages import user_warnings_as_lines

if TYPE_CHECKING:
    from compiler.frontend.workload import Workload


def register(app: typer.Typer) -> None:
    """Add the ``inspect`` command to the root app."""

    @app.command("inspect")
    def inspect(
        model: Annotated[str, typer.Argument(metavar="MODEL", help="An ONNX file, or a zoo model name (see `dse zoo list`).")],
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document (layers + totals).")] = False,
        allow_unsupported: Annotated[bool, typer.Option(
            "--allow-unsupported", help="Import unknown ops as zero-cost host layers instead of failing.")] = False,
    ) -> None:
        """Layers of a model: kind, op, loop dims, MACs, parameters, tensor shapes; and totals."""
        from dse.api import load_workload

        with user_warnings_as_lines():
            workload = load_workload(model, allow_unsupported=allow_unsupported)
        if as_json:
            sys.stdout.write(json.dumps(workload.to_dict(), indent=1) + "\n")
            return
        _print_table(workload)


def _shapes(shapes: tuple[tuple[int, ...], ...]) -> str:
    return " ".join("x".join(map(str, s)) for s in shapes)


def _print_table(workload: Workload) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 200, markup=False)  # (names as written)
    table = Table(title=f"{workload.name}  ({workload.source or 'zoo'})", show_lines=False)
    for col, justify in (("name", "left"), ("kind", "left"), ("op", "left"), ("dims", "left"),
                         ("MACs", "right"), ("params", "right"), ("in", "left"), ("out", "left")):
        table.add_column(col, justify=justify, overflow="fold")
    for layer in workload.layers():
        op = layer.op_type + "".join(f"+{p}" for p in layer.post_ops)
        table.add_row(layer.name, layer.kind, op, layer.dims, f"{layer.macs:,}", f"{layer.params:,}",
                      _shapes(layer.input_shapes), _shapes(layer.output_shapes))
    console.print(table)
    t = workload.totals()
    kinds = ", ".join(f"{n} {k}" for k, n in t["by_kind"].items() if n)
    console.print(f"total: {t['layers']} layers ({kinds}); MACs {t['macs']:,}; params {t['params']:,} "
                  f"(weights {t['weights']:,}, bias {t['bias']:,}); vector ops {t['vector_ops']:,}; "
                  f"activation traffic {t['activation_bytes']:,} bytes")
