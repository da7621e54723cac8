"""``simulate()``: load a binary, find its config, place inputs in DRAM, run the queues, read outputs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from compiler.isa import layout
from compiler.isa.encoding import encode_program
from compiler.isa.instructions import Gemm, Load, Nop, SetReg, Store, Vec
from compiler.isa.program import IOTensor, Program
from compiler.isa.spec import FORMATS, Buffer, Engine
from compiler.sim import compute, dma, quant
from compiler.sim import timing as costs
from compiler.sim.engines import run_queues
from compiler.sim.races import RaceDetector
from compiler.sim.result import SimResult
from compiler.sim.state import ELEM_BYTES, MachineState, SimError
from compiler.target import GEMM_TIMINGS, Target
from costmodel.errors import UserError

_HWCONFIGS = Path(__file__).resolve().parents[2] / "hwconfigs"


def simulate(
    binary: str | Path | Program,
    inputs: dict[str, np.ndarray],
    *,
    timing: bool = True,
    arch: Any = None,
    gemm_timing: str | None = None,
    functional: bool = True,
) -> SimResult:
    """Run a program on the functional (and timing) simulator.

    ``arch``: a Target, an Architecture, a hwconfig name/path, or None (the config under hwconfigs/
    whose fingerprint the binary names; fingerprint ``0``*16 is the default test ``Target()``).
    ``gemm_timing``: ``scalesim`` or ``overlapped`` (default: the Target's). ``functional=False``
    checks addresses, tokens and races and counts cycles without computing values (no outputs).
    """
    t_wall = time.perf_counter()
    if isinstance(binary, Program):
        program = binary
        encode_program(program.instructions)  # field ranges, enums, token legality (IsaError names the index)
    else:
        from compiler.isa.binary import read_binary

        program = read_binary(binary)  # decoding checked every field already
    program.validate()
    target = resolve_target(program, arch)
    mode = gemm_timing or target.gemm_timing
    if mode not in GEMM_TIMINGS:
        raise UserError(f"gemm timing {mode!r}: expected one of {', '.join(GEMM_TIMINGS)}")
    if program.dram_size > target.dram_bytes:
        raise SimError(f"program: memory map of {program.dram_size} bytes exceeds the {target.dram_bytes}-byte "
                       f"DRAM of {target.name}")
    state = MachineState.create(target, program.dram_size)
    state.dram[program.const_base : program.const_base + len(program.constants)] = np.frombuffer(
        program.constants, dtype=np.uint8)
    if functional:
        _place_inputs(state, program, inputs)

    insns = program.instructions

    def describe(i: int) -> str:
        return f"{program.where(i)} [{FORMATS[insns[i].OPCODE].mnemonic}]"

    def execute(i: int, engine: Engine) -> None:
        insn = insns[i]
        where = describe(i)
        if isinstance(insn, Load):
            acc = dma.load(state, insn, where, functional)
        elif isinstance(insn, Store):
            acc = dma.store(state, insn, where, functional)
        elif isinstance(insn, Gemm):
            acc = compute.gemm(state, insn, where, functional)
        elif isinstance(insn, Vec):
            acc = compute.vec(state, insn, where, functional)
        elif isinstance(insn, SetReg):
            state.regs[int(insn.engine), int(insn.reg)] = insn.value
            acc = []
        elif isinstance(insn, Nop):
            acc = []
        else:
            raise SimError(f"{where}: cannot execute {insn!r}")
        races.access(i, engine, acc)

    races = RaceDetector({b: target.buffer_rows(b) for b in Buffer}, describe)
    lat = np.array([costs.latency(x, target, mode) for x in insns], dtype=np.int64)
    tail = [costs.gemm_overlap(x, target, mode) for x in insns]
    units = [costs.ex_unit(x) for x in insns]
    boxes = [costs.footprint(x, target) for x in insns]
    tl = run_queues(insns, target.token_depth, races, describe, execute, lambda i: int(lat[i]), tail.__getitem__,
                    units, boxes)

    outputs = {io.name: _read_output(state, io) for io in program.io
               if io.direction == "output"} if functional else {}
    result = SimResult(
        outputs=outputs, instructions=len(insns),
        macs=sum(costs.gemm_macs(x, target) for x in insns if isinstance(x, Gemm)),
        dram_read_bytes=_dma_bytes(insns, Load, target), dram_write_bytes=_dma_bytes(insns, Store, target),
        pes=target.rows * target.cols, warnings=tl.leftover,
    )
    if timing:
        result.gemm_timing, result.cycles, result.clock_hz = mode, tl.cycles, target.clock_hz
        result.busy = {e.name: tl.busy[e] for e in Engine}
        result.stall = {e.name: tl.stall[e] for e in Engine}
        result.start, result.end = tl.start, tl.end
        result.nodes = _node_spans(program, tl.start, tl.end, lat)
    result.wall_seconds = time.perf_counter() - t_wall
    return result


def resolve_target(program: Program, arch: Any) -> Target:
    """The Target to run on; refuses a binary built for a different config."""
    if isinstance(arch, Target):
        target = arch
    elif arch is None:
        target = _find_target(program.fingerprint)
    else:
        from costmodel.arch import load_architecture

        target = Target.from_arch(load_architecture(arch) if isinstance(arch, str | Path) else arch)
    program.check_fingerprint(target.fingerprint, f"config {target.name}")
    return target


def _find_target(fingerprint: str) -> Target:
    default = Target()
    if fingerprint == default.fingerprint:
        return default
    from costmodel.arch import load_architecture

    for path in sorted(_HWCONFIGS.glob("*.yaml")):
        try:
            arch = load_architecture(path)
            if arch.fingerprint() == fingerprint and arch.compilable is not None:
                return Target.from_arch(arch)
        except UserError:
            continue
    raise UserError(f"binary was built for config fingerprint {fingerprint}, and no compilable config in "
                    f"{_HWCONFIGS} has it; pass the config (hw, the CLI's --hw)")


class InputError(UserError):
    """An input array the binary cannot take (shape, dtype, range); ``name`` says which input, so
    that a caller who read it from a file can name the file."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def _place_inputs(state: MachineState, program: Program, inputs: dict[str, np.ndarray]) -> None:
    wanted = {io.name: io for io in program.io if io.direction == "input"}
    if not isinstance(inputs, dict):
        raise TypeError(f"inputs: expected a dict of input name -> array (the binary's inputs: {sorted(wanted)}), "
                        f"got {type(inputs).__name__}")
    unknown = sorted(set(inputs) - set(wanted))
    if unknown:
        raise UserError(f"input(s) {unknown} are not inputs of this binary; its inputs are {sorted(wanted)}")
    missing = sorted(set(wanted) - set(inputs))
    if missing:
        raise UserError(f"missing input(s) {missing}; the binary's inputs are {sorted(wanted)}")
    for name, io in wanted.items():
        try:
            image = np.frombuffer(layout.pack(_convert(np.asarray(inputs[name]), io), io), dtype=np.uint8)
        except UserError as exc:
            raise InputError(name, str(exc)) from None
        if io.addr + image.size > state.dram.size:
            raise UserError(f"input {name!r}: [{io.addr}, +{image.size}) lies outside the {state.dram.size}-byte "
                            f"memory map")
        state.dram[io.addr : io.addr + image.size] = image


def _read_output(state: MachineState, io: IOTensor) -> np.ndarray:
    size = layout.nbytes(io)
    if io.addr + size > state.dram.size:
        raise UserError(f"output {io.name!r}: [{io.addr}, +{size}) lies outside the {state.dram.size}-byte memory map")
    return layout.unpack(state.dram[io.addr : io.addr + size].tobytes(), io)


def _convert(value: np.ndarray, io: IOTensor) -> np.ndarray:
    """An input as the binary's dtype: floats into int8/uint8 are quantized as ONNX QuantizeLinear
    (ORT: x / scale, round half to even, + zero point, saturate); integers must fit."""
    if tuple(value.shape) != tuple(io.shape):
        raise UserError(f"input {io.name!r}: shape {list(value.shape)}, the binary expects {list(io.shape)}")
    want = np.dtype(io.dtype)
    if value.dtype == want:
        return value
    if value.dtype.kind == "f" and io.dtype in ("int8", "uint8"):
        if not np.isfinite(value).all():
            raise UserError(f"input {io.name!r}: NaN or infinite values cannot be quantized")
        return quant.requantize(value.astype(np.float32), io.scale, io.zero_point, want, divide=True)
    if value.dtype.kind in "iu" and want.kind in "iu":  # (not bool: as codes 0/1, `--check` read it as 1.0)
        info = np.iinfo(want)
        if value.size and (value.min() < info.min or value.max() > info.max):
            raise UserError(f"input {io.name!r}: values [{value.min()}, {value.max()}] do not fit {io.dtype}")
        return value.astype(want)
    if want.kind == "f":
        return value.astype(want)
    raise UserError(f"input {io.name!r}: dtype {value.dtype}, the binary expects {io.dtype}")


def _dma_bytes(insns: list, kind: type, target: Target) -> int:
    return sum(x.y_size * x.x_size * target.lanes * ELEM_BYTES[int(x.elem)] for x in insns if isinstance(x, kind))


def _node_spans(program: Program, start: np.ndarray, end: np.ndarray, lat: np.ndarray) -> list[dict]:
    """Per ONNX node (from the debug map, in first-appearance order): first start, last end, busy cycles."""
    spans: dict[str, dict] = {}
    for i, entry in sorted(program.debug.items()):
        if start[i] < 0:
            continue
        s = spans.setdefault(entry.node, {"node": entry.node, "start": int(start[i]), "end": int(end[i]),
                                          "instructions": 0, "busy_cycles": 0})
        s["start"], s["end"] = min(s["start"], int(start[i])), max(s["end"], int(end[i]))
        s["instructions"] += 1
        s["busy_cycles"] += int(lat[i])
    for s in spans.values():
        s["cycles"] = s["end"] - s["start"]
    return list(spans.values())
