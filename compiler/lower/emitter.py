"""The instruction stream under construction: DRAM map, constants, debug entries and the token pipeline.

Every layer is lowered to a list of :class:`Tile` (the LD, EX and ST instructions of one tile) and
handed to :meth:`Emitter.pipeline`, which sets the dependency tokens of the double-buffered
pattern of docs/isa.md once, for all ops: LD of tile t waits for EX to free its buffer half (from
t = 2 on) and signals "loaded"; EX waits for the load (and for ST to free its output half from
t = 2 on), signals "half free" to LD and "result ready" to ST; ST stores and frees the output half.
A BARRIER ends each layer, so a layer's stores reach DRAM before the next layer loads them and no
token is left over between layers.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field

import numpy as np

from compiler.isa import Barrier, Buffer, Elem, Engine, Load, Reg, SetReg
from compiler.isa.program import ConstSegment, DebugEntry
from compiler.target import Target
from costmodel.errors import UserError

ALIGN = 64
MAX_BOX_ROWS = 4096  # LOAD/STORE y_size limit (12-bit field)
MAX_CHUNKS = 2
"""Extra EX->ST tokens per tile: with two tiles in flight at most 2 * (1 + MAX_CHUNKS) <= token_depth 8
tokens wait in EX->ST (the FIFO check in compiler/sim/engines.py is timing-independent)."""


def align(n: int, a: int = ALIGN) -> int:
    return -(-n // a) * a


def f32_bits(value: float) -> int:
    """A float32 as the signed int32 a SETREG carries."""
    return struct.unpack("<i", struct.pack("<f", float(np.float32(value))))[0]


@dataclass
class Act:
    """A uint8/int8 activation in DRAM, channel-blocked: (N, C/L, H, W, L) for NCHW, (M, K/L, L) for 2-D."""

    name: str
    shape: tuple[int, ...]
    addr: int
    scale: float
    zero_point: int
    dtype: str = "uint8"

    @property
    def layout(self) -> str:
        return {4: "NCHWc", 2: "NCc"}[len(self.shape)]


@dataclass
class Tile:
    """The instructions of one tile, per engine, before tokens are set."""

    label: str
    ld: list = field(default_factory=list)
    ex: list = field(default_factory=list)
    st: list = field(default_factory=list)
    # optional store chunks: EX index after which chunk c is ready, ST index where its stores begin
    # (the last chunk ends at ex[-1]; the first begins at st[0]); at most MAX_CHUNKS per tile
    ex_marks: tuple[int, ...] = ()
    st_marks: tuple[int, ...] = ()
    # ``carry`` trailing EX instructions (the last output block's bias/requant VECs, which do not read
    # the tile's input half) are issued among the next tile's first ``lead`` EX instructions (its first
    # output block's GEMMs, which use the other ACC half), so the array does not idle at the boundary
    carry: int = 0
    lead: int = 1
    free_at: int = -1  # EX index whose completion frees the tile's input half for the LD two tiles on
    out_first: int = 0  # EX index of the first instruction writing the output half (waits for ST to free it)


class Emitter:
    """Collects instructions (each with its debug entry), constants and the activation memory map."""

    def __init__(self, target: Target, act_base: int = 0) -> None:
        self.target = target
        self.L = target.lanes
        self.insns: list = []
        self.debug: dict[int, DebugEntry] = {}
        self.constants = bytearray()
        self.segments: list[ConstSegment] = []
        self.act_base = act_base
        self.act_top = act_base
        self.node = ""
        self.tile = ""
        self.layers: list[dict] = []
        self.planner = None  # compiler.lower.mapped.Planner: tiles from the mapper (None: default tiling)

    # --- memory --------------------------------------------------------------------------------
    def const(self, data: np.ndarray, kind: str = "other") -> int:
        """Append ``data`` to the constants section; its DRAM address (constants sit at address 0)."""
        addr = len(self.constants)
        raw = np.ascontiguousarray(data).tobytes()
        self.segments.append(ConstSegment(f"{self.node}:{kind}", kind, addr, len(raw)))
        self.constants += raw
        self.constants += bytes(align(len(self.constants)) - len(self.constants))
        return addr

    def alloc(self, nbytes: int) -> int:
        addr = self.act_top
        self.act_top += align(nbytes)
        return addr

    def new_act(self, name: str, shape: tuple[int, ...], scale: float, zp: int, dtype: str = "uint8") -> Act:
        return Act(name, tuple(int(d) for d in shape), self.alloc(act_bytes(shape, self.L)), scale, zp, dtype)

    # --- instructions --------------------------------------------------------------------------
    def emit(self, insn) -> None:
        self.debug[len(self.insns)] = DebugEntry(self.node, self.tile)
        self.insns.append(insn)

    def setreg(self, engine: Engine, reg: Reg, value: int) -> None:
        self.emit(SetReg(engine=engine, reg=reg, value=int(value)))

    def begin_layer(self, node: str, op: str) -> None:
        self.node, self.tile = node, "setup"
        self.layers.append({"node": node, "op": op, "first": len(self.insns)})

    def record_plan(self, plan) -> None:
        """Keep the mapping a layer was lowered with (printed by dse compile, checked by dse simulate)."""
        self.layers[-1].update(tiling=plan.describe(self.planner.arch), refitted=plan.mapping is not plan.chosen, problem=plan.problem.to_dict(),
                               mapping=plan.mapping.to_dict(),
                               analytical_cycles=self.planner.analytical_cycles(plan))

    def pipeline(self, tiles: list[Tile]) -> None:
        """Emit ``tiles`` with the double-buffering token pattern, then a BARRIER.

        A tile's ``carry`` trailing EX instructions are emitted one by one after each of the next
        tile's first ``lead`` EX instructions (the first of which pops the next tile's tokens), the
        rest before its instruction ``lead``; they keep the tokens of their own tile's end (input
        half free to LD, last chunk ready to ST), so nothing their tile's buffers hold is released
        before they ran, and every push of the next tile comes after them (``lead`` <= its first)."""
        n = len(tiles)
        carried: list = []
        for t, tile in enumerate(tiles):
            if not (tile.ld and tile.ex and tile.st):
                raise AssertionError(f"{self.node} {tile.label}: every tile needs LD, EX and ST work")
            self.tile = tile.label
            ld = _flag(tile.ld, 0, pop_next=t >= 2)
            ld = _flag(ld, -1, push_next=True)
            ex = _flag(_flag(tile.ex, 0, pop_prev=True), tile.out_first, pop_next=t >= 2)
            ex = _flag(_flag(ex, -1, push_next=True), tile.free_at, push_prev=t < n - 2)
            if len(tile.ex_marks) != len(tile.st_marks) or len(tile.ex_marks) > MAX_CHUNKS:
                raise AssertionError(f"{self.node} {tile.label}: store chunks {tile.ex_marks} / {tile.st_marks}")
            for k in tile.ex_marks:  # chunk ready: ST may store it while EX computes the next chunk
                ex = _flag(ex, k, push_next=True)
            st = _flag(tile.st, 0, pop_prev=True)
            for k in tile.st_marks:
                st = _flag(st, k, pop_prev=True)
            st = _flag(st, -1, push_prev=t < n - 2)
            keep = len(ex) - (tile.carry if t < n - 1 else 0)
            first_push = min((*tile.ex_marks, len(ex) - 1))
            if not 0 < keep <= len(ex) or (carried and not 1 <= tile.lead <= first_push):
                raise AssertionError(f"{self.node} {tile.label}: carry {tile.carry} / lead {tile.lead} of "
                                     f"{len(ex)} EX instructions (first push {first_push}, {len(carried)} carried)")
            for insn in ld:
                self.emit(insn)
            for k, insn in enumerate(ex[:keep]):
                if k == tile.lead:  # the previous tile's carried VECs all before this tile's second block
                    for label, c in carried:
                        self.tile = label
                        self.emit(c)
                    carried, self.tile = [], tile.label
                self.emit(insn)
                if carried and k + 1 < tile.lead:
                    self.tile, c = carried.pop(0)
                    self.emit(c)
                    self.tile = tile.label
            for label, c in carried:  # a tile of only ``lead`` instructions
                self.tile = label
                self.emit(c)
            self.tile = tile.label
            carried = [(tile.label, insn) for insn in ex[keep:]]
            for insn in st:
                self.emit(insn)
        self.tile = "end"
        self.emit(Barrier())
        self.layers[-1]["last"] = len(self.insns) - 1
        self.layers[-1]["tiles"] = n

    # --- common DMA boxes ----------------------------------------------------------------------
    def load_rows(self, buf: Buffer, sram: int, rows: int, dram_addr: int, elem: Elem = Elem.B8) -> list:
        """LOADs of ``rows`` contiguous DRAM vectors into consecutive buffer rows (split at 4096 rows)."""
        vbytes = self.L * (1 if elem == Elem.B8 else 4)
        out = []
        for r0 in range(0, rows, MAX_BOX_ROWS):
            r = min(MAX_BOX_ROWS, rows - r0)
            out.append(Load(buf=buf, elem=elem, sram=sram + r0, y_size=r, dram_addr=dram_addr + r0 * vbytes,
                            dram_pitch=vbytes))
        return out


def _flag(insns: list, index: int, **flags: bool) -> list:
    insns = list(insns)
    insn = insns[index]
    on = {k: True for k, v in flags.items() if v}
    if on:
        insns[index] = dataclasses.replace(insn, **on)
    return insns


def act_bytes(shape: tuple[int, ...], lanes: int) -> int:
    """DRAM bytes of a channel-blocked 8-bit activation (channels padded to whole blocks)."""
    if len(shape) == 4:
        n, c, h, w = shape
        return n * -(-c // lanes) * h * w * lanes
    if len(shape) == 2:
        m, k = shape
        return m * -(-k // lanes) * lanes
    raise UserError(f"activation of shape {list(shape)}: only 2-D (N, C) and 4-D (N, C, H, W) tensors are lowered")


def blocks(c: int, lanes: int) -> int:
    return -(-c // lanes)
