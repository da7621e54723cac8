"""MAC layers: QLinearConv (dense on the array, depthwise on the vector unit) and QGemm/QLinearMatMul (FC).

Tiling (the default valid mapping; the mapper is not consulted yet, see docs/compiler.md): the
weights of a layer stay resident in SPAD; the output is split into tiles of whole output rows, as
many as fit the SPAD (two input halves + weights + two output halves) and the accumulator; every
tile computes all output-channel blocks. Depthwise tiles are (channel block, output rows).

Numerics (ORT's QLinearConv / QGemm): the int32 accumulator is ``sum (x - x_zp) * w + bias``; the
``-x_zp * sum(w)`` term is folded into the bias at compile time (weights are symmetric, w_zp = 0),
and padding loads the input zero point, so the integer result is exact. REQUANT multiplies by the
float32 ``(x_scale * w_scale[c]) / y_scale`` and saturates to the output type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from compiler.isa import Buffer, Elem, Engine, Gemm, GemmType, Load, Reg, Src1Mode, Store, Vec, VecOp
from compiler.lower.blocks import (
    bias_requant,
    const_rows,
    first_write,
    free_at,
    interleaved_consts,
    software_pipeline,
    store_chunks,
)
from compiler.lower.emitter import Act, Emitter, Tile, blocks
from compiler.lower.mapped import lane_factor, padded_channels
from compiler.sim.quant import output_scale
from costmodel.errors import UserError


@dataclass(frozen=True)
class ConvSpec:
    """A quantized conv's parameters, read from the ONNX node."""

    w: np.ndarray  # int8 [Cout, Cin/group, kh, kw]
    bias: np.ndarray  # int32 [Cout]
    w_scale: np.ndarray  # float32 [Cout] (or [1])
    stride: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    dilation: tuple[int, int]
    group: int
    y_scale: float
    y_zp: int


def _quant_setup(em: Emitter, x: Act, y_zp: int) -> None:
    em.setreg(Engine.LD, Reg.PADVAL, x.zero_point)
    em.setreg(Engine.EX, Reg.OUT_ZP, y_zp)
    em.setreg(Engine.EX, Reg.QMIN, 0 if x.dtype == "uint8" else -128)
    em.setreg(Engine.EX, Reg.QMAX, 255 if x.dtype == "uint8" else 127)


def _out_dims(x: Act, spec: ConvSpec) -> tuple[int, int]:
    _, _, h, w = x.shape
    kh, kw = spec.w.shape[2:]
    pt, pl, pb, pr = spec.pads
    ho = (h + pt + pb - spec.dilation[0] * (kh - 1) - 1) // spec.stride[0] + 1
    wo = (w + pl + pr - spec.dilation[1] * (kw - 1) - 1) // spec.stride[1] + 1
    return ho, wo


def _check_conv(node: str, x: Act, spec: ConvSpec, wo: int) -> None:
    kh, kw = spec.w.shape[2:]
    if max(spec.pads) > 7:
        raise UserError(f"node {node} (Conv): padding {spec.pads} exceeds the LOAD pad field (at most 7)")
    if wo > 256 or kh > 32 or kw > 32:
        raise UserError(f"node {node} (Conv): output width {wo} or kernel {kh}x{kw} exceeds the GEMM walk "
                        "(at most 256 columns, 32 taps per axis); column tiling is not implemented")
    if x.dtype != "uint8":
        raise UserError(f"node {node} (Conv): {x.dtype} activations; the compiler lowers uint8 QDQ models "
                        "(requantize with compiler.quantize)")


def _window(r0: int, r: int, spec: ConvSpec, h: int, kh: int) -> tuple[int, int, int, int]:
    """Output rows [r0, r0+r)'s input rows: (first real row, end of the real rows, first and end
    padded coordinate)."""
    p0 = r0 * spec.stride[0]
    p1 = (r0 + r - 1) * spec.stride[0] + spec.dilation[0] * (kh - 1) + 1  # padded coordinates, exclusive
    pt = spec.pads[0]
    return max(p0 - pt, 0), min(p1 - pt, h), p0, p1


