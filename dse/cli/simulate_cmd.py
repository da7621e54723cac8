"""`dse simulate model.axb --input x.npy`: run a binary on the simulator, save outputs, print cycles.

``--input`` is ``PATH.npy`` (the binary's inputs in I/O-table order) or ``NAME=PATH.npy``. Outputs
are written as ``<out>/<name>.npy`` (temp file + rename, so never a partial file); the default
``<out>`` is ``<binary stem>.out`` next to the binary. ``--json`` prints one JSON document.
``--check MODEL.onnx`` compares every output with onnxruntime and onnx.reference (in LSBs) and
exits 1 if onnxruntime's differs.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from costmodel.atomic import atomic_open, check_writable, refuse_overwriting
from costmodel.errors import UserError
from dse.cli.params import path_argument, path_option


def _read_inputs(specs: list[str], names: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The arrays of the ``--input`` specs by input name, and the file each came from."""
    from dse.cli.arrays import read_npy

    named: dict[str, str] = {}
    plain: list[str] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if sep and name in names:
            if name in named:
                raise UserError(f"--input {spec}: input {name!r} given twice")
            named[name] = path
        elif sep and not Path(spec).exists():
            raise UserError(f"--input {spec}: the binary has no input {name!r}; its inputs are {names}")
        else:
            plain.append(spec)
    free = [n for n in names if n not in named]
    if len(plain) > len(free):
        raise UserError(f"--input: {len(plain)} unnamed file(s) but only {len(free)} unassigned input(s) "
                        f"{free}; the binary's inputs are {names} (use NAME=PATH.npy)")
    named.update(zip(free, plain, strict=False))
    return {name: read_npy(path, f"--input {name}") for name, path in named.items()}, named


def _save_npy(array: Any, path: Path) -> None:
    import numpy as np

    with atomic_open(path, "wb") as f:
        np.save(f, array, allow_pickle=False)


