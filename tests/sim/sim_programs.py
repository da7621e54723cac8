"""Hand-written test programs, built from instruction objects (no compiler involved).

Every builder returns ``(Program, inputs)``; the DRAM map is written out explicitly so that a test
can compare the simulated result with a numpy computation that shares nothing with the simulator.
"""

from __future__ import annotations

import numpy as np

from compiler.isa import (
    Barrier,
    Buffer,
    Elem,
    Engine,
    Finish,
    Gemm,
    GemmType,
    Load,
    Reg,
    SetReg,
    Src1Mode,
    Store,
    Vec,
    VecOp,
)
from compiler.isa.program import DebugEntry, IOTensor, Program

L = 16  # lanes of the default Target()


def _align(n: int, a: int = 64) -> int:
    return -(-n // a) * a


class Dram:
    """Allocates the memory map and collects the constants section (placed at const_base)."""

    def __init__(self, const_base: int = 0) -> None:
        self.const_base = const_base
        self.constants = bytearray()
        self.top = 0

    def const(self, data: np.ndarray) -> int:
        addr = self.const_base + len(self.constants)
        self.constants += np.ascontiguousarray(data).tobytes()
        self.constants += bytes(_align(len(self.constants)) - len(self.constants))
        return addr

    def alloc(self, nbytes: int) -> int:
        start = max(self.top, _align(self.const_base + len(self.constants)))
        self.top = start + _align(nbytes)
        return start

    def program(self, insns: list, io: list[IOTensor], debug: dict[int, DebugEntry] | None = None) -> Program:
        return Program(instructions=insns, constants=bytes(self.constants), const_base=self.const_base,
                       io=io, dram_size=max(self.top, _align(self.const_base + len(self.constants))),
                       debug=debug or {})


def matmul_program(a: np.ndarray, b: np.ndarray, *, a_zp: int = 0, scales: np.ndarray | None = None,
                   y_zp: int = 0, unsigned: bool = False, a_scale: float = 1.0,
                   y_scale: float = 1.0) -> tuple[Program, dict]:
    """Y = A @ B on the array (A: M x K activations, B: K x N int8 weights, K and N multiples of L).

    Without ``scales`` the int32 accumulators are stored (the exact product of (A - a_zp) and B);
    with per-column fp32 ``scales`` they are requantized (REQUANT) to int8/uint8 with ``y_zp``.
    The zero point is folded into an int32 bias row per column block: -a_zp * sum_k B[k, n].
    """
    m, k = a.shape
    n = b.shape[1]
    kb, nb = k // L, n // L
    dram = Dram()
    w_addr = dram.const(b.astype(np.int8))
    bias = (-a_zp * b.astype(np.int64).sum(axis=0)).astype(np.int32)
    bias_addr = dram.const(bias)
    scale_addr = dram.const(np.asarray(scales, np.float32)) if scales is not None else None
    a_dtype = "uint8" if unsigned else "int8"
    a_io = IOTensor("a", "input", a_dtype, (m, k), "NCc16", dram.alloc(m * k), a_scale, a_zp)
    quantized = scales is not None
    y_dtype = a_dtype if quantized else "int32"
    y_io = IOTensor("y", "output", y_dtype, (m, n), "NC", dram.alloc(m * n * (1 if quantized else 4)), y_scale,
                    y_zp if quantized else 0)
    w_base = m * kb  # SPAD: A at rows [0, m*kb), weight tiles after it, requantized rows after those
    q_base = w_base + nb * kb * L
    insns: list = [
        # A in DRAM: vector (m, kb) at m*K + kb*L  ->  SPAD row m*kb + kb
        Load(buf=Buffer.SPAD, sram=0, y_size=m, x_size=kb, dram_addr=a_io.addr, dram_pitch=k),
        SetReg(engine=Engine.EX, reg=Reg.OUT_ZP, value=y_zp),
        SetReg(engine=Engine.EX, reg=Reg.QMIN, value=0 if unsigned else -128),
        SetReg(engine=Engine.EX, reg=Reg.QMAX, value=255 if unsigned else 127),
    ]
    if quantized:
        insns.append(Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=nb, dram_addr=scale_addr, dram_pitch=64))
    for j in range(nb):
        acc_base = j * m
        insns += [
            # weight tiles of column block j: SPAD row w + k holds B[k, jL:(j+1)L]
            Load(buf=Buffer.SPAD, sram=w_base + j * k, y_size=k, dram_addr=w_addr + j * L, dram_pitch=n),
            # the bias row, broadcast (pitch 0) into the m accumulator rows of this block
            Load(buf=Buffer.ACC, elem=Elem.B32, sram=acc_base, y_size=m, dram_addr=bias_addr + 4 * j * L,
                 dram_pitch=0, push_next=True),
            Gemm(pop_prev=True, loadw=True, acc=True, dtype=GemmType.U8 if unsigned else GemmType.S8,
                 a_base=0, w_base=w_base + j * k, c_base=acc_base, mx=m, my=1, l0=kb, a_sx=kb, a_s0=1,
                 push_next=not quantized),
        ]
        if quantized:
            insns.append(Vec(op=VecOp.REQUANT, u8=unsigned, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC,
                             src1_buf=Buffer.CONST, src1_mode=Src1Mode.FIXED, dst=q_base + j * m, src0=acc_base,
                             src1=j, mx=m, sx=1, push_next=True))
            insns.append(Store(pop_prev=True, buf=Buffer.SPAD, sram=q_base + j * m, y_size=m,
                               dram_addr=y_io.addr + j * L, dram_pitch=n))
        else:
            insns.append(Store(pop_prev=True, buf=Buffer.ACC, elem=Elem.B32, sram=acc_base, y_size=m,
                               dram_addr=y_io.addr + 4 * j * L, dram_pitch=4 * n))
    insns.append(Finish())
    debug = {i: DebugEntry("matmul", f"block {i}") for i in range(len(insns))}
    return dram.program(insns, [a_io, y_io], debug), {"a": a}


