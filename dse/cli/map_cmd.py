"""`dse map` (every layer of a model) and `dse best-mapping` (one layer): search, backed by the
mapping database. Tables go to stdout; the progress bar to stderr (only on a terminal)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from costmodel.errors import UserError
from dse.cli.messages import user_warnings_as_lines
from dse.cli.params import path_option

_OBJ = "Objective: edp, energy, latency, ed2p, or a weighted mix like 'energy:1,latency:2'."
_MAPPER = "Mapper: fast (seeded heuristic, default) or exhaustive (provably optimal over the mapspace)."
_BUDGET = "Fast mapper: cost-model evaluations per distinct layer shape (default 20000)."
_SEED = typer.Option("--seed", min=0, max=2**32 - 1, help="Seed of the search.")  # numpy's seed range
_VICTORY = ("Fast mapper: stop a layer's search after this many evaluations in a row without a better "
            "mapping (Timeloop's victory condition; default: off, the whole budget).")


def _db_arg(db: Path | None, no_db: bool) -> Any:
    if no_db and db is not None:
        raise UserError("--db and --no-db contradict each other: give one")
    return False if no_db else (db if db is not None else True)


def _fast_options(mapper: str, max_evaluations: int | None, victory: int | None) -> dict[str, int]:
    """The fast mapper's budget options as given (the mapper's own defaults otherwise)."""
    from dse.mappers.options import check_mapper

    opts = {k: v for k, v in (("max_evaluations", max_evaluations), ("victory", victory)) if v is not None}
    if opts and check_mapper(mapper) != "fast":
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in opts)
        raise UserError(f"{flags}: options of the fast mapper, not of --mapper {mapper}")
    return opts


def _check_json_out(path: Path, *inputs: str | Path | None) -> None:
    """Before the search, not after it: the --json file can be written and is none of the inputs
    (the model, the config, the mapping database)."""
    from costmodel.atomic import check_writable, refuse_overwriting

    check_writable(path)  # (a missing folder is created when the file is written, as by every command)
    refuse_overwriting(path, *inputs)


def _print_network(res: Any, shown: set[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    from dse.cli.evaluate_cmd import _si

    con = Console(markup=False)  # (names are shown as written: "net[/v2]" is no markup)
    if not con.is_terminal:
        con.width = max(con.width, 160)
    tot = res.totals
    t = Table(title=f"{res.model} on {res.arch.name} ({res.objective['name']}, {res.mapper} mapper, seed {res.seed})")
    for col in ("layer", "kind", "mapping", "energy", "latency cycles", "util", "E share", "L share", "source"):
        t.add_column(col, justify="right" if col not in ("layer", "kind", "mapping", "source") else "left",
                     overflow="fold")
    for x in res.layers:
        m = x.metrics
        src = ("db" if x.from_db else "search") if x.kind == "mac" else "vector model" if m["energy_pj"] else "-"
        if x.same_as:
            src = f"= {x.same_as}"
        t.add_row(x.name, x.kind, x.summary(res.arch), _si(m["energy_pj"] * 1e-12, "J"), f"{m['latency_cycles']:,}",
                  f"{m['utilization']:.1%}", f"{m['energy_pj'] / tot['energy_pj']:.1%}" if tot["energy_pj"] else "-",
                  f"{m['latency_cycles'] / tot['latency_cycles']:.1%}" if tot["latency_cycles"] else "-", src)
    con.print(t)
    s = Table(title="totals", show_header=False)
    s.add_column("metric")
    s.add_column("value", justify="right")
    for k, v in (("energy", _si(tot["energy_pj"] * 1e-12, "J")),
                 ("latency", f"{tot['latency_cycles']:,} cycles ({_si(tot['latency_s'], 's')})"),
                 ("EDP", f"{tot['edp']:.4g} pJ*s"), ("power", f"{tot['power_mw']:.4g} mW"),
                 ("MACs", f"{tot['macs']:,}"), ("utilization", f"{tot['utilization']:.1%}"),
                 ("area", f"{tot['area_mm2']:.4g} mm2"),
                 ("searches", f"{res.searched} run, {res.from_db} from the database"),
                 ("mappings evaluated", f"{tot['mappings_evaluated']:,}"),
                 ("search time", f"{tot['search_seconds']:.2f} s")):
        s.add_row(k, v)
    con.print(s)
    for w in res.warnings:
        if w not in shown:  # (the import's warnings were printed as they came)
            print(f"warning: {w}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    """Add `map` and `best-mapping` to the root app."""

    @app.command("map")
    def map_(
        model: Annotated[str, typer.Argument(metavar="MODEL", help="An ONNX file or a zoo model name (see `dse zoo list`).")],
        hw: Annotated[str, typer.Option("--hw", help="Hardware config: a YAML path or a name under hwconfigs/.")],
        objective: Annotated[str, typer.Option("--objective", help=_OBJ)] = "edp",
        mapper: Annotated[str, typer.Option("--mapper", help=_MAPPER)] = "fast",
        layer: Annotated[str | None, typer.Option("--layer", help="Map only this layer (by name).")] = None,
        seed: Annotated[int, _SEED] = 0,
        max_evaluations: Annotated[int | None, typer.Option("--max-evaluations", min=1, help=_BUDGET)] = None,
        victory: Annotated[int | None, typer.Option("--victory", min=1, help=_VICTORY)] = None,
        workers: Annotated[int | None, typer.Option("--workers", min=1, help="Worker processes (default and at most: one per core).")] = None,
        db: Annotated[Path | None, path_option("--db", file=True, help="Mapping database file (default: the user cache).")] = None,
        no_db: Annotated[bool, typer.Option("--no-db", help="Neither read nor write the mapping database.")] = False,
        json_out: Annotated[Path | None, path_option(
            "--json", file=True, help="Write one JSON document to this file ('-': stdout, and no table).")] = None,
        allow_unsupported: Annotated[bool, typer.Option(
            "--allow-unsupported", help="Import an op the front end does not support as a zero-cost host layer "
            "(a warning each), instead of refusing the model.")] = False,
    ) -> None:
        """Best mapping of every layer of a model: a per-layer table and the network's totals."""
        from dse.network import map_model

        to_stdout = json_out is not None and str(json_out) == "-"
        if json_out is not None and not to_stdout:
            from costmodel.arch import resolve_path
            from dse.api import is_zoo_name
            from dse.mapdb import default_path
            from dse.workloads.cache import cached_path

            # a shipped name: its file; a zoo name: its cached export; no --db: the default database
            _check_json_out(json_out, cached_path(model) if is_zoo_name(model) else model, resolve_path(hw),
                            None if no_db else db or default_path())
        opts = _fast_options(mapper, max_evaluations, victory)
        with user_warnings_as_lines() as shown:
            if allow_unsupported:
                from dse.api import load_workload

                model = load_workload(model, allow_unsupported=True)
            res = map_model(model, hw, objective=objective, mapper=mapper, seed=seed, workers=workers,
                            db=_db_arg(db, no_db), progress=json_out is None, layer=layer, **opts)
        if json_out is not None and not to_stdout:
            from costmodel.atomic import atomic_write_text

            atomic_write_text(json_out, json.dumps(res.to_dict(), indent=2) + "\n")
        if to_stdout:
            typer.echo(json.dumps(res.to_dict(), indent=2))
            return
        _print_network(res, shown)

    @app.command("best-mapping")
    def best_mapping(
        hw: Annotated[str, typer.Option("--hw", help="Hardware config: a YAML path or a name under hwconfigs/.")],
        layer: Annotated[Path, path_option("--layer", help="Layer file (YAML/JSON).")],
        objective: Annotated[str, typer.Option("--objective", help=_OBJ)] = "edp",
        mapper: Annotated[str, typer.Option("--mapper", help=_MAPPER)] = "fast",
        seed: Annotated[int, _SEED] = 0,
        max_evaluations: Annotated[int | None, typer.Option("--max-evaluations", min=1, help=_BUDGET)] = None,
        victory: Annotated[int | None, typer.Option("--victory", min=1, help=_VICTORY)] = None,
        constraints: Annotated[Path | None, path_option(
            "--constraints", help="Mapspace constraints (YAML), as in a hwconfig's constraints list.")] = None,
        db: Annotated[Path | None, path_option("--db", file=True, help="Mapping database file (default: the user cache).")] = None,
        no_db: Annotated[bool, typer.Option("--no-db", help="Neither read nor write the mapping database.")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")] = False,
    ) -> None:
        """Best mapping of one layer, as a loop nest and YAML, with its metrics (instant when cached)."""
        from dse import api
        from dse.network import best_mapping as _best

        arch = api.load_hw(hw)
        problem = api.load_layer(layer)
        opts: dict[str, Any] = _fast_options(mapper, max_evaluations, victory)
        if constraints is not None:
            opts["constraints"] = str(constraints)
        with user_warnings_as_lines():  # (a database row searched again)
            r = _best(problem, arch, objective=objective, mapper=mapper, seed=seed, db=_db_arg(db, no_db), **opts)
        if as_json:
            doc = {"hw": arch.name, "layer": problem.describe(), "mapper": mapper, "seed": seed, **r.metrics,
                   "mapping": r.mapping.to_dict(arch), "mappings_evaluated": r.mappings_evaluated,
                   "search_seconds": r.search_seconds, "from_db": r.from_db}
            typer.echo(json.dumps(doc, indent=2))
            return
        _print_best(r, arch, problem)


def _print_best(r: Any, arch: Any, problem: Any) -> None:
    import yaml
    from rich.console import Console

    from dse.cli.evaluate_cmd import _print_tables

    _print_tables(r.metrics, arch.name, problem.describe(), r.mapping.loop_nest(problem, arch))
    con = Console(markup=False)
    con.print("mapping (YAML, for `dse evaluate --mapping`)", style="bold")
    con.print(yaml.safe_dump(r.mapping.to_dict(arch), sort_keys=False, default_flow_style=None).rstrip(),
              highlight=False)
    how = "from the mapping database" if r.from_db else \
        f"{r.mappings_evaluated:,} mapping{'' if r.mappings_evaluated == 1 else 's'} evaluated in {r.search_seconds:.2f} s"
    con.print(f"search: {how}", markup=False, highlight=False)