def _file_names(names: list[str]) -> dict[str, str]:
    """Each output's file name: its name with characters unsafe in a path replaced by ``_``; when two
    names become the same (``y:1`` and ``y_1``, or differ only in case, as on macOS), the later one
    gets its position among the outputs (``y_1-1.npy``): one file had silently replaced the other."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for i, name in enumerate(names):
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        file, n = f"{stem}.npy", i
        while file.lower() in taken:
            file, n = f"{stem}-{n}.npy", n + 1
        taken.add(file.lower())
        out[name] = file
    return out


def simulate(
    binary: Annotated[Path, path_argument(metavar="BINARY", help="An .axb binary.")],
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i",
                      help="PATH.npy or NAME=PATH.npy; repeat for several inputs.")] = None,
    out: Annotated[Path | None, path_option("--out", help="Folder for the outputs (default <binary stem>.out, "
                                             "or <binary>.out for a binary named *.out).")] = None,
    hw: Annotated[str | None, typer.Option("--hw", help="Config YAML/name (default: the one whose fingerprint "
                                                        "the binary names, under hwconfigs/).")] = None,
    gemm_timing: Annotated[str | None, typer.Option("--gemm-timing",
                           help="GEMM latency: scalesim | overlapped (default: the config's).")] = None,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Functional only (no cycle counts).")] = False,
    check: Annotated[Path | None, path_option("--check", help="ONNX model to compare the outputs with "
                                               "(onnxruntime and onnx.reference); exit 1 on a difference.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """Run a binary on the functional and timing simulator; outputs as .npy, cycle counts printed."""
    from compiler.isa.binary import read_binary
    from compiler.sim import SimError
    from compiler.sim import simulate as run
    from compiler.sim.run import InputError

    if no_timing and gemm_timing is not None:
        raise UserError("--gemm-timing sets the timing model, which --no-timing turns off: give one of them")
    program = read_binary(binary)
    names = [io.name for io in program.io if io.direction == "input"]
    arrays, sources = _read_inputs(inputs or [], names)
    folder = out if out is not None else binary.with_suffix(".out")
    if out is None and folder == binary:  # (a binary named prog.out; a --out naming a file is refused below)
        folder = binary.with_name(binary.name + ".out")
    files = _file_names([io.name for io in program.io if io.direction == "output"])
    for file in files.values():
        check_writable(folder / file)  # before the run, not after
    given = [part for raw in inputs or [] for part in (raw, raw.partition("=")[2]) if part]
    for file in files.values():  # an output file may not replace an input (NAME=PATH or PATH: both spellings)
        refuse_overwriting(folder / file, binary, check, *given)
    try:
        result = run(program, arrays, timing=not no_timing, arch=hw, gemm_timing=gemm_timing)
    except SimError as exc:  # a defect of this binary: name it
        raise UserError(f"{binary}: {exc}") from None
    except InputError as exc:  # an input this binary cannot take: name its file
        raise UserError(f"{sources[exc.name]}: {exc}") from None
    checks = []
    if check is not None:
        from compiler.sim.check import check_outputs

        checks = check_outputs(program, result.outputs, arrays, check)
    timing_rows = _timing_rows(binary, result, program, hw) if check is not None and result.cycles is not None else []
    paths = {}
    for name, array in result.outputs.items():
        paths[name] = folder / files[name]
        _save_npy(array, paths[name])
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    doc = result.to_dict()
    for name, path in paths.items():
        doc["outputs"][name]["path"] = str(path)
    doc["binary"] = str(binary)
    failed = any(c.max_lsb_ort > 0 for c in checks)
    if check is not None:
        doc["check"] = {"model": str(check), "passed": not failed, "outputs": [c.to_dict() for c in checks],
                        "layers_vs_analytical": timing_rows}
    if as_json:
        print(json.dumps(doc, indent=2))
        if failed:
            raise typer.Exit(1)
        return
    for name, path in paths.items():
        a = result.outputs[name]
        print(f"output {name}: {a.dtype} {list(a.shape)} -> {path}")
    print(f"{result.instructions} instructions, {result.macs:,} MACs, {result.dram_read_bytes:,} B loaded, "
          f"{result.dram_write_bytes:,} B stored")
    if result.cycles is not None:
        util = result.utilization
        print(f"cycles: {result.cycles:,} ({result.gemm_timing} GEMM timing"
              f"{f', utilization {util:.1%}' if util is not None else ''})")
        for e, v in doc["engines"].items():
            print(f"  {e}: busy {v['busy']:,}  stall {v['stall']:,}  idle {v['idle']:,}")
    for c in checks:
        ref = "n/a" if c.max_lsb_reference is None else f"{c.max_lsb_reference} LSB"
        print(f"check {c.name}: max |diff| {c.max_lsb_ort} LSB vs onnxruntime ({c.mismatches_ort} of {c.elements} "
              f"differ), {ref} vs onnx.reference{'  [' + c.reference_note + ']' if c.reference_note else ''}")
        if c.ort_note:
            print(f"  note: {c.ort_note}")
    if timing_rows:
        print(f"{'layer':36s} {'simulated':>10s} {'analytical':>10s} {'ratio':>6s}  mapping")
        for r in timing_rows:
            print(f"{r['node'][:36]:36s} {r['sim_cycles']:>10,} {r['analytical_cycles']:>10,} {r['ratio']:6.2f}  "
                  f"{r['tiling']}")
            if "why" in r:
                print(f"{'':36s} outside 10%: {r['why']}")
        print(timing_summary(timing_rows))
    print(f"simulated in {result.wall_seconds:.2f} s", file=sys.stderr)
    if failed:
        print(f"check failed: outputs differ from onnxruntime on {check}", file=sys.stderr)
        raise typer.Exit(1)


def timing_summary(rows: list[dict]) -> str:
    """The last line of the per-layer table: median and range of the simulated / analytical ratios."""
    ratios = sorted(r["ratio"] for r in rows)
    inside = sum(0.9 <= x <= 1.1 for x in ratios)
    return (f"simulated/analytical: median {statistics.median(ratios):.3f}, range [{ratios[0]:.3f}, "
            f"{ratios[-1]:.3f}], {inside} of {len(ratios)} layers within 10% (docs/validation.md section 3)")


def _timing_rows(binary: Path, result, program, hw) -> list[dict]:
    """Simulated vs analytical cycles per mapped layer, from the ``<stem>.map.json`` dse compile wrote."""
    from compiler.sim.check import mapping_sidecar, timing_table

    side = mapping_sidecar(binary)
    if not side.exists():
        print(f"note: no {side.name} next to the binary (compiled without the mapper); no per-layer "
              "comparison with the analytical model", file=sys.stderr)
        return []
    layers = _sidecar_layers(side)
    from compiler.sim import resolve_target
    from compiler.sim.check import explain_gaps

    rows = timing_table(layers, result.nodes)
    explain_gaps(program, result.start, result.end, rows, resolve_target(program, hw))
    return rows


def _sidecar_layers(side: Path) -> list[dict]:
    """The ``layers`` of a ``<stem>.map.json``, checked for what the timing table reads: a damaged
    file is the user's to fix (exit 2), not a TypeError from deep in the table (exit 1, which is
    also a failed check's status)."""
    from costmodel.problem import as_int
    from costmodel.yamlio import short_repr

    try:
        doc = json.loads(side.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{side}: not a mapping file written by dse compile ({exc})") from None
    layers = doc.get("layers") if isinstance(doc, dict) else None
    if not isinstance(layers, list):
        raise UserError(f"{side}: not a mapping file written by dse compile (expected an object with a 'layers' list)")
    for i, lay in enumerate(layers):
        if not (isinstance(lay, dict) and isinstance(lay.get("node"), str) and isinstance(lay.get("op"), str)):
            raise UserError(f"{side}: layers[{i}]: expected an object with 'node' and 'op' strings, got "
                            f"{short_repr(lay)}")
        cycles = lay.get("analytical_cycles", 1)
        if as_int(cycles) is None or cycles < 1:
            raise UserError(f"{side}: layers[{i}].analytical_cycles: expected a positive integer, got "
                            f"{short_repr(cycles)}")
        tiles = lay.get("tiles", 0)
        if as_int(tiles) is None or tiles < 0:
            raise UserError(f"{side}: layers[{i}].tiles: expected a non-negative integer, got {short_repr(tiles)}")
    return layers


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the root app."""
    app.command("simulate")(simulate)
