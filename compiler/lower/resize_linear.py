"""Bilinear Resize that onnxruntime runs in float (DequantizeLinear -> Resize(linear) -> QuantizeLinear).

onnxruntime does not fuse a linear Resize into an integer kernel, so the reference is its float
path, reproduced step for step (onnxruntime 1.32, ``upsample.h`` / ``upsample.cc``, NCHW float):

* per axis (``SetupUpsampleBilinear``): the source coordinate in float32 (``align_corners``:
  ``x * (in - 1) / (out - 1)``; ``asymmetric``: ``x / scale``; ``half_pixel``: ``(x + 0.5) / scale - 0.5``;
  ``pytorch_half_pixel``: the same, 0 for an output of length 1), clamped to ``[0, in - 1]``;
  ``x1 = int(x)``, ``x2 = min(x1 + 1, in - 1)``, ``d1 = |x - x1|``, ``d2 = |x - x2|`` (both 0.5 when x1 = x2);
* per output pixel: ``((c11 * X11 + c21 * X21) + c12 * X12) + c22 * X22`` with ``c = dx * dy`` in float32
  and X the dequantized inputs ``f32(x - zp) * scale`` (MLAS DequantizeLinear);
* QuantizeLinear (MLAS): ``/ y_scale``, clamp, round half to even, ``+ y_zp``.

On the accelerator: VEC RBLEND does the per-pixel float32 sum for a run of output columns that read
the same source columns (``sx = 0``), with the x weights per output column in CONST rows (lanes 0, 1
= dx2, dx1) and the row's dy2, dy1 in registers BL_WY0/BL_WY1 (SETREG per output row); FREQUANT
quantizes. Tiles are (channel block, output rows); one RBLEND per (row, run).
"""

from __future__ import annotations

import numpy as np

from compiler.isa import Buffer, Elem, Engine, Load, Reg, SetReg, Src1Mode, Vec, VecOp
from compiler.lower.emitter import Act, Emitter, Tile, blocks, f32_bits
from compiler.lower.vector import _flat_walks, _store_rows
from costmodel.errors import UserError

MODES = ("align_corners", "asymmetric", "half_pixel", "pytorch_half_pixel")


def axis_params(n_in: int, n_out: int, scale: float, mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i1, i2, d1, d2) per output index as onnxruntime's SetupUpsampleBilinear computes them (float32)."""
    f = np.float32
    x = np.arange(n_out, dtype=np.float32)
    s = f(scale)
    if mode == "align_corners":
        orig = np.zeros(n_out, np.float32) if n_out == 1 else (x * f(n_in - 1)).astype(np.float32) / f(n_out - 1)
    elif mode == "asymmetric":
        orig = x / s
    elif mode == "pytorch_half_pixel" and n_out == 1:
        orig = np.zeros(1, np.float32)
    else:
        orig = ((x + f(0.5)) / s).astype(np.float32) - f(0.5)
    orig = np.clip(orig.astype(np.float32), f(0), f(n_in - 1))
    i1 = np.minimum(orig.astype(np.int64), n_in - 1)
    i2 = np.minimum(i1 + 1, n_in - 1)
    d1 = np.abs(orig - i1.astype(np.float32)).astype(np.float32)
    d2 = np.abs(orig - i2.astype(np.float32)).astype(np.float32)
    same = i1 == i2
    d1[same], d2[same] = f(0.5), f(0.5)
    return i1, i2, d1, d2


def lower_resize_bilinear(em: Emitter, node: str, x: Act, y: Act, scales: tuple[float, float], mode: str) -> None:
    L, tg = em.L, em.target
    _, c, h, w = x.shape
    ho, wo = y.shape[2:]
    if mode not in MODES:
        raise UserError(f"node {node} (Resize linear): coordinate_transformation_mode {mode!r}; lowered: {MODES}")
    if wo > tg.const_rows or w > 2047 or wo > 256:
        raise UserError(f"node {node} (Resize linear): output width {wo} exceeds the CONST rows of x weights "
                        f"({tg.const_rows}) or the 256-element walk")
    y1, y2, dy1, dy2 = axis_params(h, ho, scales[0], mode)
    x1, x2, dx1, dx2 = axis_params(w, wo, scales[1], mode)
    weights = np.zeros((wo, L), np.float32)
    weights[:, 0], weights[:, 1] = dx2, dx1
    w_addr = em.const(weights.view(np.int32), "scales")
    runs = []  # (first output column, length, x1, x2)
    for xo in range(wo):
        if runs and runs[-1][2] == x1[xo] and runs[-1][3] == x2[xo]:
            runs[-1][1] += 1
        else:
            runs.append([xo, 1, int(x1[xo]), int(x2[xo])])
    rows = max(1, min(ho, tg.acc_rows // (2 * wo)))

    def span(r0: int, r: int) -> tuple[int, int]:
        return int(y1[r0]), int(y2[r0 + r - 1]) + 1

    while rows > 1 and 2 * ((span(0, rows)[1] - span(0, rows)[0]) * w + rows * wo) > tg.spad_rows:
        rows -= 1
    in_rows = max(hi - lo for lo, hi in (span(r0, min(rows, ho - r0)) for r0 in range(0, ho, rows)))
    in_half, out_half = in_rows * w, rows * wo
    if 2 * (in_half + out_half) > tg.spad_rows:
        raise UserError(f"node {node} (Resize linear): one output row and its source rows do not fit SPAD")
    em.emit(Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=wo, dram_addr=w_addr, dram_pitch=4 * L))
    em.setreg(Engine.EX, Reg.DQ_ZP, x.zero_point)
    em.setreg(Engine.EX, Reg.DQ_SCALE, f32_bits(x.scale))
    em.setreg(Engine.EX, Reg.S1, f32_bits(y.scale))
    em.setreg(Engine.EX, Reg.OUT_ZP, y.zero_point)
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)
    tiles, t = [], 0
    for i in range(blocks(c, L)):
        for r0 in range(0, ho, rows):
            r = min(rows, ho - r0)
            lo, hi = span(r0, r)
            a0, o0, acc = (t % 2) * in_half, 2 * in_half + (t % 2) * out_half, (t % 2) * out_half
            tile = Tile(f"block {i} rows {r0}-{r0 + r - 1}",
                        ld=em.load_rows(Buffer.SPAD, a0, (hi - lo) * w, x.addr + (i * h + lo) * w * L))
            for yo in range(r0, r0 + r):
                tile.ex += [SetReg(engine=Engine.EX, reg=Reg.BL_WY0, value=f32_bits(dy2[yo])),
                            SetReg(engine=Engine.EX, reg=Reg.BL_WY1, value=f32_bits(dy1[yo]))]
                src = a0 + (int(y1[yo]) - lo) * w
                for xs, n, c1, c2 in runs:
                    tile.ex.append(Vec(op=VecOp.RBLEND, init=True, u8=True, dst_buf=Buffer.ACC, src1_buf=Buffer.CONST,
                                       src1_mode=Src1Mode.ROW, dst=acc + (yo - r0) * wo + xs, src0=src + c1, src1=xs,
                                       mx=n, sx=0, l0=2, l1=2, s0=c2 - c1, s1=(int(y2[yo]) - int(y1[yo])) * w))
            tile.ex += [Vec(op=VecOp.FREQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                            dst=o0 + o, src0=acc + o, src1=int(Reg.S1), mx=mx, my=my, sx=1, sy=mx)
                        for o, mx, my in _flat_walks(r * wo)]
            tile.st = _store_rows(em, o0, r * wo, y.addr + (i * ho + r0) * wo * L)
            tiles.append(tile)
            t += 1
    em.pipeline(tiles)
