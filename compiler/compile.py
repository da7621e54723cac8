"""compile_model: an ONNX model (fp32 or QDQ) or zoo name -> a Program for a compilable hwconfig.

Flow: quantize (compiler.quantize; a QDQ model is kept as it is) -> let onnxruntime fuse the QDQ
groups into its integer kernels (compiler.lower.graph) -> lower node by node (compiler.lower.conv,
compiler.lower.vector) -> Program. The quantized ONNX model is the reference the binary is checked
against (``dse simulate model.axb --check model.q.onnx``).

DRAM map: the constants section at address 0, the activations after it. Lowering runs twice: the
first pass learns the size of the constants, the second places the activations behind them
(lowering is deterministic, so both passes emit the same instructions apart from addresses).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from compiler.isa import Finish, Program
from compiler.isa.binary import to_bytes
from compiler.lower.emitter import Emitter, align
from compiler.target import Target
from costmodel.atomic import (
    atomic_write_all,
    atomic_write_bytes,
    check_writable,
    is_special,
    refuse_overwriting,
    same_file,
)
from costmodel.errors import UserError, placed


@dataclass
class Compiled:
    """A compiled model: the program, the quantized reference model and a per-layer summary."""

    program: Program
    qdq_model: Path | None
    layers: list[dict] = field(default_factory=list)
    mapper_seconds: float = 0.0  # time in dse.mappers.map_layer (part of the compile time)
    timing: Any = None  # compile_to_file's checking run of the timing simulator (a SimResult, no values)


def resolve_target(arch: Any) -> Target:
    """A Target from an Architecture, a hwconfig name or path, or a Target."""
    return resolve(arch)[0]


def resolve(arch: Any) -> tuple[Target, Any]:
    """(Target, Architecture or None): a hand-built Target has no arch, hence no mapper."""
    if isinstance(arch, Target):
        return arch, None
    if isinstance(arch, str | Path):
        from costmodel.arch import load_architecture

        arch = load_architecture(arch)
    return Target.from_arch(arch), arch


def _resolve_model(model: str | Path, work: Path, seed: int) -> Path:
    """An ONNX path as given, or a zoo model exported (fp32) into ``work``."""
    path = Path(model)
    if path.suffix == ".onnx" or path.exists():
        if not path.exists():
            raise UserError(f"{path}: no such ONNX file")
        return path
    from dse import workloads

    if str(model) not in workloads.names():
        raise UserError(f"{model}: no such ONNX file, and not a zoo model (see `dse zoo list`)")
    return workloads.export(str(model), work / f"{model}.onnx", seed=seed)


def lower_qdq(qdq_path: str | Path, target: Target, *, expose: bool = False, arch: Any = None,
              seed: int = 0, stats: dict | None = None) -> tuple[Program, list[dict]]:
    """Lower an already-quantized (QDQ) ONNX model to a Program for ``target``.

    With ``arch`` (the Architecture ``target`` was derived from) the dense convs and FCs take their
    tiles from the mapper (compiler.lower.mapped), else from the template's default tiling.
    ``expose`` adds every intermediate activation to the I/O table as an output (for debugging and
    the per-layer tests, which compare each one with onnxruntime)."""
    from compiler.lower.graph import GraphLowering, fused_model
    from compiler.lower.mapped import Planner

    fused = fused_model(qdq_path)
    planner = Planner(arch, target, seed) if arch is not None and target.spad_level else None
    consts = 0
    for _ in range(2):
        em = Emitter(target, act_base=align(consts))
        em.planner = planner
        g = GraphLowering(fused, em)
        g.run()
        if align(len(em.constants)) == align(consts):
            break
        consts = len(em.constants)
    if expose:
        g.expose_all()
    em.tile = ""
    em.emit(Finish())
    dram = max(em.act_top, align(len(em.constants)))
    if dram > target.dram_bytes:
        raise UserError(f"the model needs {dram} bytes of device DRAM, the config has {target.dram_bytes}")
    program = Program(instructions=em.insns, fingerprint=target.fingerprint, constants=bytes(em.constants),
                      const_base=0, const_segments=em.segments,
                      io=g.io, dram_size=dram, debug=em.debug)
    program.validate()
    if stats is not None:
        stats["mapper_seconds"] = planner.seconds if planner is not None else 0.0
    return program, em.layers


def compile_model(model: str | Path, arch: Any, *, calibration: Mapping[str, np.ndarray] | None = None,
                  seed: int = 0, qdq_out: str | Path | None = None) -> Program:
    """Compile ``model`` (ONNX path or zoo name) for ``arch`` (Architecture, hwconfig name/path, Target)."""
    return compile_full(model, arch, calibration=calibration, seed=seed, qdq_out=qdq_out).program


def compile_full(model: str | Path, arch: Any, *, calibration: Mapping[str, np.ndarray] | None = None,
                 seed: int = 0, qdq_out: str | Path | None = None) -> Compiled:
    """As compile_model, also returning the layer table; ``qdq_out`` keeps the quantized model there."""
    from compiler.quantize import quantize_model

    target, hw = resolve(arch)
    with tempfile.TemporaryDirectory() as work:
        src = _resolve_model(model, Path(work), seed)
        qdq = Path(work) / "model.q.onnx"
        quantize_model(src, qdq, calibration=calibration, seed=seed)
        stats: dict = {}
        try:
            program, layers = lower_qdq(qdq, target, arch=hw, seed=seed, stats=stats)
        except UserError as exc:  # (a node of the quantized model: the user's file is the model)
            raise placed(exc, str(model)) from None
        kept = None
        if qdq_out is not None:
            kept = atomic_write_bytes(qdq_out, qdq.read_bytes())
    return Compiled(program, kept, layers, stats["mapper_seconds"])


def _quantized(path: str | Path) -> bool:
    """Whether the ONNX file at ``path`` is already quantized; a file that does not parse counts as
    quantized here, so that compile_full names its defect."""
    import onnx

    from compiler.quantize import is_quantized

    try:
        return is_quantized(onnx.load(str(path), load_external_data=False))
    except Exception:  # noqa: BLE001 - reported by compile_full
        return True


def checking_run(program: Program, arch: Any) -> Any:
    """The timing simulator's run of ``program`` on zero inputs without computing values: it refuses
    what the config's hardware cannot run (an op its vector unit lacks, a FIFO overflow, a race) and
    gives the predicted cycles. A SimResult."""
    from compiler.sim import simulate

    zeros = {t.name: np.full(t.shape, t.zero_point, dtype=t.dtype) for t in program.io if t.direction == "input"}
    return simulate(program, zeros, timing=True, arch=resolve_target(arch), functional=False)


def compile_to_file(model: str | Path, arch: Any, out: str | Path, *,
                    calibration: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                    inputs: Sequence[str | Path] = ()) -> Compiled:
    """Write ``out`` (.axb) and, next to it, ``<stem>.q.onnx`` (the quantized reference model) and
    ``<stem>.map.json`` (per mapped layer: problem, mapping, analytical latency; read by --check).
    ``inputs``: the other files the caller read (config, calibration arrays), which none of these
    may overwrite."""
    from compiler.sim.check import mapping_sidecar  # (where `dse simulate --check` looks for it)

    out = Path(out)  # (a missing folder is created when the files are written, as by every command)
    if is_special(out):  # (-o /dev/null would put the sidecars in /dev)
        raise UserError(f"{out}: not a file path; the binary's sidecars (.q.onnx, .map.json) go next to it")
    qdq_out, map_out = out.with_name(out.stem + ".q.onnx"), mapping_sidecar(out)
    for path in (out, qdq_out, map_out):  # before the minutes of work, not after
        check_writable(path)
        refuse_overwriting(path, *inputs)
    refuse_overwriting(out, model)
    refuse_overwriting(map_out, model)
    same = same_file(model, qdq_out)  # m.q.onnx -o m.axb: the input is already the reference, kept as it is
    if same and not _quantized(model):
        raise UserError(f"{model}: a float model named as this build's reference ({qdq_out.name}, the quantized "
                        f"model written next to {out.name}); rename it or choose another -o")
    with tempfile.TemporaryDirectory() as work:
        scratch = Path(work) / "model.q.onnx"
        compiled = compile_full(model, arch, calibration=calibration, seed=seed, qdq_out=None if same else scratch)
        compiled.timing = checking_run(compiled.program, arch)  # (before the write: a refused binary
        # had replaced the previous build's files)
        mapped = [{k: lay[k] for k in ("node", "op", "tiles", "tiling", "problem", "mapping", "analytical_cycles")}
                  for lay in compiled.layers if "mapping" in lay]
        files = {out: to_bytes(compiled.program), map_out: json.dumps({"layers": mapped}, indent=1).encode()}
        if not same:
            files[qdq_out] = scratch.read_bytes()
        atomic_write_all(files)  # (the three together: a binary never sits beside another build's reference)
    compiled.qdq_model = qdq_out
    return compiled
