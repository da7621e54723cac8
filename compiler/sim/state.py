"""The machine state the simulator executes on: DRAM bytes, the three buffers, registers, PE weights.

Buffers are numpy arrays of ``rows x L`` lanes with the exact lane type (SPAD int8, ACC and CONST
int32); DRAM is a flat little-endian byte array of the program's memory-map size. Registers are
one 32-entry int64 file per engine (values are int32 or fp32 bits), reset as the spec says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.isa.spec import REG_RESET, Buffer, Engine
from compiler.target import Target
from costmodel.errors import UserError


class SimError(UserError):
    """A program breaks the machine's rules: an address or field outside the config, a token
    protocol violation (deadlock, overflow, leftover tokens), or an unsynchronised race."""


LANE_DTYPE = {Buffer.SPAD: np.dtype(np.int8), Buffer.ACC: np.dtype(np.int32), Buffer.CONST: np.dtype(np.int32)}
ELEM_BYTES = (1, 2, 4)  # compiler.isa.spec.Elem B8, B16, B32
N_REGS = 32


def reset_registers() -> np.ndarray:
    """[engine, register] int64 array with the spec's reset values."""
    regs = np.zeros((len(Engine), N_REGS), dtype=np.int64)
    for reg, value in REG_RESET.items():
        regs[:, int(reg)] = value
    return regs


@dataclass
class MachineState:
    """Everything an instruction can read or write."""

    target: Target
    dram: np.ndarray
    buffers: dict[Buffer, np.ndarray] = field(default_factory=dict)
    regs: np.ndarray = field(default_factory=reset_registers)
    weights: np.ndarray | None = None  # the PE array's stationary weight tile [R, C] (int8), after a loadw

    @classmethod
    def create(cls, target: Target, dram_bytes: int) -> MachineState:
        bufs = {b: np.zeros((target.buffer_rows(b), target.lanes), dtype=LANE_DTYPE[b]) for b in Buffer}
        return cls(target=target, dram=np.zeros(dram_bytes, dtype=np.uint8), buffers=bufs)

    def reg(self, engine: Engine, index: int) -> int:
        return int(self.regs[int(engine), index])

    def reg_f32(self, engine: Engine, index: int) -> np.float32:
        """A register's value read as float32 bits."""
        return np.array([self.regs[int(engine), index]], dtype=np.int64).astype(np.int32).view(np.float32)[0]
