"""The zoo as a markdown table with measured MACs and parameters (the source of docs/zoo.md).

``python -m dse.workloads.table [--legacy] [--update docs/zoo.md]`` loads every model through the
ONNX front end (so the numbers are those of the imported workload graph, which the tests check
against forward hooks) and prints the table, or replaces the block between the ``BEGIN``/``END``
markers of a markdown file (atomically).
"""

from __future__ import annotations

from pathlib import Path

from costmodel.atomic import atomic_write_text
from dse import workloads

HEADER = ("| model | task | input | fps | MACs | params | MAC layers | source | simplifications |\n"
          "|---|---|---|---|---:|---:|---:|---|---|")


def row(name: str, dynamo: bool = True) -> str:
    meta = workloads.info(name)
    workload = workloads.load(name, dynamo=dynamo)
    cells = (f"`{name}`", meta.task, meta.input_summary, f"{meta.fps:g}", f"{workload.total_macs:,}",
             f"{workload.total_params:,}", str(len(workload.mac_layers())), meta.short_source,
             meta.simplified)
    return "| " + " | ".join(cells) + " |"


def markdown(dynamo: bool = True) -> str:
    return "\n".join([HEADER, *(row(n, dynamo) for n in workloads.names())])


BEGIN, END = "<!-- zoo-table:begin -->", "<!-- zoo-table:end -->"


def update(path: Path, table: str) -> None:
    """Replace the table between the markers of ``path``."""
    text = path.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    atomic_write_text(path, f"{head}{BEGIN}\n{table}\n{END}{tail}")


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m dse.workloads.table", description=__doc__.splitlines()[0])
    ap.add_argument("--legacy", action="store_true", help="the TorchScript exporter's graphs")
    ap.add_argument("--update", type=Path, metavar="MD", help="replace the table between the markers of this file")
    args = ap.parse_args(argv)
    table = markdown(dynamo=not args.legacy)
    if args.update is not None:
        update(args.update, table)
    else:
        print(table)


if __name__ == "__main__":
    main()
