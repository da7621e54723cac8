"""QLinearMatMul with a constant left operand, ``Y = A @ X`` (A constant M x K, X an activation K x N).

Why it needs its own lowering: the GEMM's output lanes come from the weight tile, so the
activation X must be the weight operand (rows k, lanes j: exactly X's blocked layout ``(K, N/L,
L)``, one lane block j at a time) and the constant A the walked operand (rows i, lanes k). Weight
tiles are int8 but X is uint8, so X is first mapped to ``X' = X - 128`` (VEC LUT reading int8
lanes: the table is the int8 -> uint8-minus-128 reinterpretation). The quantizer gives A as
symmetric uint8 (compiler.quantize: zero point 64 in its 7-bit weight range, 128 at 8 bits), so
``A' = A - a_zp`` is int8 and exact. Then, in int32 (what onnxruntime's QLinearMatMul computes with
MLAS before requantizing)::

    sum_k (A - a_zp)(X - x_zp) = sum_k A' X' + (128 - x_zp) * sum_k A'[i, k]

The second term is a per-row constant, loaded into ACC before the GEMM accumulates; REQUANT then
uses onnxruntime's float32 ``(a_scale * b_scale) / y_scale``. Tiles are the lane blocks of X (and
of Y); A' stays resident in SPAD.
"""

from __future__ import annotations

import numpy as np

from compiler.isa import Buffer, Elem, Engine, Gemm, GemmType, Load, Reg, Src1Mode, Store, Vec, VecOp
from compiler.lower.emitter import Act, Emitter, Tile, blocks, f32_bits
from compiler.lower.vector import _flat_walks
from compiler.sim.quant import output_scale
from costmodel.errors import UserError

_WALK = 256


def lower_const_matmul(em: Emitter, node: str, a: np.ndarray, a_zp: int, a_scale: float, x: Act, y: Act) -> None:
    L, tg = em.L, em.target
    m, k = a.shape
    n = x.shape[1]
    kb, nb = blocks(k, L), blocks(n, L)
    a_int = a.astype(np.int64) - a_zp
    if a_int.min() < -128 or a_int.max() > 127:
        raise UserError(f"node {node} (MatMul): the constant operand minus its zero point {a_zp} leaves int8; "
                        "quantize it as symmetric uint8 (compiler.quantize does)")
    if x.dtype != "uint8" or kb > 31 or k > 4096 or m > 4096:
        raise UserError(f"node {node} (MatMul {m}x{k}x{n}): K > 496 or a non-uint8 activation is not lowered")
    a_rows, half = m * kb, 2 * kb * L + m
    if a_rows + 2 * half > tg.spad_rows or 2 * m > tg.acc_rows:
        raise UserError(f"node {node} (MatMul {m}x{k}x{n}): the constant and two tiles do not fit SPAD/ACC")
    apad = np.zeros((m, kb * L), np.int64)
    apad[:, :k] = a_int
    a_addr = em.const(apad.reshape(m, kb, L).astype(np.int8), "weights")
    bias = (128 - x.zero_point) * a_int.sum(axis=1)
    b_addr = em.const(np.repeat(bias[:, None], L, axis=1).astype(np.int32), "bias")
    table = np.arange(256) - 128  # int8 lane value v (index v + 128) -> the uint8 code (v mod 256) - 128
    table = np.where(table < 0, table + 128, table - 128)
    t_rows = -(-256 // L)
    t_addr = em.const(table.astype(np.int32).reshape(t_rows, L), "lut")
    em.emit(Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=t_rows, dram_addr=t_addr, dram_pitch=4 * L))
    em.setreg(Engine.EX, Reg.LUT_MIN, -128)
    em.setreg(Engine.EX, Reg.S1, f32_bits(output_scale(a_scale, x.scale, y.scale)))
    em.setreg(Engine.EX, Reg.OUT_ZP, y.zero_point)
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)
    for insn in em.load_rows(Buffer.SPAD, 0, a_rows, a_addr):  # A': before tile 0's "loaded" token
        em.emit(insn)
    tiles = []
    for j in range(nb):
        base, acc = a_rows + (j % 2) * half, (j % 2) * m
        xr, xq, out = base, base + kb * L, base + 2 * kb * L
        tile = Tile(f"N block {j}")
        tile.ld = [Load(buf=Buffer.SPAD, sram=xr, y_size=k, dram_addr=x.addr + j * L, dram_pitch=nb * L),
                   Load(buf=Buffer.ACC, elem=Elem.B32, sram=acc, y_size=m, dram_addr=b_addr, dram_pitch=4 * L)]
        tile.ex = [Vec(op=VecOp.LUT, src1_mode=Src1Mode.FIXED, src1_buf=Buffer.CONST, dst=xq + o, src0=xr + o, src1=0,
                       mx=mx, my=my, sx=1, sy=mx) for o, mx, my in _flat_walks(k)]
        for r0 in range(0, m, _WALK):
            mm = min(_WALK, m - r0)
            tile.ex.append(Gemm(loadw=True, acc=True, dtype=GemmType.S8, a_base=r0 * kb, w_base=xq, c_base=acc + r0,
                                mx=mm, my=1, l0=kb, l1=1, a_sx=kb, a_s0=1))
        tile.ex += [Vec(op=VecOp.REQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                        dst=out + o, src0=acc + o, src1=int(Reg.S1), mx=mx, my=my, sx=1, sy=mx)
                    for o, mx, my in _flat_walks(m)]
        tile.st = [Store(buf=Buffer.SPAD, sram=out, y_size=m, dram_addr=y.addr + j * L, dram_pitch=nb * L)]
        tiles.append(tile)
    em.pipeline(tiles)
