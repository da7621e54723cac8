"""LOAD and STORE: 2-D strided DMA boxes between DRAM and a buffer, checked against the config.

The DRAM side of a box is a strided numpy view (``as_strided``, no per-element loop); the buffer
side is a contiguous block of rows. Each function checks every bound first, then (if ``compute``)
moves the data, and returns the accesses for the race detector.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from compiler.isa.instructions import Load, Store
from compiler.isa.spec import Buffer, Engine, Reg
from compiler.sim.races import BufAccess, DramAccess
from compiler.sim.state import ELEM_BYTES, LANE_DTYPE, MachineState, SimError

_ELEM_DTYPE = {(1, False): "i1", (1, True): "u1", (2, False): "<i2", (2, True): "<u2", (4, False): "<i4",
               (4, True): "<u4"}


def _box(state: MachineState, insn: Load | Store, where: str) -> tuple[int, int, np.ndarray]:
    """(element bytes, vector bytes, DRAM start byte of every vector [y, x]) after bounds checks."""
    eb = ELEM_BYTES[int(insn.elem)]
    vbytes = state.target.lanes * eb
    step = (1 + insn.x_gap) * vbytes
    starts = (insn.dram_addr + np.arange(insn.y_size, dtype=np.int64)[:, None] * insn.dram_pitch
              + np.arange(insn.x_size, dtype=np.int64)[None, :] * step)
    end = insn.dram_addr + (insn.y_size - 1) * insn.dram_pitch + (insn.x_size - 1) * step + vbytes
    if end > state.dram.size:
        raise SimError(f"{where}: DRAM bytes [{insn.dram_addr}, {end}) exceed the program's "
                       f"{state.dram.size}-byte memory map")
    return eb, vbytes, starts


def _rows_check(state: MachineState, buf: Buffer, first: int, count: int, where: str) -> None:
    have = state.target.buffer_rows(buf)
    if first + count > have:
        raise SimError(f"{where}: {buf.name} rows [{first}, {first + count}) exceed the {have} rows of {buf.name}")


def _dram_view(state: MachineState, insn: Load | Store, eb: int, vbytes: int) -> np.ndarray:
    """[y, x, vbytes] view of the box's DRAM bytes (strides: pitch, vector step, 1)."""
    base = state.dram[insn.dram_addr :]
    return as_strided(base, shape=(insn.y_size, insn.x_size, vbytes),
                      strides=(insn.dram_pitch, (1 + insn.x_gap) * vbytes, 1), writeable=False)


def load(state: MachineState, insn: Load, where: str, compute: bool) -> list:
    """DRAM box -> buffer rows, with on-chip padding (zero or PADVAL)."""
    lane = LANE_DTYPE[insn.buf]
    eb, vbytes, starts = _box(state, insn, where)
    if eb > lane.itemsize:
        raise SimError(f"{where}: {8 * eb}-bit DRAM elements do not fit the {8 * lane.itemsize}-bit lanes of "
                       f"{insn.buf.name}")
    xs, ys = insn.x_pad0 + insn.x_size + insn.x_pad1, insn.y_pad0 + insn.y_size + insn.y_pad1
    _rows_check(state, insn.buf, insn.sram, xs * ys, where)
    if compute:
        raw = _dram_view(state, insn, eb, vbytes).reshape(insn.y_size, insn.x_size * vbytes)
        data = np.ascontiguousarray(raw).view(_ELEM_DTYPE[eb, bool(insn.uns)])
        data = data.reshape(insn.y_size, insn.x_size, state.target.lanes)
        pad = state.reg(Engine.LD, int(Reg.PADVAL)) if insn.padsel else 0
        # pad and data convert to the lane type by two's-complement truncation (PADVAL 200 in SPAD = byte 200)
        image = np.full((ys, xs, state.target.lanes), pad, dtype=np.int64).astype(lane)
        image[insn.y_pad0 : insn.y_pad0 + insn.y_size, insn.x_pad0 : insn.x_pad0 + insn.x_size] = data.astype(lane)
        state.buffers[insn.buf][insn.sram : insn.sram + xs * ys] = image.reshape(-1, state.target.lanes)
    return [BufAccess(insn.buf, slice(insn.sram, insn.sram + xs * ys), write=True), DramAccess(starts.ravel(), vbytes, write=False)]


def store(state: MachineState, insn: Store, where: str, compute: bool) -> list:
    """Buffer rows -> DRAM box, unchanged bytes."""
    lane = LANE_DTYPE[insn.buf]
    eb, vbytes, starts = _box(state, insn, where)
    if eb != lane.itemsize:
        raise SimError(f"{where}: STORE needs elem = the {8 * lane.itemsize}-bit lane width of {insn.buf.name}, "
                       f"got {8 * eb}-bit")
    if insn.uns or insn.padsel or insn.y_pad0 or insn.y_pad1 or insn.x_pad0 or insn.x_pad1:
        raise SimError(f"{where}: STORE must have uns, padsel and all pads 0")
    row_extent = (insn.x_size - 1) * (1 + insn.x_gap) * vbytes + vbytes
    if insn.y_size > 1 and insn.dram_pitch < row_extent:
        raise SimError(f"{where}: STORE rows overlap in DRAM (dram_pitch {insn.dram_pitch} < row extent "
                       f"{row_extent} bytes), so the result would depend on write order")
    count = insn.y_size * insn.x_size
    _rows_check(state, insn.buf, insn.sram, count, where)
    if compute:
        src = state.buffers[insn.buf][insn.sram : insn.sram + count].view(np.uint8)
        view = as_strided(state.dram[insn.dram_addr :], shape=(insn.y_size, insn.x_size, vbytes),
                          strides=(insn.dram_pitch, (1 + insn.x_gap) * vbytes, 1))
        view[...] = src.reshape(insn.y_size, insn.x_size, vbytes)
    return [BufAccess(insn.buf, slice(insn.sram, insn.sram + count), write=False), DramAccess(starts.ravel(), vbytes, write=True)]
