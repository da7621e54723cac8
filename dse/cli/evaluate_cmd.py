"""`dse evaluate`: cost of one mapping of one layer on a config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from dse.cli.params import path_option


def _si(x: float, unit: str) -> str:
    """3 significant digits with an SI prefix (``1.23 uJ``)."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "u"),
                          (1e-9, "n"), (1e-12, "p")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _print_tables(result: dict[str, Any], hw: str, layer: str, loop_nest: str) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(markup=False)  # (names are shown as written)
    if not con.is_terminal:
        con.width = max(con.width, 120)  # piped output: do not squeeze the access table
    macs = result["macs"]
    tot = Table(title=f"{layer} on {hw}", show_header=False)
    tot.add_column("metric")
    tot.add_column("value", justify="right")
    rows = [
        ("energy", f"{_si(result['energy_pj'] * 1e-12, 'J')}  ({result['energy_pj'] / macs:.4g} pJ/MAC)"),
        ("latency", f"{result['latency_cycles']:,} cycles  ({_si(result['latency_s'], 's')})"),
        ("compute cycles", f"{result['compute_cycles']:,}"),
        ("utilization", f"{result['utilization']:.1%}"),
        ("power", f"{result['power_mw']:.4g} mW"),
        ("EDP", f"{result['edp']:.4g} pJ*s"),
        ("MACs", f"{macs:,}"),
        ("area", f"{result['area_mm2']:.4g} mm2"),
    ]
    for k, v in rows:
        tot.add_row(k, v)
    con.print(tot)

    acc = Table(title="accesses (words, all instances)")
    for col in ("level", "tensor", "reads", "fills", "updates", "writes", "energy pJ"):
        acc.add_column(col, justify="left" if col in ("level", "tensor") else "right")
    eb = result["energy_breakdown_pj"]
    for lv, per_t in result["accesses"].items():
        for t, a in per_t.items():
            e = sum(eb[lv][t].values())
            if any(a.values()):
                acc.add_row(lv, t, f"{a['reads']:,}", f"{a['fills']:,}", f"{a['updates']:,}", f"{a['writes']:,}",
                            f"{e:.4g}")
    con.print(acc)

    en = Table(title="energy breakdown")
    for col in ("component", "pJ", "pJ/MAC", "share"):
        en.add_column(col, justify="left" if col == "component" else "right")
    parts: list[tuple[str, float]] = [("MAC", eb["mac"])]
    for lv in result["accesses"]:
        parts.append((lv, sum(sum(a.values()) for a in eb[lv].values())))
    parts += [(f"network below {lv}", v) for lv, v in eb["network"].items() if v]
    parts += [(f"leakage {lv}", v) for lv, v in eb["leakage"].items() if v]
    for name, v in parts:
        en.add_row(name, f"{v:.4g}", f"{v / macs:.4g}", f"{v / result['energy_pj']:.1%}")
    con.print(en)
    con.print("loop nest", style="bold")
    con.print(loop_nest, highlight=False)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""

    @app.command("evaluate")
    def evaluate(
        hw: Annotated[str, typer.Option("--hw", help="Hardware config: a YAML path or a name under hwconfigs/.")],
        layer: Annotated[Path, path_option("--layer", help="Layer file (YAML/JSON).")],
        mapping: Annotated[Path, path_option("--mapping", help="Mapping file (YAML/JSON).")],
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
        no_overlap: Annotated[bool, typer.Option(
            "--no-overlap", help="Serialize transfers with compute (and charge SCALE-Sim's per-fold "
            "fill/drain on systolic configs).")] = False,
    ) -> None:
        """Energy, latency, utilization, area and access counts of one mapping of one layer."""
        from dse import api

        arch = api.load_hw(hw)
        problem = api.load_layer(layer)
        m = api.load_mapping(mapping, problem, arch)
        result = api.evaluate(problem, arch, m, overlap=not no_overlap).to_dict()
        if as_json:
            doc = {"hw": arch.name, "layer": problem.describe(), "overlap": not no_overlap, **result,
                   "mapping": m.to_dict(arch)}
            typer.echo(json.dumps(doc, indent=2))
            return
        _print_tables(result, arch.name, problem.describe(), m.loop_nest(problem, arch))