def conv_program(x: np.ndarray, w: np.ndarray, *, stride: int, pad: int, x_zp: int = 0, barrier: bool = False,
                 bias: np.ndarray | None = None, scales: np.ndarray | None = None,
                 y_zp: int = 0) -> tuple[Program, dict]:
    """A k x k conv (x: 1 x Cin x H x W int8, w: Cout x Cin x k x k) as GEMMs over channel blocks of L.

    Padding uses the input zero point; ``bias - x_zp * sum(w)`` is preloaded into ACC. Without
    ``scales`` the int32 accumulators are the output; with per-channel fp32 ``scales`` they are
    requantized to int8 with ``y_zp`` (QLinearConv). With one block each and no scales the program is
    0 setreg, 1 load x, 2 load w, 3 load bias, 4 gemm, 5 store, 6 finish (the protocol tests edit it).
    """
    _, cin, h, wd = x.shape
    cout, _, kh, kw = w.shape
    cb, kb, taps = -(-cin // L), -(-cout // L), kh * kw
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    hp, wp, m = h + 2 * pad, wd + 2 * pad, ho * wo
    dram = Dram()
    wpad = np.zeros((kb * L, cb * L, kh, kw), np.int64)
    wpad[:cout, :cin] = w
    # tile (i, j, t = (r, s)): row = input channel of block i, lane = output channel of block j
    tiles = wpad.reshape(kb, L, cb, L, taps).transpose(2, 0, 4, 3, 1).astype(np.int8)
    w_addr = dram.const(tiles)
    b = np.zeros(kb * L, np.int64)
    b[:cout] = (0 if bias is None else bias.astype(np.int64)) - x_zp * w.astype(np.int64).sum(axis=(1, 2, 3))
    b_addr = dram.const(b.astype(np.int32))
    quantized = scales is not None
    if quantized:
        sc = np.zeros(kb * L, np.float32)
        sc[:cout] = scales
        s_addr = dram.const(sc)
    x_io = IOTensor("x", "input", "int8", x.shape, "NCHWc16", dram.alloc(cb * h * wd * L))
    out_bytes = 1 if quantized else 4
    y_io = IOTensor("y", "output", "int8" if quantized else "int32", (1, cout, ho, wo), "NCHWc16",
                    dram.alloc(kb * m * L * out_bytes), zero_point=y_zp if quantized else 0)
    w_base = cb * hp * wp
    q_base = w_base + cb * kb * taps * L
    insns: list = [SetReg(engine=Engine.LD, reg=Reg.PADVAL, value=x_zp)]
    for i in range(cb):
        insns.append(Load(buf=Buffer.SPAD, padsel=True, sram=i * hp * wp, y_size=h, x_size=wd,
                          dram_addr=x_io.addr + i * h * wd * L, dram_pitch=wd * L,
                          y_pad0=pad, y_pad1=pad, x_pad0=pad, x_pad1=pad))
    insns.append(Load(buf=Buffer.SPAD, sram=w_base, y_size=cb * kb * taps * L, dram_addr=w_addr, dram_pitch=L))
    if quantized:
        insns.append(Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=kb, dram_addr=s_addr, dram_pitch=4 * L))
    for j in range(kb):
        insns.append(Load(buf=Buffer.ACC, elem=Elem.B32, sram=j * m, y_size=m, dram_addr=b_addr + 4 * j * L,
                          dram_pitch=0, push_next=not barrier and j == kb - 1))
    if barrier:
        insns.append(Barrier())
    if quantized:
        insns.append(SetReg(engine=Engine.EX, reg=Reg.OUT_ZP, value=y_zp))
    for j in range(kb):
        for i in range(cb):
            insns.append(Gemm(pop_prev=not barrier and i == j == 0, loadw=True, acc=True,
                              push_next=not barrier and not quantized and i == cb - 1,
                              a_base=i * hp * wp, w_base=w_base + (i * kb + j) * taps * L, c_base=j * m,
                              mx=wo, my=ho, l0=kw, l1=kh, a_sx=stride, a_sy=stride * wp, a_s0=1, a_s1=wp))
        if quantized:
            insns.append(Vec(op=VecOp.REQUANT, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_buf=Buffer.CONST,
                             src1_mode=Src1Mode.FIXED, dst=q_base + j * m, src0=j * m, src1=j, mx=m, sx=1,
                             push_next=not barrier))
    if barrier:
        insns.append(Barrier())
    for j in range(kb):
        src = (Buffer.SPAD, Elem.B8, q_base + j * m) if quantized else (Buffer.ACC, Elem.B32, j * m)
        insns.append(Store(pop_prev=not barrier, buf=src[0], elem=src[1], sram=src[2], y_size=ho, x_size=wo,
                           dram_addr=y_io.addr + j * m * L * out_bytes, dram_pitch=wo * L * out_bytes))
    insns.append(Finish())
    nodes = {1: "x_load", 2: "w_load", 3: "bias_load"} if cb == kb == 1 and not quantized else {}
    debug = {i: DebugEntry(nodes.get(i, "conv"), "") for i in range(len(insns))}
    return dram.program(insns, [x_io, y_io], debug), {"x": x}


