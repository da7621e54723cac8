"""`dse compile MODEL|ZOO_NAME --hw HW -o model.axb`: quantize, lower and write a binary.

Writes ``model.axb`` and, next to it, ``model.q.onnx`` (the quantized reference; check with
``dse simulate model.axb --input x.npy --check model.q.onnx``) and ``model.map.json`` (the mapped
layers' problems and mappings). Prints the layers (ONNX node, op,
tiles, instructions, cycles predicted by the timing simulator), the instruction count, the size of
the constants and the predicted cycles of the whole program. ``--json`` prints one JSON document.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dse.cli.params import path_option


def _calibration(paths: list[str] | None) -> dict | None:
    if not paths:
        return None
    from costmodel.errors import UserError
    from dse.cli.arrays import read_npy

    out = {}
    for spec in paths:
        name, sep, path = spec.partition("=")
        if not sep:
            raise UserError(f"--calibration {spec}: expected NAME=PATH.npy (the model input's name)")
        if name in out:
            raise UserError(f"--calibration {spec}: input {name!r} given twice")
        out[name] = read_npy(path, f"--calibration {name}")
    return out


def summarize(compiled, target) -> dict:
    """Per-layer table and totals, with cycles from compile_to_file's run of the timing simulator."""
    program, sim = compiled.program, compiled.timing
    by_node = {n.get("node"): n for n in sim.nodes}
    layers = []
    for lay in compiled.layers:
        n = by_node.get(lay["node"], {})
        layers.append({"node": lay["node"], "op": lay["op"], "tiles": lay.get("tiles", 0),
                       "instructions": lay["last"] - lay["first"] + 1, "cycles": n.get("cycles"),
                       "mapping": lay.get("tiling"), "analytical_cycles": lay.get("analytical_cycles")})
    return {"layers": layers, "instructions": len(program.instructions), "constants_bytes": len(program.constants),
            "dram_bytes": program.dram_size, "predicted_cycles": sim.cycles,
            "predicted_s": sim.cycles / target.clock_hz if sim.cycles is not None else None,
            "io": [t.to_json() for t in program.io]}


def compile_model_cmd(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="An ONNX file (fp32 or QDQ) or a zoo model name.")],
    hw: Annotated[str, typer.Option("--hw", help="Compilable hwconfig: YAML path or shipped name.")],
    out: Annotated[Path, path_option("--out", "-o", file=True, help="Output binary (.axb).")],
    calibration: Annotated[list[str] | None, typer.Option("--calibration", help="NAME=PATH.npy calibration "
                           "inputs (samples on the leading axis); default: seeded random normal.")] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=2**32 - 1,
                                      help="Seed for calibration data and zoo weights.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document on stdout.")] = False,
) -> None:
    """Compile a model for a compilable config; writes MODEL.axb, MODEL.q.onnx (the reference) and
    MODEL.map.json (the mapped layers)."""
    from compiler.compile import compile_to_file, resolve
    from compiler.sim.check import mapping_sidecar
    from costmodel.arch import resolve_path
    from dse.api import file_or_name
    from dse.cli.messages import user_warnings_as_lines

    file_or_name(model, "model")  # ("" would be read as the current folder)
    target, arch = resolve(hw)
    cal_files = [spec.partition("=")[2] for spec in calibration or []]
    with user_warnings_as_lines():
        compiled = compile_to_file(model, arch, out, calibration=_calibration(calibration), seed=seed,
                                   inputs=[resolve_path(hw), *cal_files])
    doc = summarize(compiled, target)
    doc.update({"binary": str(out), "reference": str(compiled.qdq_model), "hw": target.name})
    if as_json:
        print(json.dumps(doc, indent=2))
        return
    w = max([20] + [len(lay["op"]) for lay in doc["layers"]])
    print(f"{'layer':40s} {'op':{w}s} {'tiles':>5s} {'insns':>6s} {'cycles':>10s}")
    for lay in doc["layers"]:
        cyc = "-" if lay["cycles"] is None else f"{lay['cycles']:,}"
        print(f"{lay['node'][:40]:40s} {lay['op']:{w}s} {lay['tiles']:5d} {lay['instructions']:6d} {cyc:>10s}")
        if lay["mapping"]:
            print(f"    mapping: {lay['mapping']}")
    print(f"{doc['instructions']} instructions, {doc['constants_bytes']:,} B constants, "
          f"{doc['dram_bytes']:,} B DRAM map")
    print(f"predicted cycles: {doc['predicted_cycles']:,} ({doc['predicted_s'] * 1e3:.3f} ms at "
          f"{target.clock_hz / 1e9:g} GHz)")
    print(f"wrote {out}, {compiled.qdq_model} and {mapping_sidecar(out)} (check: dse simulate "
          f"{out} --input x.npy --check {compiled.qdq_model})")


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_model_cmd)