def _row_window(node: str, r0: int, r: int, spec: ConvSpec, h: int, kh: int) -> tuple[int, int, int, int]:
    """Input rows of output rows [r0, r0+r): (first real row, real rows, pad before, pad after)."""
    lo, hi, p0, p1 = _window(r0, r, spec, h, kh)
    if hi <= lo:  # (the tilings are chosen so that this does not happen: _sees_input)
        raise UserError(f"node {node} (Conv): output rows {r0}..{r0 + r - 1} of a tile see only padding (the "
                        f"padding is wider than the kernel reaches); such a tile is not lowered")
    pt = spec.pads[0]
    return lo, hi - lo, max(0, pt - p0), max(0, p1 - pt - h)


def _sees_input(r: int, ho: int, spec: ConvSpec, h: int, kh: int) -> bool:
    """Whether every tile of ``r`` output rows reads an input row. Why: with padding wider than the
    kernel reaches (a 1x1 conv with padding 1), a one-row tile at the top or bottom sees only
    padding, which the tile's LOAD cannot express; such tile heights are not chosen."""
    for r0 in range(0, ho, r):
        lo, hi, _, _ = _window(r0, min(r, ho - r0), spec, h, kh)
        if hi <= lo:
            return False
    return True


def _pick_rows(ho: int, wo: int, budget: int, per_row: int, fixed: int, acc_rows: int, ok=lambda r: True) -> int:
    """Most output rows per tile that fit: fixed + per_row(r) <= budget, r*wo <= ACC, r <= 256, ``ok(r)``."""
    for r in range(min(ho, 256, max(1, acc_rows // wo)), 0, -1):
        if fixed + per_row(r) <= budget and ok(r):
            return r
    return 0


def _group_plan(kb: int, fixed: int, wrows_per_block: int, fits) -> tuple[int, int]:
    """(output-channel blocks per weight group, output rows per tile): the largest group whose weights
    (one copy if it is the whole layer, else two: ping-pong between groups) leave room for a tile."""
    for g in range(kb, 0, -1):
        copies = 1 if g == kb else 2
        r = fits(g, fixed + copies * g * wrows_per_block)
        if r:
            return g, r
    return 0, 0


def lower_conv(em: Emitter, node: str, x: Act, spec: ConvSpec, y: Act) -> None:
    """Dense QLinearConv (group 1) as GEMMs over channel blocks; see the module docstring.

    Tiles are (weight group, output rows): a weight group is a run of output-channel blocks whose
    weights sit in SPAD (two group buffers, alternating, when the layer needs several groups)."""
    L, tg = em.L, em.target
    _, cin, h, w = x.shape
    cout, _, kh, kw = spec.w.shape
    ho, wo = _out_dims(x, spec)
    _check_conv(node, x, spec, wo)
    cb, kb, taps = blocks(cin, L), blocks(cout, L), kh * kw
    # a strided 1x1 conv reads every s-th row and column: load only those (rows s * w * L bytes apart,
    # x_gap s - 1: the same DMA cycles per vector) and walk the compact tile at stride 1
    sub = kh == kw == 1 and max(spec.pads) == 0 and spec.stride != (1, 1) and spec.stride[1] <= 64
    walk, hl, wl = (dataclasses.replace(spec, stride=(1, 1)), ho, wo) if sub else (spec, h, w)
    pitch, gap = spec.stride[0] * w * L if sub else w * L, spec.stride[1] - 1 if sub else 0
    wp = wl + spec.pads[1] + spec.pads[3]
    sh, sw = walk.stride
    dh, dw = spec.dilation
    if sw > 31 or dw * wp > 4095 or sh * wp > 4095:
        raise UserError(f"node {node} (Conv): stride/dilation {spec.stride}/{spec.dilation} with padded width {wp} "
                        "exceed the GEMM step fields")
    per_block = cb * taps * L  # SPAD rows of one output block's weight tiles

    def rin(r: int) -> int:
        return (r - 1) * sh + dh * (kh - 1) + 1

    def fits(g: int, fixed: int) -> int:
        if 4 * g > tg.const_rows:
            return 0
        return _pick_rows(ho, wo, tg.spad_rows, lambda r: 2 * cb * rin(r) * wp + 2 * g * r * wo, fixed,
                          tg.acc_rows // 2, lambda r: _sees_input(r, ho, walk, hl, kh))

    def fits_tile(r: int, g: int) -> bool:  # the template's buffers for r output rows, g output blocks
        need = 2 * cb * rin(r) * wp + (1 if g == kb else 2) * g * per_block + 2 * g * r * wo
        return (need <= tg.spad_rows and 4 * g <= tg.const_rows and 2 * r * wo <= tg.acc_rows and r <= 256
                and _sees_input(r, ho, walk, hl, kh))

    g, rows = _group_plan(kb, 0, per_block, fits)
    if em.planner is not None:
        from costmodel.problem import conv2d

        prob = conv2d(padded_channels(cin, L), padded_channels(cout, L), h, w, (kh, kw), spec.stride, spec.pads,
                      spec.dilation)
        fx = lane_factor(padded_channels(cout, L), L)
        plan = em.planner.plan(prob, lambda r, gs: fits_tile(r, min(kb, blocks(gs * fx, L))))
        if plan is not None:
            g, rows = min(kb, blocks(plan.group * fx, L)), plan.rows
            em.record_plan(plan)
    if g == 0:
        raise UserError(f"node {node} (Conv {cin}->{cout}, {kh}x{kw}): the weights of one output-channel block "
                        f"({per_block} SPAD rows, twice) plus one output row do not fit SPAD ({tg.spad_rows} rows); "
                        "input-channel splitting is not implemented")
    # constants: weight tiles [kb, cb, taps, cin lane, cout lane]; per block: bias (x_zp folded), scale
    wpad = np.zeros((kb * L, cb * L, kh, kw), np.int64)
    wpad[:cout, :cin] = spec.w
    w_addr = em.const(wpad.reshape(kb, L, cb, L, taps).transpose(0, 2, 4, 3, 1).astype(np.int8), "weights")
    bias = spec.bias.astype(np.int64) - x.zero_point * spec.w.astype(np.int64).sum(axis=(1, 2, 3))
    c_addr = interleaved_consts(em, bias, output_scale(x.scale, np.broadcast_to(spec.w_scale, (cout,)),
                                                        spec.y_scale), kb)
    in_half = cb * rin(rows) * wp
    w_base = 2 * in_half
    w_copy = g * per_block
    out_base = w_base + (1 if g == kb else 2) * w_copy
    out_half = g * rows * wo
    _quant_setup(em, x, spec.y_zp)
    plane_in, plane_out = h * w * L, ho * wo * L
    tiles_out, t, blk = [], 0, 0
    for gi, j0 in enumerate(range(0, kb, g)):
        gn = min(g, kb - j0)
        wh = w_base + (gi % 2) * w_copy
        for r0 in range(0, ho, rows):
            r = min(rows, ho - r0)
            # one row tile: every weight group reads the same input rows, loaded once (as the mapping's
            # K loop at DRAM, which does not index I, keeps the scratchpad's input tile)
            once = rows >= ho
            a0, o0 = (0 if once else (t % 2) * in_half), out_base + (t % 2) * out_half
            lo, real, ypad0, ypad1 = _row_window(node, r0, r, walk, hl, kh)
            tile = Tile(f"cout blocks {j0}-{j0 + gn - 1} rows {r0}-{r0 + r - 1}")
            if r0 == 0:  # a new weight group: its weights (the tokens order the reuse)
                tile.ld += em.load_rows(Buffer.SPAD, wh, gn * per_block, w_addr + j0 * per_block * L)
            ch, loads = const_rows(em, c_addr, j0, gn, g, kb, gi % 2, t == 0, r0 == 0)
            tile.ld += loads
            # unpadded rows that are contiguous in DRAM (or one row): all input blocks as one box, rows
            # plane_in apart, so the tile pays one DMA setup instead of cb
            one_box = (cb > 1 and not (ypad0 or ypad1 or spec.pads[1] or spec.pads[3]) and real * wl <= 4096
                       and real * wl == rin(rows) * wp and (real == 1 or pitch == wl * L))
            for i in range(0 if once and t > 0 else 1 if one_box else cb):
                tile.ld.append(Load(buf=Buffer.SPAD, padsel=True, sram=a0 + i * rin(rows) * wp,
                                    y_size=cb if one_box else real, x_size=real * wl if one_box else wl, x_gap=gap,
                                    dram_addr=x.addr + i * plane_in + lo * pitch,
                                    dram_pitch=plane_in if one_box else pitch,
                                    y_pad0=ypad0, y_pad1=ypad1, x_pad0=spec.pads[1], x_pad1=spec.pads[3]))
            gemms, posts = [], []
            for jj in range(gn):
                acc0 = (blk % 2) * (tg.acc_rows // 2)
                blk += 1
                gemms.append([Gemm(loadw=True, acc=i > 0, dtype=GemmType.U8, a_base=a0 + i * rin(rows) * wp,
                                   w_base=wh + (jj * cb + i) * taps * L, c_base=acc0, mx=wo, my=r, l0=kw, l1=kh,
                                   a_sx=sw, a_sy=sh * wp, a_s0=dw, a_s1=dh * wp) for i in range(cb)])
                posts.append(bias_requant(ch + 2 * jj, ch + 2 * jj + 1, r, wo, o0 + jj * r * wo, acc0))
                tile.st.append(Store(buf=Buffer.SPAD, sram=o0 + jj * r * wo, y_size=r, x_size=wo,
                                     dram_addr=y.addr + (j0 + jj) * plane_out + r0 * wo * L, dram_pitch=wo * L))
            tile.ex += software_pipeline(gemms, posts)
            tile.ex_marks, tile.st_marks = store_chunks(tile.ex, posts)
            tile.carry, tile.lead, tile.free_at = len(posts[-1]), len(gemms[0]), free_at(em, tile.ex, kb)
            tile.out_first = first_write(tile.ex, posts)
            tiles_out.append(tile)
            t += 1
    em.pipeline(tiles_out)


def lower_depthwise(em: Emitter, node: str, x: Act, spec: ConvSpec, y: Act) -> None:
    """QLinearConv with group = Cin = Cout on the vector unit: RMAC over the taps, channels in lanes."""
    L, tg = em.L, em.target
    _, c, h, w = x.shape
    kh, kw = spec.w.shape[2:]
    ho, wo = _out_dims(x, spec)
    _check_conv(node, x, spec, wo)
    if kh > 16 or kw > 16 or spec.stride[1] > 15 or spec.dilation[1] > 63:
        raise UserError(f"node {node} (depthwise Conv): kernel {kh}x{kw}, stride {spec.stride} or dilation "
                        f"{spec.dilation} exceed the VEC walk (16 taps per axis, sx <= 15, s0 <= 63)")
    cb, taps = blocks(c, L), kh * kw
    wp = w + spec.pads[1] + spec.pads[3]
    sh, sw = spec.stride
    dh, dw = spec.dilation
    crows = taps + 2  # per block: tap weights, bias, scale (int32 / fp32 bits)
    if 2 * crows > tg.const_rows:
        raise UserError(f"node {node}: {taps} depthwise taps do not fit the CONST buffer")

    def rin(r: int) -> int:
        return (r - 1) * sh + dh * (kh - 1) + 1

    rows = _pick_rows(ho, wo, tg.spad_rows, lambda r: 2 * rin(r) * wp + 2 * r * wo, 0, tg.acc_rows,
                      lambda r: _sees_input(r, ho, spec, h, kh))
    if rows == 0 or rin(rows) * wp > 65535:
        raise UserError(f"node {node} (depthwise Conv): one output row does not fit SPAD")
    wt = np.zeros((cb * L, taps), np.int64)
    wt[:c] = spec.w[:, 0].reshape(c, taps)
    bias = spec.bias.astype(np.int64) - x.zero_point * spec.w.astype(np.int64).sum(axis=(1, 2, 3))
    scales = output_scale(x.scale, np.broadcast_to(spec.w_scale, (c,)), spec.y_scale)
    per_block = []
    for i in range(cb):
        lanes = slice(i * L, min(c, (i + 1) * L))
        rows_i = np.zeros((crows, L), np.int32)
        rows_i[:taps] = wt[i * L:(i + 1) * L].T.astype(np.int32)
        rows_i[taps, : lanes.stop - lanes.start] = bias[lanes].astype(np.int32)
        rows_i[taps + 1, : lanes.stop - lanes.start] = scales[lanes].view(np.int32)
        per_block.append(rows_i)
    c_addr = em.const(np.stack(per_block))
    _quant_setup(em, x, spec.y_zp)
    in_half, out_base = rin(rows) * wp, 2 * rin(rows) * wp
    out_half, plane_in, plane_out = rows * wo, h * w * L, ho * wo * L
    tiles_out, t = [], 0
    for i in range(cb):
        for r0 in range(0, ho, rows):
            r = min(rows, ho - r0)
            half = t % 2
            a0, o0, k0 = half * in_half, out_base + half * out_half, half * crows
            lo, real, ypad0, ypad1 = _row_window(node, r0, r, spec, h, kh)
            walk = {"mx": wo, "my": r, "sx": 1, "sy": wo}
            tile = Tile(f"block {i} rows {r0}-{r0 + r - 1}")
            tile.ld = [Load(buf=Buffer.SPAD, padsel=True, sram=a0, y_size=real, x_size=w,
                            dram_addr=x.addr + i * plane_in + lo * w * L, dram_pitch=w * L, y_pad0=ypad0,
                            y_pad1=ypad1, x_pad0=spec.pads[1], x_pad1=spec.pads[3]),
                       Load(buf=Buffer.CONST, elem=Elem.B32, sram=k0, y_size=crows,
                            dram_addr=c_addr + i * crows * 4 * L, dram_pitch=4 * L)]
            tile.ex = [Vec(op=VecOp.RMAC, init=True, u8=True, src1_mode=Src1Mode.TAP, dst_buf=Buffer.ACC,
                           src0_buf=Buffer.SPAD, src1_buf=Buffer.CONST, dst=0, src0=a0, src1=k0, mx=wo, my=r,
                           l0=kw, l1=kh, sx=sw, sy=sh * wp, s0=dw, s1=dh * wp),
                       Vec(op=VecOp.ADD, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC, src1_buf=Buffer.CONST,
                           src1_mode=Src1Mode.FIXED, dst=0, src0=0, src1=k0 + taps, **walk),
                       Vec(op=VecOp.REQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC,
                           src1_buf=Buffer.CONST, src1_mode=Src1Mode.FIXED, dst=o0, src0=0, src1=k0 + taps + 1,
                           **walk)]
            tile.st = [Store(buf=Buffer.SPAD, sram=o0, y_size=r, x_size=wo,
                             dram_addr=y.addr + i * plane_out + r0 * wo * L, dram_pitch=wo * L)]
            tiles_out.append(tile)
            t += 1
    em.pipeline(tiles_out)


def lower_fc(em: Emitter, node: str, x: Act, w_kn: np.ndarray, bias: np.ndarray, w_scale: np.ndarray,
             y_scale: float, y_zp: int, y: Act) -> None:
    """Y[M, N] = X[M, K] @ W[K, N] (+ bias), X in (M, K/L, L): K blocks are the GEMM taps, M the walk.

    X stays resident; tiles are groups of output blocks whose weights fit (two alternating copies)."""
    L, tg = em.L, em.target
    m, k = x.shape
    n = w_kn.shape[1]
    kb, nb = blocks(k, L), blocks(n, L)
    if x.dtype != "uint8":
        raise UserError(f"node {node}: {x.dtype} activations; the compiler lowers uint8 QDQ models")
    l0 = min(kb, 32)
    while kb % l0:
        l0 -= 1
    if m > 256 or kb // l0 > 32:
        raise UserError(f"node {node} (Gemm/MatMul {m}x{k}x{n}): more than 256 rows, or {kb} K blocks that do not "
                        "factor into the GEMM's 32 x 32 taps")
    a_rows, per_block = m * kb, kb * L

    def fits(g: int, fixed: int) -> int:
        return int(fixed + a_rows + 2 * g * m <= tg.spad_rows and 4 * g <= tg.const_rows and 2 * m <= tg.acc_rows)

    g, _ = _group_plan(nb, 0, per_block, fits)
    if em.planner is not None:
        from costmodel.problem import fully_connected

        fx = lane_factor(padded_channels(n, L), L)
        plan = em.planner.plan(fully_connected(padded_channels(k, L), padded_channels(n, L), rows=m),
                               lambda r, gs: bool(fits(min(nb, blocks(gs * fx, L)), (2 if blocks(gs * fx, L) < nb else 1)
                                                       * min(nb, blocks(gs * fx, L)) * per_block)))
        if plan is not None:
            g = min(nb, blocks(plan.group * fx, L))
            em.record_plan(plan)
    if g == 0:
        raise UserError(f"node {node} (Gemm/MatMul {m}x{k}x{n}): one output block's weights ({per_block} SPAD rows, "
                        f"twice) do not fit SPAD ({tg.spad_rows} rows); K splitting is not implemented")
    wpad = np.zeros((kb * L, nb * L), np.int64)
    wpad[:k, :n] = w_kn
    w_addr = em.const(wpad.reshape(kb, L, nb, L).transpose(2, 0, 1, 3).astype(np.int8), "weights")
    full_bias = bias.astype(np.int64) - x.zero_point * w_kn.astype(np.int64).sum(axis=0)
    c_addr = interleaved_consts(em, full_bias, output_scale(x.scale, np.broadcast_to(w_scale, (n,)), y_scale), nb)
    _quant_setup(em, x, y_zp)
    w_base, w_copy = a_rows, g * per_block
    o_base = w_base + (1 if g == nb else 2) * w_copy
    for insn in em.load_rows(Buffer.SPAD, 0, a_rows, x.addr):  # X: before tile 0's "loaded" token
        em.emit(insn)
    tiles = []
    for t, j0 in enumerate(range(0, nb, g)):
        gn = min(g, nb - j0)
        wh, o0 = w_base + (t % 2) * w_copy, o_base + (t % 2) * g * m
        tile = Tile(f"M {m} K {k} N blocks {j0}-{j0 + gn - 1}")
        tile.ld = em.load_rows(Buffer.SPAD, wh, gn * per_block, w_addr + j0 * per_block * L)
        ch, loads = const_rows(em, c_addr, j0, gn, g, nb, t % 2, t == 0, True)
        tile.ld += loads
        gemms, posts = [], []
        for jj in range(gn):
            acc0 = ((j0 + jj) % 2) * (tg.acc_rows // 2)
            gemms.append([Gemm(loadw=True, dtype=GemmType.U8, a_base=0, w_base=wh + jj * per_block, c_base=acc0,
                               mx=1, my=m, l0=l0, l1=kb // l0, a_sy=kb, a_s0=1, a_s1=l0)])
            posts.append(bias_requant(ch + 2 * jj, ch + 2 * jj + 1, 1, m, o0 + jj * m, acc0))
            tile.st.append(Store(buf=Buffer.SPAD, sram=o0 + jj * m, y_size=m, dram_addr=y.addr + (j0 + jj) * L,
                                 dram_pitch=nb * L))
        tile.ex += software_pipeline(gemms, posts)
        tile.carry, tile.lead, tile.free_at = len(posts[-1]), len(gemms[0]), free_at(em, tile.ex, nb)
        tile.out_first = first_write(tile.ex, posts)
        tiles.append(tile)
    em.pipeline(tiles)