def pipelined_program(tiles: int) -> Program:
    """LD -> EX -> ST over ``tiles`` 16-row tiles, double-buffered in SPAD and ACC, the usual token
    pattern: LD waits for EX to free a SPAD half (from the third tile on), EX waits for ST to free
    an ACC half (from the third tile on), nobody pushes a token that is never popped."""
    insns: list = [Load(buf=Buffer.SPAD, sram=64, y_size=L, dram_addr=0, dram_pitch=L)]  # weights
    for j in range(tiles):
        half = (j % 2) * L
        insns.append(Load(buf=Buffer.SPAD, sram=half, y_size=L, dram_addr=256 * (1 + j), dram_pitch=L,
                          pop_next=j >= 2, push_next=True))
        insns.append(Gemm(pop_prev=True, push_prev=j < tiles - 2, pop_next=j >= 2, push_next=True, loadw=True,
                          a_base=half, w_base=64, c_base=half, mx=L, a_sx=1))
        insns.append(Store(pop_prev=True, push_prev=j < tiles - 2, buf=Buffer.ACC, elem=Elem.B32, sram=half,
                           y_size=L, dram_addr=8192 + 1024 * j, dram_pitch=64))
    insns.append(Finish())
    return Program(instructions=insns, dram_size=8192 + 1024 * tiles)


