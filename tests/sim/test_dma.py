"""LOAD and STORE against a loop oracle of the spec: DRAM vector (y, x) at addr + y*pitch + x*(1+gap)*vbytes."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.isa import Buffer, Elem, Engine, Load, Reg, Store
from compiler.sim import dma
from compiler.sim.state import MachineState
from compiler.target import Target

T = Target(spad_bytes=512 * 16, acc_bytes=128 * 64, const_bytes=64 * 64)
L = T.lanes
DRAM = 8192
SIZES = {Elem.B8: 1, Elem.B16: 2, Elem.B32: 4}


def element(dram: np.ndarray, addr: int, nbytes: int, unsigned: bool) -> int:
    return int.from_bytes(bytes(dram[addr : addr + nbytes]), "little", signed=not unsigned)


@st.composite
def loads(draw):
    """Loads that fit their buffer: the padded block's rows from ``sram`` on (64 rows of CONST could
    not take a 64-row block from row 1: an instruction the simulator rightly refuses)."""
    buf = draw(st.sampled_from(list(Buffer)))
    elem = Elem.B8 if buf == Buffer.SPAD else draw(st.sampled_from(list(Elem)))
    y_size, x_size = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    y_pad0, y_pad1, x_pad0, x_pad1 = (draw(st.integers(0, 2)) for _ in range(4))
    rows = (y_pad0 + y_size + y_pad1) * (x_pad0 + x_size + x_pad1)
    return Load(buf=buf, elem=elem, uns=draw(st.booleans()), padsel=draw(st.booleans()),
                sram=draw(st.integers(0, min(20, T.buffer_rows(buf) - rows))), y_size=y_size, x_size=x_size,
                dram_addr=draw(st.integers(0, 300)), dram_pitch=draw(st.sampled_from([0, 64, 200, 333])),
                x_gap=draw(st.integers(0, 2)), y_pad0=y_pad0, y_pad1=y_pad1, x_pad0=x_pad0, x_pad1=x_pad1)


@settings(max_examples=60, deadline=None)
@given(insn=loads(), seed=st.integers(0, 2**16), padval=st.integers(-300, 300))
def test_load_matches_loop_oracle(insn, seed, padval):
    rng = np.random.default_rng(seed)
    s = MachineState.create(T, DRAM)
    s.dram[:] = rng.integers(0, 256, DRAM)
    s.regs[int(Engine.LD), int(Reg.PADVAL)] = padval
    lane_bits = 8 if insn.buf == Buffer.SPAD else 32
    eb = SIZES[insn.elem]
    pad = padval if insn.padsel else 0
    pad = (pad + 2 ** (lane_bits - 1)) % 2**lane_bits - 2 ** (lane_bits - 1)  # truncated to the lane
    width = insn.x_pad0 + insn.x_size + insn.x_pad1
    rows = []
    for yy in range(insn.y_pad0 + insn.y_size + insn.y_pad1):
        for xx in range(width):
            y, x = yy - insn.y_pad0, xx - insn.x_pad0
            if 0 <= y < insn.y_size and 0 <= x < insn.x_size:
                v = insn.dram_addr + y * insn.dram_pitch + x * (1 + insn.x_gap) * L * eb
                row = [element(s.dram, v + lane * eb, eb, insn.uns) for lane in range(L)]
                if eb * 8 == lane_bits:  # same width: the bits as they are (signed lane)
                    row = [(e + 2 ** (lane_bits - 1)) % 2**lane_bits - 2 ** (lane_bits - 1) for e in row]
            else:
                row = [pad] * L
            rows.append(row)
    dma.load(s, insn, "test", compute=True)
    got = s.buffers[insn.buf][insn.sram : insn.sram + len(rows)]
    np.testing.assert_array_equal(got, np.array(rows))


@st.composite
def stores(draw):
    buf = draw(st.sampled_from(list(Buffer)))
    x_size, gap = draw(st.integers(1, 4)), draw(st.integers(0, 2))
    vbytes = L * (1 if buf == Buffer.SPAD else 4)
    extent = ((x_size - 1) * (1 + gap) + 1) * vbytes
    return Store(buf=buf, elem=Elem.B8 if buf == Buffer.SPAD else Elem.B32, sram=draw(st.integers(0, 20)),
                 y_size=draw(st.integers(1, 4)), x_size=x_size, x_gap=gap, dram_addr=draw(st.integers(0, 300)),
                 dram_pitch=extent + draw(st.integers(0, 50)))


@settings(max_examples=60, deadline=None)
@given(insn=stores(), seed=st.integers(0, 2**16))
def test_store_matches_loop_oracle(insn, seed):
    rng = np.random.default_rng(seed)
    s = MachineState.create(T, DRAM)
    for b in Buffer:
        s.buffers[b][:] = rng.integers(-(2**31), 2**31, s.buffers[b].shape)
    want = s.dram.copy()
    lane_bytes = 1 if insn.buf == Buffer.SPAD else 4
    for y in range(insn.y_size):
        for x in range(insn.x_size):
            row = s.buffers[insn.buf][insn.sram + y * insn.x_size + x]
            v = insn.dram_addr + y * insn.dram_pitch + x * (1 + insn.x_gap) * L * lane_bytes
            for lane in range(L):
                b = int(row[lane]).to_bytes(lane_bytes, "little", signed=True)
                want[v + lane * lane_bytes : v + (lane + 1) * lane_bytes] = list(b)
    dma.store(s, insn, "test", compute=True)
    np.testing.assert_array_equal(s.dram, want)