def depthwise_program(x: np.ndarray, w: np.ndarray, bias: np.ndarray, scales: np.ndarray, *, stride: int,
                      pad: int, x_zp: int, y_zp: int) -> tuple[Program, dict]:
    """QLinearConv with group = C (x: 1 x C x H x W int8, C <= L, w: C x 1 x k x k) on the vector unit:
    VEC RMAC over the conv walk with one CONST weight row per tap, onto the bias in ACC, then REQUANT."""
    _, c, h, wd = x.shape
    k = w.shape[2]
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    wp = wd + 2 * pad
    dram = Dram()
    taps = np.zeros((k * k, L), np.int32)
    taps[:, :c] = w[:, 0].reshape(c, k * k).T  # tap row t = (r, s), lane = channel
    b = np.zeros(L, np.int32)
    b[:c] = bias.astype(np.int64) - x_zp * w.astype(np.int64).sum(axis=(1, 2, 3))
    sc = np.zeros(L, np.float32)
    sc[:c] = scales
    w_addr, b_addr, s_addr = dram.const(taps), dram.const(b), dram.const(sc)
    x_io = IOTensor("x", "input", "int8", x.shape, "NCHWc16", dram.alloc(h * wd * L))
    y_io = IOTensor("y", "output", "int8", (1, c, ho, wo), "NCHWc16", dram.alloc(ho * wo * L))
    out_row = (h + 2 * pad) * wp
    insns = [
        SetReg(engine=Engine.LD, reg=Reg.PADVAL, value=x_zp),
        SetReg(engine=Engine.EX, reg=Reg.OUT_ZP, value=y_zp),
        Load(buf=Buffer.SPAD, padsel=True, sram=0, y_size=h, x_size=wd, dram_addr=x_io.addr, dram_pitch=wd * L,
             y_pad0=pad, y_pad1=pad, x_pad0=pad, x_pad1=pad),
        Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=k * k, dram_addr=w_addr, dram_pitch=4 * L),
        Load(buf=Buffer.CONST, elem=Elem.B32, sram=k * k + 2, y_size=1, dram_addr=s_addr),
        Load(buf=Buffer.ACC, elem=Elem.B32, sram=0, y_size=ho * wo, dram_addr=b_addr, dram_pitch=0, push_next=True),
        Vec(pop_prev=True, op=VecOp.RMAC, src1_mode=Src1Mode.TAP, dst_buf=Buffer.ACC, src0_buf=Buffer.SPAD,
            src1_buf=Buffer.CONST, dst=0, src0=0, src1=0, mx=wo, my=ho, l0=k, l1=k, sx=stride, sy=stride * wp,
            s0=1, s1=wp),
        Vec(op=VecOp.REQUANT, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_buf=Buffer.CONST,
            src1_mode=Src1Mode.FIXED, dst=out_row, src0=0, src1=k * k + 2, mx=ho * wo, sx=1, push_next=True),
        Store(pop_prev=True, buf=Buffer.SPAD, sram=out_row, y_size=ho * wo, dram_addr=y_io.addr, dram_pitch=L),
        Finish(),
    ]
    return dram.program(insns, [x_io, y_io]), {"x": x}
